"""What went wrong at the storage boundary, named truthfully: SQLite and OS failures as
typed Cairn errors.

A full disk, a lock held too long, a read-only or forbidden file and an I/O error are
refusals of the environment, not damage: each gets its own ``StorageError`` child (and
HTTP status), so an operator frees space or fixes permissions instead of restoring a
healthy file. Only SQLite's corruption codes (and errors no environment explains) are
``CorruptionError``. The original exception is always kept as ``__cause__``.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path

from cairn.errors import (
    CairnError,
    CorruptionError,
    StorageError,
    StorageFullError,
    StorageIOError,
    StorageLockedError,
    StoragePermissionError,
    StorageReadOnlyError,
)
from cairn.store.limits import SQLITE_BUSY_TIMEOUT_MS

__all__ = ["rollback", "sqlite_error"]

# SQLite's primary result codes (https://sqlite.org/rescode.html); an extended code
# keeps its primary code in the low byte.
_SQLITE_PERM = 3
_SQLITE_BUSY = 5
_SQLITE_LOCKED = 6
_SQLITE_NOMEM = 7
_SQLITE_READONLY = 8
_SQLITE_IOERR = 10
_SQLITE_CORRUPT = 11
_SQLITE_FULL = 13
_SQLITE_CANTOPEN = 14
_SQLITE_NOTADB = 26
_PRIMARY_MASK = 0xFF


def _primary(exc: sqlite3.Error) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    return None if code is None else int(code) & _PRIMARY_MASK


def sqlite_error(exc: sqlite3.Error, action: str, path: Path | None = None) -> CairnError:
    """The typed error for a failed SQLite call while doing ``action`` (on ``path``)."""
    primary = _primary(exc)
    text = str(exc)
    lowered = text.lower()
    details: dict[str, object] = {"sqlite_error": getattr(exc, "sqlite_errorname", None)}
    if path is not None:
        details["path"] = str(path)
    if primary == _SQLITE_FULL or (primary is None and "disk is full" in lowered):
        return StorageFullError(
            f"{action}: the disk is full; nothing was written. Free space and retry.",
            details=details,
        )
    if primary in (_SQLITE_BUSY, _SQLITE_LOCKED) or (
        primary is None and ("locked" in lowered or "busy" in lowered)
    ):
        return StorageLockedError(
            f"{action}: the database stayed locked by another writer",
            details={**details, "timeout_ms": SQLITE_BUSY_TIMEOUT_MS},
        )
    if primary == _SQLITE_READONLY:
        return StorageReadOnlyError(
            f"{action}: the database is read-only here ({text})", details=details
        )
    if primary == _SQLITE_PERM:
        return StoragePermissionError(f"{action}: permission denied ({text})", details=details)
    if primary == _SQLITE_CANTOPEN or (primary is None and "unable to open" in lowered):
        return _cannot_open(action, path, details)
    if primary == _SQLITE_IOERR:
        return StorageIOError(f"{action}: disk I/O error ({text})", details=details)
    if primary == _SQLITE_NOMEM:
        return StorageError(f"{action}: SQLite ran out of memory", details=details)
    if primary in (_SQLITE_CORRUPT, _SQLITE_NOTADB):
        return CorruptionError(f"{action}: the database file is damaged ({text})", details=details)
    return CorruptionError(f"{action}: {text}", details=details)


def _cannot_open(action: str, path: Path | None, details: dict[str, object]) -> StorageError:
    """SQLite could not open a file: name the reason the file system gives, if any."""
    if path is not None:
        folder = path.parent
        if path.exists() and not os.access(path, os.R_OK | os.W_OK):
            return StoragePermissionError(
                f"{action}: no read and write permission on {str(path)!r}", details=details
            )
        if not os.access(folder, os.W_OK | os.X_OK):
            return StoragePermissionError(
                f"{action}: no write permission on the folder {str(folder)!r}", details=details
            )
    return StorageIOError(f"{action}: cannot open the database file", details=details)


def rollback(conn: sqlite3.Connection) -> None:
    """Roll back an open transaction, if one is open, without hiding the error in flight.

    SQLite itself rolls a transaction back on some failures (a full disk, say); a
    second ROLLBACK would then fail with "no transaction is active" and mask the cause.
    """
    if not conn.in_transaction:
        return
    # The connection is closed or the transaction already ended: the cause in flight wins.
    with contextlib.suppress(sqlite3.Error):
        conn.execute("ROLLBACK")
