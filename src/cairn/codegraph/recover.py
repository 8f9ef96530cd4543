"""Error-tolerant Python parsing: a file with a syntax error keeps what lies outside it.

A file mid-edit often does not parse. Dropping it whole would drop every symbol it
defines and every edge into them, so the broken region is stubbed out instead and the
rest parsed as usual: each line ``ast`` blames is replaced by a ``pass`` at its own
indentation, then emptied if it is still blamed, then the line above it is stubbed (an
``unexpected indent`` empties the whole indented run it starts), and the file is parsed
again, up to ``MAX_RECOVERY_STEPS`` times. Line numbers never move, so
every range that survives is the file's own. The result is a function of the file's
bytes alone (never of an earlier build), so clean and incremental builds agree.
"""

from __future__ import annotations

import ast
import io
import tokenize
from dataclasses import dataclass

__all__ = ["MAX_RECOVERY_STEPS", "Recovered", "recover_python"]

MAX_RECOVERY_STEPS = 64
"""Re-parses tried before a file is given up as ``failed:SyntaxError``."""

_STUB = "pass"


@dataclass(frozen=True, slots=True)
class Recovered:
    """A parse of a file with its broken lines stubbed: the tree, the source it was
    parsed from (same line count as the file), and the first error, as ``ast`` said it."""

    tree: ast.Module
    source: bytes
    error: str
    line: int
    stubbed: tuple[int, ...]


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _stub(lines: list[str], index: int, *, blank: bool) -> bool:
    """Replace line ``index`` (0-based) by a ``pass`` at its indentation, or by nothing
    when ``blank`` or when it already is that ``pass`` (a stub ``ast`` still blames: a
    decorator above it wants a ``def``); False if the line is blank (no progress)."""
    line = lines[index]
    ending = line[len(line.rstrip("\r\n")) :]
    if not line.strip():
        return False
    stub = _indent(line) + _STUB + ending
    lines[index] = ending if blank or line == stub else stub
    return True


def _previous(lines: list[str], index: int) -> int | None:
    """The nearest line above ``index`` that is not blank (where an error ``ast``
    blames on an emptied line began: an unclosed construct, a decorator)."""
    for earlier in range(index - 1, -1, -1):
        if lines[earlier].strip():
            return earlier
    return None


def _block_end(lines: list[str], start: int) -> int:
    """The end (exclusive) of the indented run starting at ``start``: every following
    line indented at least as deep, or blank."""
    depth = len(_indent(lines[start]).expandtabs())
    end = start + 1
    while end < len(lines):
        text = lines[end]
        if text.strip() and len(_indent(text).expandtabs()) < depth:
            break
        end += 1
    return end


def _blamed(error: SyntaxError, count: int) -> range:
    first = min(max(error.lineno or count, 1), count)
    last = min(max(error.end_lineno or first, first), count)
    return range(first - 1, last)


def recover_python(data: bytes, error: SyntaxError) -> Recovered | None:
    """A tree of ``data`` with the lines ``ast`` blames stubbed out, or None when the
    file names no encoding Python knows or does not parse within ``MAX_RECOVERY_STEPS``.

    Bytes its encoding cannot decode (a stray Latin-1 byte in a UTF-8 file, which
    Python refuses whole) are read as U+FFFD first: the rest of the file is then kept
    as any other recovery keeps it, and the error names the first such byte."""
    try:  # an unknown encoding in the cookie is a SyntaxError here
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError:
        return None
    try:
        text, replaced = data.decode(encoding), False
    except UnicodeDecodeError:
        text, replaced = data.decode(encoding, "replace"), True
    lines = text.splitlines(keepends=True)
    if not lines:
        return None
    first = error
    stubbed: set[int] = set()
    current: SyntaxError = error
    if replaced:
        # What stopped ``ast`` may have been the bytes alone: the text may parse as is.
        try:
            tree = ast.parse(text, type_comments=False)
        except SyntaxError as again:
            current = again
        except (ValueError, RecursionError, MemoryError):
            return None
        else:
            return _recovered(tree, text, encoding, first, stubbed, len(lines))
    for _ in range(MAX_RECOVERY_STEPS):
        blamed = _blamed(current, len(lines))
        # An indented run no statement opens: stubbing it would stay over-indented, so
        # the whole run goes (its lines stay, empty).
        stray = isinstance(current, IndentationError) and "unexpected indent" in str(current.msg)
        if stray:
            blamed = range(blamed.start, _block_end(lines, blamed.start))
        progressed = False
        for index in blamed:
            if _stub(lines, index, blank=stray):
                stubbed.add(index + 1)
                progressed = True
        if not progressed:
            earlier = _previous(lines, blamed.start)
            if earlier is None or not _stub(lines, earlier, blank=False):
                return None
            stubbed.add(earlier + 1)
        source = "".join(lines)
        try:
            tree = ast.parse(source, type_comments=False)
        except SyntaxError as again:
            current = again
            continue
        except (ValueError, RecursionError, MemoryError):
            return None
        return _recovered(tree, source, encoding, first, stubbed, len(lines))
    return None


def _recovered(
    tree: ast.Module,
    source: str,
    encoding: str,
    first: SyntaxError,
    stubbed: set[int],
    line_count: int,
) -> Recovered:
    """The ``Recovered`` of a parse that succeeded (a U+FFFD its encoding cannot hold
    becomes ``?``)."""
    return Recovered(
        tree,
        source.encode(encoding, "replace"),
        f"{type(first).__name__}: {first.msg}",
        min(max(first.lineno or 1, 1), line_count),
        tuple(sorted(stubbed)),
    )
