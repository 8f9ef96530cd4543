"""Named defaults and limits of the code-graph producer, kept in one place.

Every cap the scanner and the adapters apply is declared here so that a reader can see
what is bounded and by how much, and so tests can refer to the same numbers.
"""

from __future__ import annotations

__all__ = [
    "ADAPTER_VERSION",
    "BINARY_SNIFF_BYTES",
    "DEFAULT_EXCLUDED_DIRS",
    "DEFAULT_OUT_DIRNAME",
    "GITIGNORE_BYTES",
    "GITIGNORE_FILENAME",
    "GRAPH_FILENAME",
    "LANGUAGE_BY_NAME",
    "LANGUAGE_BY_SUFFIX",
    "MANIFEST_FILENAME",
    "MANIFEST_SCHEMA",
    "MAX_DOCSTRING_CHARS",
    "MAX_ERROR_CHARS",
    "MAX_EVAL_SOURCE_CHARS",
    "MAX_FILE_BYTES",
    "MAX_PYTHON_RESOLUTION_DEPTH",
    "MAX_RESOLUTION_DEPTH",
    "MAX_SIGNATURE_CHARS",
    "MINIFIED_SUFFIXES",
    "PYTHON_RESOLUTION_RECURSION_LIMIT",
    "PYTHON_RESOLUTION_STACK_BYTES",
    "SECRET_FILENAMES",
    "SECRET_SUFFIXES",
    "VENDORED_DIRS",
]

ADAPTER_VERSION = "1"
"""Version of every Cairn adapter; outside identity, recorded on occurrences."""

MAX_FILE_BYTES = 1024 * 1024
"""Files larger than this (1 MiB) are skipped as ``skipped:too_large``."""

BINARY_SNIFF_BYTES = 8192
"""How many leading bytes are checked for a NUL byte to call a file binary."""

MAX_DOCSTRING_CHARS = 500
"""Docstrings stored on nodes are cut to this many characters."""

MAX_SIGNATURE_CHARS = 300
"""Signatures stored on nodes are cut to this many characters."""

MAX_EVAL_SOURCE_CHARS = 4096
"""A literal string passed to ``eval``/``exec`` longer than this is not read for calls."""

MAX_RESOLUTION_DEPTH = 64
"""How deep JS/TS/Go name resolution follows re-exports, aliases and returns before
giving up (what was cut there stays cut)."""

MAX_PYTHON_RESOLUTION_DEPTH = 100_000
"""How deep Python name resolution follows re-exports, aliases, returns and parameters
before giving up. A bound this low only to stop a runaway: a chain cut by a lower bound
(64 until 2026-12-05) gave answers that depended on the module a chain entered from, so
on the order modules were resolved in. Every recursive path of the resolver passes a
guarded key, so the keys end a chain, not this bound (at 64 it cut 73,623 chains of the
whole Django sdist; docs/benchmarks.md)."""

PYTHON_RESOLUTION_RECURSION_LIMIT = 1_000_000
"""The interpreter's recursion limit while Python resolution runs: room for
``MAX_PYTHON_RESOLUTION_DEPTH`` levels of several frames each."""

PYTHON_RESOLUTION_STACK_BYTES = 1 << 30
"""The stack of the thread Python resolution runs on (address space: only the pages a
deep chain touches are ever in memory)."""

DEFAULT_OUT_DIRNAME = ".cairn"
GITIGNORE_FILENAME = ".gitignore"
GITIGNORE_BYTES = b"# Written by cairn index: this folder is derived, never commit it.\n*\n"
"""What ``write_index`` puts in a new ``.cairn/.gitignore``, so git ignores the index."""
GRAPH_FILENAME = "graph.cairn"
MANIFEST_FILENAME = "manifest.json"
MANIFEST_SCHEMA = "cairn.index-manifest/2"

DEFAULT_EXCLUDED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".cairn",
        "node_modules",
        "__pycache__",
        ".venv",
        "venv",
        ".env",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".eggs",
        "build",
        "dist",
        "site-packages",
        ".next",
        ".nuxt",
        "coverage",
        "target",
    }
)
"""Directory names never descended into (VCS, virtualenvs, caches, build output)."""

VENDORED_DIRS = frozenset(
    {
        "vendor",
        "_vendor",
        "third_party",
        "third-party",
        "bower_components",
        "jspm_packages",
        "web_modules",
        "Pods",
        "Carthage",
    }
)
"""Directory names of vendored third-party code (Go, PHP and Ruby ``vendor/``, the
``_vendor/`` copies pip and setuptools ship, ``third_party/`` trees, Bower, JSPM,
CocoaPods, Carthage), skipped as ``skipped:vendored`` unless a ``.gitignore`` or
``.cairnignore`` line negates them (``!vendor/``): other people's code is noise in
"where is the code that does W", and a committed Go ``vendor/`` can dwarf the project."""

MINIFIED_SUFFIXES = (".min.js", ".min.mjs", ".min.cjs")
"""Suffixes of minified bundles, skipped as ``skipped:minified`` unless an ignore file
negates them (``!*.min.js``): their one-letter symbols match nothing a person asks."""

SECRET_FILENAMES = frozenset(
    {
        "id_rsa",
        "id_dsa",
        "id_ecdsa",
        "id_ed25519",
        ".netrc",
        ".pgpass",
        ".npmrc",
        ".pypirc",
        "credentials",
        "credentials.json",
        "secrets.json",
        "secrets.yaml",
        "secrets.yml",
    }
)
"""File names treated as secrets: skipped by path alone, never read."""

SECRET_SUFFIXES = (
    ".pem",
    ".key",
    ".p12",
    ".pfx",
    ".crt",
    ".cer",
    ".der",
    ".jks",
    ".keystore",
    ".kdbx",
    ".gpg",
    ".asc",
)
"""File suffixes of keys and certificates: skipped by path alone, never read."""

LANGUAGE_BY_SUFFIX = {
    ".py": "python",
    ".js": "javascript",
    ".jsx": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".ts": "typescript",
    ".tsx": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".go": "go",
    ".md": "markdown",
    ".markdown": "markdown",
}
"""File suffix -> language of the adapter that reads it."""

TSCONFIG_LANGUAGE = "tsconfig"
"""The language of ``tsconfig.json``, ``tsconfig.*.json`` and ``jsconfig.json`` files
(``cairn.codegraph.tsconfig.is_tsconfig_name``)."""

PACKAGE_LANGUAGE = "npm"
"""The language of ``package.json`` files (``cairn.codegraph.workspaces``)."""

LANGUAGE_BY_NAME = {"go.mod": "gomod", "package.json": PACKAGE_LANGUAGE}
"""Exact file name -> language, checked before the suffix (Go module files, npm
packages; project configs go by ``is_tsconfig_name``)."""

MAX_TSCONFIG_EXTENDS = 16
"""How deep a chain of ``extends`` between project configs is followed (a cycle, which
``tsc`` refuses, ends here)."""

MAX_ERROR_CHARS = 300
"""A manifest row's error text is cut to this many characters."""
