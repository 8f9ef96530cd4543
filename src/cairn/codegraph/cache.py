"""The per-file extraction cache: a file whose bytes did not change is not parsed again.

A ``FileExtract`` is a pure function of one file's path, language and bytes and of the
extractor (``records.py`` says so), so it is cached under exactly those: one row per
path holding the content hash, the outcome and the pickled extract, checked by CRC-32.
The extractor's fingerprint (the source bytes of the extraction modules, the adapter
version, the Python version and the tree-sitter grammar versions) is stored with the
rows; any change to it empties the cache, so a stale row can never stand for a fresh
parse. The cache is derived data in ``.cairn/``: a damaged row is parsed again, a
damaged or foreign file is replaced, and neither ever changes a graph.

Rows are read back by a restricted unpickler that builds nothing but the extraction
records (and the builtin ``frozenset``): a cache file planted in a repository cannot run
code, only describe records.
"""

from __future__ import annotations

import functools
import hashlib
import io
import pickle
import sqlite3
import sys
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cairn.codegraph import records
from cairn.codegraph.limits import ADAPTER_VERSION
from cairn.codegraph.records import FileExtract
from cairn.errors import os_error
from cairn.installed import installed_version

__all__ = [
    "CACHE_FILENAME",
    "CACHE_FORMAT",
    "CacheStats",
    "CachedExtract",
    "ExtractCache",
    "FreshRow",
    "Row",
    "code_fingerprint",
    "dump_extract",
    "extractor_fingerprint",
    "load_extract",
]

CACHE_FILENAME = "extracts.cache"
"""The cache's file name inside the index folder (``.cairn/``)."""

CACHE_FORMAT = "cairn.extract-cache/3"
"""Layout of the cache file; another value empties it."""

PICKLE_PROTOCOL = 5

COMPRESS_LEVEL = 3
"""zlib level of a cached extract (Django package: 8.6 MiB of pickles in 2.6 MiB)."""

MAX_EXTRACT_BYTES = 64 * 1024 * 1024
"""A cached extract inflating past this is damaged (a 1 MiB file's extract is far less)."""

_EXTRACTOR_MODULES = (
    "records",
    "terms",
    "flow",
    "deep",
    "emit",
    "python",
    "recover",
    "treesitter",
    "markdown",
    "tsconfig",
    "workspaces",
    "scan",
    "limits",
    "build",
)
"""The modules whose code decides what an extract holds (their bytes are fingerprinted)."""

_GRAMMARS = (
    "tree-sitter",
    "tree-sitter-javascript",
    "tree-sitter-typescript",
    "tree-sitter-go",
    "json5",
)
"""The parsers extracts go through (the project configs' JSON5 reader too), by version."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS extracts (
    path TEXT PRIMARY KEY,
    language TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    outcome TEXT NOT NULL,
    error TEXT,
    data BLOB NOT NULL,
    checksum INTEGER NOT NULL
);
"""

_ALLOWED_BUILTINS = frozenset({"frozenset"})

MAX_MEMO_FILES = 50_000
"""Extracts one process keeps in memory between indexes (``cairn watch``)."""

_MEMO: dict[tuple[str, str, str, str], tuple[int, FileExtract]] = {}
"""(extractor fingerprint, path, language, sha256) -> (row checksum, the extract)."""

RACY_MARGIN_NS = 2_000_000_000
"""A file read less than this long after it was last written is read again next time
whatever its signature says: a second write within one tick of the file system's clock
(2 s on some) would leave the signature unchanged ("racily clean", as git calls it)."""

_READS: dict[tuple[str, str], tuple[tuple[int, int, int, int], str]] = {}
"""(cache file, path) -> (the file's signature when read, its sha256): what this process
read in its last index of that folder, kept while the file was not written just before."""

Row = tuple[str, str, str, str | None, bytes, int]
"""A stored row after its path: language, sha256, outcome, error, data, checksum."""
FreshRow = tuple[str, str, str, str, str | None, bytes]
"""A row to store: path, language, sha256, outcome, error, data."""


class _RecordUnpickler(pickle.Unpickler):
    """Builds extraction records only: any other global is refused."""

    def find_class(self, module: str, name: str) -> Any:
        if module == records.__name__ and name in records.__all__:
            found = getattr(records, name)
            if isinstance(found, type):
                return found
        if module == "builtins" and name in _ALLOWED_BUILTINS:
            return frozenset
        raise pickle.UnpicklingError(f"the extraction cache may not name {module}.{name}")


def load_extract(blob: bytes) -> FileExtract:
    """A ``FileExtract`` from cached bytes (``pickle.UnpicklingError`` if it is not one)."""
    inflater = zlib.decompressobj()
    try:
        data = inflater.decompress(blob, MAX_EXTRACT_BYTES)
    except zlib.error as exc:
        raise pickle.UnpicklingError(f"a cached extract does not inflate: {exc}") from exc
    if inflater.unconsumed_tail or not inflater.eof:
        raise pickle.UnpicklingError("a cached extract is cut short or too large")
    value = _RecordUnpickler(io.BytesIO(data)).load()
    if not isinstance(value, FileExtract):
        raise pickle.UnpicklingError("a cached extract is not a FileExtract")
    return value


