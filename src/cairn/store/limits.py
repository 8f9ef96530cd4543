"""Named limits of the store and the checks that enforce them (graph-search spec §1, §2).

Every bound the store enforces is a constant here, so logic never carries a bare number.
The checks raise ``ValidationError`` (malformed or out of range) or
``BudgetExceededError`` (too much of something), always with the limit in ``details``.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from typing import Any

from cairn.errors import BudgetExceededError, ValidationError

__all__ = [
    "DATABASE_FILE_MODE",
    "DEFAULT_DATABASE_NAME",
    "EMBED_BATCH_SIZE",
    "LOAD_BATCH_SIZE",
    "LOOKUP_CHUNK",
    "MAX_API_KEYS_PER_PRINCIPAL",
    "MAX_COMMAND_BYTES",
    "MAX_DOCUMENT_BYTES",
    "MAX_DOCUMENT_DEPTH",
    "MAX_FIELD_POLICIES",
    "MAX_GRANTS_PER_PRINCIPAL",
    "MAX_IDENTIFIER_BYTES",
    "MAX_LOAD_FACTS",
    "MAX_LOAD_FIELD_CHARS",
    "MAX_LOAD_NODES",
    "MAX_LOAD_OCCURRENCES",
    "MAX_MUTATIONS",
    "MAX_OCCURRENCES_PER_FACT",
    "MAX_PATCH_OPERATIONS",
    "MAX_PROJECTS_PER_PRINCIPAL",
    "MAX_PROVEN_KEYS",
    "MAX_REPORTED_DAMAGE",
    "MAX_SNIPPET_CHARS",
    "MAX_TEXT_FIELDS",
    "MAX_VECTOR_DIMENSION",
    "MAX_VECTOR_FIELDS",
    "MAX_VECTOR_VALUE",
    "MIN_VECTOR_DIMENSION",
    "PAGE_SIZE_BYTES",
    "PBKDF2_ITERATIONS",
    "READER_MMAP_BYTES",
    "READER_POOL_SIZE",
    "SQLITE_BUSY_TIMEOUT_MS",
    "SQLITE_PARAMETER_BATCH",
    "TRUTH_MEMO_SIZE",
    "WORD_CACHE_SIZE",
    "check_depth",
    "check_identifier",
    "check_json_pointer",
    "check_size",
    "json_depth",
]

MAX_MUTATIONS = 256
"""Most mutations one command may carry."""

MAX_COMMAND_BYTES = 8 * 1024 * 1024
"""Largest canonical command (8 MiB); exactly this many bytes pass."""

MAX_DOCUMENT_BYTES = 1024 * 1024
"""Largest canonical document body (1 MiB); exactly this many bytes pass."""

MAX_DOCUMENT_DEPTH = 32
"""Deepest container nesting of a document body; the body object itself is depth 1."""

MAX_IDENTIFIER_BYTES = 256
"""Longest identifier in UTF-8 bytes (database, collection, graph, field, space, ID...)."""

MIN_VECTOR_DIMENSION = 1
"""Smallest vector space dimension."""

MAX_VECTOR_DIMENSION = 4096
"""Largest vector space dimension."""

MAX_TEXT_FIELDS = 64
"""Most text fields one collection declares."""

MAX_VECTOR_FIELDS = 16
"""Most vector fields one collection declares."""

MAX_PATCH_OPERATIONS = 256
"""Most set/remove operations in one patch."""

MAX_OCCURRENCES_PER_FACT = 4096
"""Most evidence occurrences one put_fact may carry."""

MAX_GRANTS_PER_PRINCIPAL = 256
"""Most grants (and field grants) one principal holds."""

MAX_PROJECTS_PER_PRINCIPAL = 256
"""Most projects one principal belongs to."""

MAX_API_KEYS_PER_PRINCIPAL = 16
"""Most API key verifiers one principal holds at once."""

MAX_FIELD_POLICIES = 256
"""Most field policies on one resource."""

MAX_REPORTED_DAMAGE = 20
"""Damaged records ``cairn check`` names per table (the count is always complete)."""

MAX_PROVEN_KEYS = 1024
"""Slow (PBKDF2) keys one open handle remembers as proven (least recently proven leave)."""

PBKDF2_ITERATIONS = 200_000
"""Iterations for PBKDF2-SHA256 verifiers of low-entropy secrets."""

DATABASE_FILE_MODE = 0o600
"""Mode of a new database file (the umask may only narrow it): it holds key verifiers
and every document; SQLite gives its WAL and shared-memory files the same mode."""

SQLITE_BUSY_TIMEOUT_MS = 30_000
"""How long a connection waits for another process's write lock before failing."""

PAGE_SIZE_BYTES = 8192
"""SQLite page size of a new file (an existing file keeps its own).

A row of a ``WITHOUT ROWID`` table keeps about a quarter of a page in place and spills
the rest into overflow pages of its own, mostly empty: with 4 KiB pages every document
body over ~1 KB did, and half of a 300k-document file's ``documents`` pages were unused
space. 8 KiB pages keep bodies up to ~2 KB in place (``bench/store_bench.py --scale``).
"""

