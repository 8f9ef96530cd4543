"""Answer filters: keep only nodes of some kinds, under some path globs, or outside test
code, judged by each document's ``kind`` and ``path`` fields as the caller may read them.

Impact, callers and traverse apply them to the nodes of their answers; a search applies
them before it ranks (``filtered_ids``: the IDs a branch may rank), so its top-k is exact
over the documents that pass, never a cut list. Test code is recognised by the path
conventions in ``TEST_PATTERNS`` (stated as such, not guessed per project).
"""

from __future__ import annotations

import fnmatch
from typing import TYPE_CHECKING, Any

from cairn.errors import ValidationError
from cairn.search.rules import rule
from cairn.store.reads import document_fields

if TYPE_CHECKING:
    from cairn.index.cut import IndexCut

__all__ = [
    "FILTER_FIELDS",
    "TEST_PATTERNS",
    "check_filters",
    "filtered_ids",
    "filtering",
    "is_test_path",
    "kept",
]

FILTER_FIELDS = ("kind", "path")
"""The body fields the filters read."""

TEST_PATTERNS = (
    "tests/*",
    "*/tests/*",
    "test/*",
    "*/test/*",
    "*/__tests__/*",
    "test_*.py",
    "*/test_*.py",
    "*_test.py",
    "*_test.go",
    "conftest.py",
    "*/conftest.py",
    "*.test.[jt]s",
    "*.spec.[jt]s",
    "*.test.[jt]sx",
    "*.spec.[jt]sx",
)
"""Path conventions of test code (pytest, Go, Jest/Vitest layouts)."""


def is_test_path(path: str | None) -> bool:
    """Whether ``path`` follows one of the ``TEST_PATTERNS``."""
    return path is not None and any(fnmatch.fnmatchcase(path, p) for p in TEST_PATTERNS)


def kept(
    kind: object,
    path: object,
    kinds: tuple[str, ...] | None,
    paths: tuple[str, ...] | None,
    exclude_tests: bool,
) -> bool:
    """Whether a node passes the answer filters: one of ``kinds``, a path matching one of
    the ``paths`` globs, and not test code when ``exclude_tests``. ``kind`` and ``path``
    are read as a body holds them: anything but a string counts as missing."""
    kind = kind if isinstance(kind, str) else None
    path = path if isinstance(path, str) else None
    if kinds is not None and kind not in kinds:
        return False
    if paths is not None and (path is None or not any(fnmatch.fnmatchcase(path, g) for g in paths)):
        return False
    return not (exclude_tests and is_test_path(path))


def check_filters(record: str, request: Any) -> None:
    """Hold a request's ``kinds``, ``paths`` and ``exclude_tests`` to their rules (the
    ones ``record``'s schema states), before anything is read."""
    for name in ("kinds", "paths"):
        value = getattr(request, name)
        if value is None:
            continue
        if not isinstance(value, tuple):
            raise ValidationError(f"{name} must be an array or null", details={"field": name})
        rule(record, name).check(value, name)
    if type(request.exclude_tests) is not bool:
        raise ValidationError("exclude_tests must be a boolean", details={"field": "exclude_tests"})


def filtering(request: Any) -> bool:
    """Whether a request asks for any answer filter."""
    return request.kinds is not None or request.paths is not None or bool(request.exclude_tests)


def filtered_ids(
    cut: IndexCut,
    collection: str,
    kinds: tuple[str, ...] | None,
    paths: tuple[str, ...] | None,
    exclude_tests: bool,
) -> frozenset[str] | None:
    """The IDs of ``collection`` that pass the filters at the cut (None: no filter).

    Memoised per position, principal and filter (a document's fields and the
    principal's view of them are fixed at a position), the fields read once for all
    filters.
    """
    if kinds is None and paths is None and not exclude_tests:
        return None
    position = cut.columns.position
    key = ("filtered_ids", collection, position, cut.principal, kinds, paths, exclude_tests)

    def read() -> dict[str, tuple[object, ...]]:
        return document_fields(cut, collection, FILTER_FIELDS)

    def compute() -> frozenset[str]:
        # One read of the collection's fields per position and principal, whatever
        # the filter (the first filtered search of a position pays ~80 ms on Django).
        fields = cut.columns.memo(("filter_fields", collection, position, cut.principal), read)
        return frozenset(
            doc_id
            for doc_id, (kind, path) in fields.items()
            if kept(kind, path, kinds, paths, exclude_tests)
        )

    found: frozenset[str] = cut.columns.memo(key, compute)
    return found