def dump_extract(extract: FileExtract) -> bytes:
    """The cached bytes of one extract: its pickle, deflated (a third of the size)."""
    return zlib.compress(pickle.dumps(extract, protocol=PICKLE_PROTOCOL), COMPRESS_LEVEL)


def _row_checksum(
    path: str, language: str, sha256: str, outcome: str, error: str | None, data: bytes
) -> int:
    fields = (path, language, sha256, outcome, "" if error is None else "\x01" + error)
    head = "\x00".join(fields).encode("utf-8", "surrogatepass")
    return zlib.crc32(data, zlib.crc32(head))


def extractor_fingerprint() -> str:
    """What an extract depends on besides the file: extractor code, adapter version,
    Python version and grammar versions, as one SHA-256."""
    digest = hashlib.sha256()
    digest.update(f"{CACHE_FORMAT}\x00{ADAPTER_VERSION}\x00{sys.version_info[:3]}".encode())
    package = Path(records.__file__).parent
    for name in _EXTRACTOR_MODULES:
        digest.update(name.encode() + b"\x00" + (package / f"{name}.py").read_bytes())
    for grammar in _GRAMMARS:
        digest.update(f"{grammar}={installed_version(grammar)}\x00".encode())
    return digest.hexdigest()


_VERSIONED = ("numpy", "orjson", "pathspec")
"""Libraries whose output the index's bytes go through (beside the extractor's)."""


@functools.cache
def code_fingerprint() -> str:
    """A SHA-256 of everything of Cairn itself an index depends on: its extractor
    fingerprint (grammars, Python), the bytes of every module of the ``cairn`` package,
    SQLite's and a few libraries' versions (computed once per process)."""
    digest = hashlib.sha256(extractor_fingerprint().encode())
    digest.update(f"{sys.version}\x00{sqlite3.sqlite_version}\x00".encode())
    for name in _VERSIONED:
        digest.update(f"{name}={installed_version(name)}\x00".encode())
    package = Path(__file__).resolve().parents[1]
    for source in sorted(package.rglob("*.py")):
        digest.update(source.relative_to(package).as_posix().encode() + b"\x00")
        digest.update(source.read_bytes())
    return digest.hexdigest()


@dataclass(slots=True)
class CacheStats:
    """What the cache did in one index: reused, parsed, damaged rows, and why it was
    emptied (``None`` when it was not)."""

    hits: int = 0
    misses: int = 0
    damaged: int = 0
    reset: str | None = None

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {
            "hits": self.hits,
            "misses": self.misses,
            "damaged": self.damaged,
            "reset": self.reset,
        }


@dataclass(frozen=True, slots=True)
class CachedExtract:
    """One reusable cache row: the outcome and error it had, and the extract."""

    outcome: str
    error: str | None
    extract: FileExtract