READER_MMAP_BYTES = 2**31
"""How much of the file a read connection memory-maps (SQLite ``mmap_size``)."""

READER_POOL_SIZE = 8
"""Idle reader connections kept open for reuse."""

MAX_LOAD_NODES = 1_000_000
"""Most nodes one bulk load of a semantic graph takes (one document each)."""

MAX_LOAD_FACTS = 5_000_000
"""Most facts one bulk load takes."""

MAX_LOAD_OCCURRENCES = 20_000_000
"""Most evidence occurrences one bulk load takes."""

MAX_LOAD_FIELD_CHARS = 16_384
"""Longest string attribute (docstring, signature, ``text``) a loaded document keeps."""

MAX_SNIPPET_CHARS = 2_000
"""Longest code snippet a loaded document keeps."""

LOOKUP_CHUNK = 500
"""Values one statement's ``IN (...)`` list holds when rows are looked up by key."""

LOAD_BATCH_SIZE = 4096
"""Documents or facts a load puts with one batch of statements (bounds the rows held)."""

EMBED_BATCH_SIZE = 256
"""Texts handed to an embedder at once during a load."""

WORD_CACHE_SIZE = 262_144
"""Distinct words whose analyzer tokens are remembered per process (code repeats names)."""

SQLITE_PARAMETER_BATCH = 500
"""Most bound parameters one ``IN (...)`` lookup uses (SQLite's own limit is higher)."""

DEFAULT_DATABASE_NAME = "main"
"""The database name used when a file is created without one."""

DEFAULT_GRAPH = "code"
"""The graph a load writes facts into unless told otherwise: the code graph ``cairn
index`` loads, and the one code questions (callers, impact, routes, the kind prior)
read by default."""

TRUTH_MEMO_SIZE = 64
"""Values read from the truth at one position (collection configurations, field
policies, graph names) a database keeps for the read cuts at that position."""

MAX_VECTOR_VALUE = 3.4028234663852886e38
"""The largest float32 magnitude: vector values are stored as float32."""


def check_identifier(value: object, what: str) -> str:
    """Accept a non-blank identifier of at most 256 UTF-8 bytes without control characters."""
    if not isinstance(value, str):
        raise ValidationError(f"{what} must be a string, got {type(value).__name__}")
    if not value.strip():
        raise ValidationError(f"{what} must not be blank", details={"what": what})
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise ValidationError(f"{what} holds a lone surrogate", details={"what": what}) from exc
    if size > MAX_IDENTIFIER_BYTES:
        raise ValidationError(
            f"{what} is {size} UTF-8 bytes; at most {MAX_IDENTIFIER_BYTES} are allowed",
            details={"what": what, "limit": MAX_IDENTIFIER_BYTES, "size": size},
        )
    # ``isprintable`` is False for every control character (and for a few other
    # characters, which the per-character check then lets through): a C-speed pass
    # for the usual identifier.
    if not value.isprintable() and any(unicodedata.category(char) == "Cc" for char in value):
        raise ValidationError(f"{what} holds a control character", details={"what": what})
    return value


def check_json_pointer(value: object, what: str) -> str:
    """Accept an RFC 6901 JSON pointer that names a field (``/text``, ``/a/b``)."""
    if not isinstance(value, str) or not value.startswith("/"):
        raise ValidationError(f"{what} must be a JSON pointer starting with '/', got {value!r}")
    check_identifier(value, what)
    for token in value[1:].split("/"):
        stripped = token.replace("~0", "").replace("~1", "")
        if "~" in stripped:
            raise ValidationError(f"{what} has a bad '~' escape: {value!r}")
    return value


def json_depth(value: Any) -> int:
    """Container nesting depth of a JSON value: scalars 0, ``{}`` 1, ``{"a": []}`` 2."""
    deepest = 0
    pending: list[tuple[Any, int]] = [(value, 0)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, Mapping):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        depth += 1
        deepest = max(deepest, depth)
        if depth > MAX_DOCUMENT_DEPTH:
            return depth  # deep enough to refuse; stop walking pathological input
        pending.extend((child, depth) for child in children)
    return deepest


def check_depth(value: Any, what: str) -> None:
    """Refuse a JSON value nested deeper than ``MAX_DOCUMENT_DEPTH``."""
    depth = json_depth(value)
    if depth > MAX_DOCUMENT_DEPTH:
        raise ValidationError(
            f"{what} nests deeper than {MAX_DOCUMENT_DEPTH} levels",
            details={"what": what, "limit": MAX_DOCUMENT_DEPTH},
        )


def check_size(size: int, limit: int, what: str) -> None:
    """Refuse ``size`` bytes above ``limit`` with ``BudgetExceededError``."""
    if size > limit:
        raise BudgetExceededError(
            f"{what} is {size} bytes; at most {limit} are allowed",
            details={"what": what, "limit": limit, "size": size},
        )
