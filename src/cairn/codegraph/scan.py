"""Repository scanning: which files are read, which are skipped and why (code-graph §1).

The scanner walks the tree in sorted order, honours ``.gitignore`` and ``.cairnignore``
at every level plus caller excludes, prunes default directories (VCS, virtualenvs,
caches, build output), skips vendored directories and minified bundles unless an ignore
file negates them, and applies the secret-path policy *before* any read, so a secret
file's contents never reach the graph. Every file it sees ends with one outcome in the
manifest: ``indexed``, ``skipped:<reason>`` or ``failed:<error>``.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pathspec

from cairn.codegraph.limits import (
    BINARY_SNIFF_BYTES,
    DEFAULT_EXCLUDED_DIRS,
    DEFAULT_OUT_DIRNAME,
    LANGUAGE_BY_NAME,
    LANGUAGE_BY_SUFFIX,
    MANIFEST_SCHEMA,
    MAX_ERROR_CHARS,
    MAX_FILE_BYTES,
    MINIFIED_SUFFIXES,
    SECRET_FILENAMES,
    SECRET_SUFFIXES,
    TSCONFIG_LANGUAGE,
    VENDORED_DIRS,
)
from cairn.codegraph.tsconfig import is_tsconfig_name
from cairn.errors import ValidationError

__all__ = [
    "INDEXED",
    "OTHER_LANGUAGE",
    "FileOutcome",
    "Manifest",
    "ScanResult",
    "ScannedFile",
    "SourceRead",
    "is_secret_path",
    "language_of",
    "read_source",
    "scan_repository",
]

INDEXED = "indexed"
OTHER_LANGUAGE = "other"
IGNORE_FILES = (".gitignore", ".cairnignore")

SKIP_DEFAULT_EXCLUDE = "skipped:default_exclude"
SKIP_IGNORED = "skipped:ignored"
SKIP_EXCLUDED = "skipped:excluded"
SKIP_SECRET = "skipped:secret_path"
SKIP_TOO_LARGE = "skipped:too_large"
SKIP_BINARY = "skipped:binary"
SKIP_SYMLINK = "skipped:symlink"
SKIP_VENDORED = "skipped:vendored"
SKIP_MINIFIED = "skipped:minified"
SKIP_UNSUPPORTED = "skipped:unsupported_language"
SKIP_UNDECODABLE = "skipped:undecodable_name"
"""A file or directory whose name is not UTF-8: a path of the graph must be text. Its
manifest row shows the name with each stray byte escaped (``bad\\xffname.py``)."""


@dataclass(frozen=True, slots=True)
class ScannedFile:
    """A file the scanner accepted for reading: repository-relative POSIX path and language."""

    path: str
    language: str
    size: int
    signature: tuple[int, int, int, int] | None = None
    """(size, mtime ns, ctime ns, inode) as the scan found the file: a file with the same
    signature since it was last read was not written since (``ExtractCache.known_sha``)."""


@dataclass(frozen=True, slots=True)
class FileOutcome:
    """One manifest row: what happened to one file (or one pruned directory)."""

    path: str
    language: str
    outcome: str
    size: int | None = None
    sha256: str | None = None
    counts: tuple[tuple[str, int], ...] = ()
    error: str | None = None
    """What stopped a full parse (``line 3: SyntaxError: ...``) for ``failed:`` and
    ``partial:`` outcomes; ``None`` otherwise."""

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {
            "path": self.path,
            "language": self.language,
            "outcome": self.outcome,
            "size": self.size,
            "sha256": self.sha256,
            "counts": dict(self.counts),
            "error": self.error,
        }


@dataclass(frozen=True, slots=True)
class ScanResult:
    """Files to read, plus the outcomes of everything skipped while walking."""

    root: Path
    files: tuple[ScannedFile, ...]
    skipped: tuple[FileOutcome, ...]
    started_ns: int = 0
    """Wall clock (``time.time_ns``) before the walk: a file written since may have
    been seen before its last write (the stamp's racy rule)."""


@dataclass(slots=True)
class Manifest:
    """The indexing manifest: one outcome per file and a per-language summary."""

    entries: list[FileOutcome] = field(default_factory=list)
    calls: Counter[str] = field(default_factory=Counter)

    def add(self, entry: FileOutcome) -> None:
        """Record one file's outcome."""
        self.entries.append(entry)

    def sorted_entries(self) -> tuple[FileOutcome, ...]:
        """Entries ordered by path (the order they are written in)."""
        return tuple(sorted(self.entries, key=lambda entry: entry.path))

    def summary(self) -> dict[str, dict[str, int]]:
        """Counts of files by language and by outcome (``{language: {outcome: n}}``)."""
        table: dict[str, Counter[str]] = {}
        for entry in self.entries:
            table.setdefault(entry.language, Counter())[entry.outcome] += 1
        return {lang: dict(sorted(table[lang].items())) for lang in sorted(table)}

    def outcome_counts(self) -> dict[str, int]:
        """Counts of files by outcome, over every language."""
        return dict(sorted(Counter(entry.outcome for entry in self.entries).items()))

    def to_json(self) -> dict[str, Any]:
        """Plain, deterministic JSON form (no timings, no absolute paths)."""
        return {
            "schema": MANIFEST_SCHEMA,
            "summary": self.summary(),
            "outcomes": self.outcome_counts(),
            "calls": dict(sorted(self.calls.items())),
            "files": [entry.to_json() for entry in self.sorted_entries()],
        }


def language_of(path: str) -> str:
    """The language of ``path`` by its name or suffix, or ``other``."""
    name = path.rsplit("/", 1)[-1]
    by_name = LANGUAGE_BY_NAME.get(name)
    if by_name is not None:
        return by_name
    if is_tsconfig_name(name):  # tsconfig.json, tsconfig.app.json, jsconfig.json
        return TSCONFIG_LANGUAGE
    return LANGUAGE_BY_SUFFIX.get(os.path.splitext(path)[1].lower(), OTHER_LANGUAGE)


def is_secret_path(path: str) -> bool:
    """Whether the secret-path policy forbids reading ``path`` (``.env*``, keys, certs)."""
    name = path.rsplit("/", 1)[-1].lower()
    if name.startswith(".env") or name in SECRET_FILENAMES:
        return True
    return name.endswith(SECRET_SUFFIXES)


@dataclass(slots=True)
class _IgnoreChain:
    """Ignore specs from the root down to one directory; the deepest decision wins."""

    layers: tuple[tuple[str, pathspec.GitIgnoreSpec], ...] = ()
    left_out: dict[str, str] = field(default_factory=dict)
    """Ignore files (by path) with lines that are no pattern, and which (their row's
    ``error``): git leaves such lines out, and so does the scan."""

    def extended(self, base: str, entries: Sequence[os.DirEntry[str]]) -> _IgnoreChain:
        """The chain with the ignore files among a directory's ``entries`` (regular
        files only, never symlinks) as its deepest layers, in ``IGNORE_FILES`` order.

        Found in the listing the walk reads anyway: stating each possible ignore file
        of every directory cost ~40 ms a scan of the Django package (600 directories).
        """
        found = {entry.name: entry for entry in entries if entry.name in IGNORE_FILES}
        if not found:
            return self
        layers = list(self.layers)
        for name in IGNORE_FILES:
            entry = found.get(name)
            if entry is not None and entry.is_file(follow_symlinks=False):
                lines = Path(entry.path).read_text("utf-8", errors="replace").splitlines()
                spec, bad = _ignore_spec(lines)
                layers.append((base, spec))
                if bad:
                    self.left_out[f"{base}/{name}" if base else name] = bad
        if len(layers) == len(self.layers):
            return self
        return _IgnoreChain(tuple(layers), self.left_out)

    def decision(self, rel: str, is_dir: bool) -> bool | None:
        """True when the deepest matching line ignores ``rel``, False when it negates
        (``!vendor/``), None when no line matches."""
        decision: bool | None = None
        for base, spec in self.layers:
            local = rel[len(base) + 1 :] if base else rel
            result = spec.check_file(local + "/" if is_dir else local)
            if result.include is not None:
                decision = result.include
        return decision

    def ignored(self, rel: str, is_dir: bool) -> bool:
        return self.decision(rel, is_dir) is True


def _ignore_spec(lines: Sequence[str]) -> tuple[pathspec.GitIgnoreSpec, str | None]:
    """The spec of an ignore file's lines, and which were left out: a line that is no
    pattern (``[z-a]``, a lone ``!`` or ``\\``) matches nothing, as in git, where it
    stopped the whole scan before."""
    try:
        return pathspec.GitIgnoreSpec.from_lines(lines), None
    except (ValueError, re.error):
        pass
    kept: list[str] = []
    bad: list[str] = []
    for number, line in enumerate(lines, 1):
        error = _pattern_error(line)
        if error is None:
            kept.append(line)
        else:
            bad.append(f"line {number} ({line!r}: {error})")
            kept.append("")  # keeps the line numbers of the rest
    said = f"left out, not patterns: {'; '.join(bad)}"[:MAX_ERROR_CHARS]
    return pathspec.GitIgnoreSpec.from_lines(kept), said


def _pattern_error(line: str) -> Exception | None:
    """Why one gitignore line is no pattern (pathspec's ``GitIgnorePatternError``, a
    ``ValueError``, or the ``re.error`` of its regular expression), or None."""
    try:
        pathspec.GitIgnoreSpec.from_lines([line])
    except (ValueError, re.error) as exc:
        return exc
    return None


def _exclude_spec(excludes: Sequence[str]) -> pathspec.GitIgnoreSpec | None:
    for pattern in excludes:
        if not isinstance(pattern, str) or not pattern.strip():
            raise ValidationError(f"exclude pattern must be a non-blank string, got {pattern!r}")
        error = _pattern_error(pattern)
        if error is not None:
            raise ValidationError(
                f"exclude pattern {pattern!r} is not a gitignore pattern: {error}",
                details={"pattern": pattern},
            ) from error
    return pathspec.GitIgnoreSpec.from_lines(excludes) if excludes else None


def scan_repository(root: Path | str, *, excludes: Sequence[str] = ()) -> ScanResult:
    """Walk ``root`` in sorted order and decide, by path alone, what to read."""
    base = Path(root).resolve()
    if not base.is_dir():
        raise ValidationError(f"repository root {str(root)!r} is not a directory")
    exclude = _exclude_spec(excludes)
    files: list[ScannedFile] = []
    skipped: list[FileOutcome] = []
    started_ns = time.time_ns()
    _walk(str(base), "", _IgnoreChain(), exclude, files, skipped)
    return ScanResult(base, tuple(files), tuple(skipped), started_ns)


def _walk(
    directory: str,
    rel_dir: str,
    chain: _IgnoreChain,
    exclude: pathspec.GitIgnoreSpec | None,
    files: list[ScannedFile],
    skipped: list[FileOutcome],
) -> None:
    try:
        entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
    except OSError as exc:
        skipped.append(FileOutcome(rel_dir + "/", OTHER_LANGUAGE, f"failed:{type(exc).__name__}"))
        return
    chain = chain.extended(rel_dir, entries)
    for entry in entries:
        rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
        if not _decodable(entry.name):
            skipped.append(_undecodable(entry, rel))
            continue
        if entry.is_dir(follow_symlinks=False):
            if rel == DEFAULT_OUT_DIRNAME:
                # The index's own folder: not listed, or the manifest of the first
                # index (made before the folder) would differ from every later one's.
                continue
            outcome = _directory_outcome(entry.name, rel, chain, exclude)
            if outcome is not None:
                skipped.append(FileOutcome(rel + "/", OTHER_LANGUAGE, outcome))
                continue
            _walk(entry.path, rel, chain, exclude, files, skipped)
            continue
        scanned, skip = _file_outcome(entry, rel, chain, exclude)
        if scanned is not None:
            files.append(scanned)
        elif skip is not None:
            note = chain.left_out.get(rel)
            skipped.append(skip if note is None else replace(skip, error=note))


def _decodable(name: str) -> bool:
    """Whether a name the OS gave is UTF-8 (else it holds surrogates standing for the
    bytes that are not: ``os.fsdecode``'s ``surrogateescape``)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _undecodable(entry: os.DirEntry[str], rel: str) -> FileOutcome:
    """The row of an entry whose name is not UTF-8: its path with the stray bytes
    escaped, a directory's with its ``/`` (nothing under it is read)."""
    shown = os.fsencode(rel).decode("utf-8", "backslashreplace")
    if entry.is_dir(follow_symlinks=False):
        return FileOutcome(shown + "/", OTHER_LANGUAGE, SKIP_UNDECODABLE)
    return FileOutcome(shown, language_of(shown), SKIP_UNDECODABLE)


def _directory_outcome(
    name: str, rel: str, chain: _IgnoreChain, exclude: pathspec.GitIgnoreSpec | None
) -> str | None:
    if name in DEFAULT_EXCLUDED_DIRS:
        return SKIP_DEFAULT_EXCLUDE
    decision = chain.decision(rel, True)
    if decision is True:
        return SKIP_IGNORED
    if name in VENDORED_DIRS and decision is None:  # an ignore file's `!vendor/` keeps it
        return SKIP_VENDORED
    if exclude is not None and exclude.match_file(rel + "/"):
        return SKIP_EXCLUDED
    return None


def _file_outcome(
    entry: os.DirEntry[str],
    rel: str,
    chain: _IgnoreChain,
    exclude: pathspec.GitIgnoreSpec | None,
) -> tuple[ScannedFile | None, FileOutcome | None]:
    language = language_of(rel)
    if entry.is_symlink():
        return None, FileOutcome(rel, language, SKIP_SYMLINK)
    if not entry.is_file(follow_symlinks=False):
        return None, None  # sockets, fifos and devices are not files of the repository
    decision = chain.decision(rel, False)
    if decision is True:
        return None, FileOutcome(rel, language, SKIP_IGNORED)
    if decision is None and rel.endswith(MINIFIED_SUFFIXES):
        return None, FileOutcome(rel, language, SKIP_MINIFIED)
    if exclude is not None and exclude.match_file(rel):
        return None, FileOutcome(rel, language, SKIP_EXCLUDED)
    if is_secret_path(rel):
        return None, FileOutcome(rel, language, SKIP_SECRET)
    stat = entry.stat(follow_symlinks=False)
    size = stat.st_size
    if size > MAX_FILE_BYTES:
        return None, FileOutcome(rel, language, SKIP_TOO_LARGE, size)
    if language == OTHER_LANGUAGE:
        return None, FileOutcome(rel, language, SKIP_UNSUPPORTED, size)
    signature = (size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino)
    return ScannedFile(rel, language, size, signature), None


@dataclass(frozen=True, slots=True)
class SourceRead:
    """The bytes of one accepted file, or the outcome that stopped reading it."""

    data: bytes | None
    outcome: FileOutcome


def read_source(root: Path, scanned: ScannedFile) -> SourceRead:
    """Read one accepted file, re-checking the size cap and sniffing for binary content."""
    base = FileOutcome(scanned.path, scanned.language, INDEXED, scanned.size)
    try:
        with open(root / scanned.path, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        return SourceRead(None, replace(base, outcome=f"failed:{type(exc).__name__}"))
    if len(data) > MAX_FILE_BYTES:
        return SourceRead(None, replace(base, outcome=SKIP_TOO_LARGE, size=len(data)))
    if b"\x00" in data[:BINARY_SNIFF_BYTES]:
        return SourceRead(None, replace(base, outcome=SKIP_BINARY, size=len(data)))
    digest = hashlib.sha256(data).hexdigest()
    return SourceRead(data, replace(base, size=len(data), sha256=digest))


def iter_paths(result: ScanResult) -> Iterable[str]:
    """Every path the scan saw (accepted and skipped), sorted."""
    return sorted([f.path for f in result.files] + [s.path for s in result.skipped])