@dataclass(slots=True)
class ExtractCache:
    """An open extraction cache file (``open`` it; ``lookup`` per file; ``save`` once)."""

    path: Path
    conn: sqlite3.Connection
    fingerprint: str
    stats: CacheStats = field(default_factory=CacheStats)
    remember: bool = False
    """Keep the extracts read or written in this process for its next index (``cairn
    watch``); a one-shot index leaves them to be freed with its graph."""
    _written: dict[str, int] = field(default_factory=dict)

    @classmethod
    def open(cls, path: Path | str, *, remember: bool = False) -> ExtractCache:
        """Open (or create) the cache at ``path``; a foreign or damaged file, or one of
        another extractor, is emptied and the reason kept in ``stats.reset``. With
        ``remember``, the extracts this index reads or writes are kept in the process
        for the next one (see ``remember``)."""
        target = Path(path)
        fingerprint = extractor_fingerprint()
        stats = CacheStats()
        try:
            conn = _connect(target)
            stored = _meta(conn)
        except sqlite3.DatabaseError as exc:
            stats.reset = f"unreadable cache file ({exc})"
            target.unlink(missing_ok=True)
            conn = _connect(target)
            stored = {}
        if stored.get("format") != CACHE_FORMAT or stored.get("extractor") != fingerprint:
            if stored and stats.reset is None:
                same_format = stored.get("format") == CACHE_FORMAT
                stats.reset = "the extractor changed" if same_format else "another cache format"
            with conn:
                conn.execute("DROP TABLE extracts")
                conn.execute("DELETE FROM meta")
                conn.executescript(_SCHEMA)
                conn.executemany(
                    "INSERT INTO meta (key, value) VALUES (?, ?)",
                    (("format", CACHE_FORMAT), ("extractor", fingerprint)),
                )
            if stored:
                conn.execute("VACUUM")  # hand the old rows' pages back to the disk
        return cls(target, conn, fingerprint, stats, remember)

    def rows(self) -> dict[str, Row]:
        """Every stored row by path: ``(language, sha256, outcome, error, data, checksum)``."""
        found = self.conn.execute(
            "SELECT path, language, sha256, outcome, error, data, checksum FROM extracts"
        )
        return {row[0]: tuple(row[1:]) for row in found}

    def lookup(
        self,
        rows: Mapping[str, Row],
        path: str,
        language: str,
        sha256: str,
    ) -> CachedExtract | None:
        """The cached extract of ``path`` at content ``sha256``, or None (counted)."""
        row = rows.get(path)
        if row is None or row[0] != language or row[1] != sha256:
            self.stats.misses += 1
            return None
        _, _, outcome, error, data, checksum = row
        if _row_checksum(path, language, sha256, outcome, error, data) != checksum:
            self.stats.damaged += 1
            self.stats.misses += 1
            return None
        known = _MEMO.get((self.fingerprint, path, language, sha256))
        if known is not None and known[0] == checksum:
            # This very row was read or written by this process: no unpickling.
            self.stats.hits += 1
            return CachedExtract(outcome, error, known[1])
        try:
            extract = load_extract(data)
        except (pickle.UnpicklingError, EOFError, TypeError, ValueError, AttributeError):
            self.stats.damaged += 1
            self.stats.misses += 1
            return None
        if extract.path != path or extract.language != language:
            self.stats.damaged += 1
            self.stats.misses += 1
            return None
        self.stats.hits += 1
        self._remember(path, sha256, checksum, extract)
        return CachedExtract(outcome, error, extract)

    def known_sha(self, path: str, signature: tuple[int, int, int, int] | None) -> str | None:
        """The SHA-256 this process read for ``path`` in an earlier index (``remember``
        only) while its signature is still the one it had then, else None: the file is
        not read again (a ``cairn watch`` round of the Django sdist read and hashed every
        file: ~0.1 s)."""
        if not self.remember or signature is None:
            return None
        held = _READS.get((str(self.path), path))
        return held[1] if held is not None and held[0] == signature else None

    def remember_read(
        self, path: str, signature: tuple[int, int, int, int] | None, sha256: str, started: int
    ) -> None:
        """Keep ``path``'s SHA-256 for its ``signature`` (``remember`` only), when the file
        was last written at least ``RACY_MARGIN_NS`` before ``started`` (ns since the
        epoch: when reading began); else forget it, so it is read again next time."""
        if not self.remember:
            return
        key = (str(self.path), path)
        _READS.pop(key, None)
        if signature is None or max(signature[1], signature[2]) > started - RACY_MARGIN_NS:
            return
        _READS[key] = (signature, sha256)
        while len(_READS) > MAX_MEMO_FILES:
            del _READS[next(iter(_READS))]

    def remember_written(self, path: str, sha256: str, extract: FileExtract) -> None:
        """Keep a freshly parsed ``extract`` in this process, tied to the row ``save``
        wrote for it (no row written: nothing kept)."""
        checksum = self._written.get(path)
        if checksum is not None:
            self._remember(path, sha256, checksum, extract)

    def _remember(self, path: str, sha256: str, checksum: int, extract: FileExtract) -> None:
        """Keep ``extract`` for the next index of this row in this process (``cairn
        watch`` re-indexes many times: an unchanged file is then neither parsed nor
        unpickled). Only a byte-identical row (same checksum) is answered from it; at most
        ``MAX_MEMO_FILES`` are kept, the oldest dropped first."""
        if not self.remember:
            return
        key = (self.fingerprint, path, extract.language, sha256)
        _MEMO.pop(key, None)
        _MEMO[key] = (checksum, extract)
        while len(_MEMO) > MAX_MEMO_FILES:
            del _MEMO[next(iter(_MEMO))]

    def save(self, fresh: Iterable[FreshRow], keep: Iterable[str]) -> None:
        """Store the newly parsed rows ``(path, language, sha256, outcome, error, data)`` and
        drop every row whose path is neither in ``keep`` nor among them (one transaction)."""
        written = [(*row, _row_checksum(*row)) for row in fresh]
        self._written = {row[0]: row[-1] for row in written}
        kept = set(keep) | {row[0] for row in written}
        with self.conn:
            self.conn.executemany(
                "INSERT OR REPLACE INTO extracts"
                " (path, language, sha256, outcome, error, data, checksum)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                written,
            )
            gone = [
                (path,)
                for (path,) in self.conn.execute("SELECT path FROM extracts")
                if path not in kept
            ]
            self.conn.executemany("DELETE FROM extracts WHERE path = ?", gone)

    def close(self) -> None:
        """Close the file."""
        self.conn.close()


def _connect(path: Path) -> sqlite3.Connection:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise os_error(exc, f"cannot create {path.parent}", path.parent) from exc
    conn = sqlite3.connect(path, timeout=30.0)
    conn.executescript(_SCHEMA)
    return conn


def _meta(conn: sqlite3.Connection) -> dict[str, str]:
    return dict(conn.execute("SELECT key, value FROM meta").fetchall())
