"""The extraction cache's fingerprint covers every module the extractors run, so an
edit to any of them empties the cache instead of serving extracts it would not make."""

from __future__ import annotations

import ast
from pathlib import Path

import cairn.codegraph.cache as cache_module

PACKAGE = Path(cache_module.__file__).resolve().parent
PREFIX = "cairn.codegraph."


def _imported_siblings(name: str) -> set[str]:
    """The ``cairn.codegraph`` modules ``name`` imports (read from its source)."""
    tree = ast.parse((PACKAGE / f"{name}.py").read_text("utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(PREFIX):
            found.add(node.module[len(PREFIX) :].split(".")[0])  # type: ignore[index]
    return found


def test_every_module_an_extractor_imports_is_fingerprinted() -> None:
    covered = set(cache_module._EXTRACTOR_MODULES)
    # The adapters and everything they reach inside the package, transitively.
    pending = ["python", "treesitter", "markdown", "tsconfig", "workspaces", "recover", "scan"]
    reached: set[str] = set()
    while pending:
        name = pending.pop()
        if name in reached:
            continue
        reached.add(name)
        pending.extend(_imported_siblings(name))
    assert reached <= covered, f"not fingerprinted: {sorted(reached - covered)}"
