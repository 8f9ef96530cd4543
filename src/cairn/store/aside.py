"""Build a new database file aside and move it in place only when it is whole.

A first bulk load (``cairn index`` of a folder with no ``cairn.db`` yet) writes every
page once: under a temporary name, with its rollback journal in memory and no sync,
then one ``fsync`` and a link to the real name. In WAL mode with ``synchronous=FULL``
each page is written twice (the log, then the checkpoint) and synced at the commit:
on the whole Django sdist that was 2.9 s of commit against 1.5 s (docs/benchmarks.md).

The real name only ever names a whole, synced database: a crash or an error leaves at
most the temporary file, which the next build replaces. Receipts the build returns say
``process_durable``; that holds from the moment anyone can open the file by its name.
The next ``open`` of the file puts it in WAL mode as every other database.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from cairn.errors import ConflictError, os_error
from cairn.store.database import Database, open_as

__all__ = ["BUILDING_SUFFIX", "building"]

BUILDING_SUFFIX = ".building"
"""The temporary file is the database's name plus this, in the same folder."""

_SQLITE_SIDE_FILES = ("-journal", "-wal", "-shm")
"""Files SQLite keeps beside a database; orphans of a removed database must not be
applied to the new one."""


@contextlib.contextmanager
def building(
    path: str | os.PathLike[str],
    *,
    database: str | None = None,
    sidecars: Sequence[str] = (),
) -> Iterator[Database]:
    """A new database for ``path``, built aside; on a clean exit it is synced and
    linked in at ``path``, with each ``sidecars`` file (a suffix: ``path`` + suffix,
    written meanwhile beside the temporary file) moved beside it.

    ``ConflictError`` when ``path`` exists (checked at the start and again at the link,
    which never replaces a file) or another build of it is under way. On an error
    nothing is left behind and ``path`` is untouched.
    """
    final = Path(path)
    temporary = final.with_name(final.name + BUILDING_SUFFIX)
    if final.exists():
        raise ConflictError(f"{str(final)!r} exists: a database is built aside only when new")
    with _build_lock(temporary) as lock:
        try:
            with open_as(Database, temporary, database=database, aside=True) as db:
                yield db
            os.fsync(lock)
            _link(temporary, final)
        except BaseException:
            _remove(temporary, *(f"{temporary}{suffix}" for suffix in sidecars))
            raise
        for suffix in sidecars:
            with contextlib.suppress(FileNotFoundError):
                os.replace(f"{temporary}{suffix}", f"{final}{suffix}")
        _remove(temporary)
        _sync_folder(final.parent)


@contextlib.contextmanager
def _build_lock(temporary: Path) -> Iterator[int]:
    """The temporary file, emptied and held under an exclusive ``flock`` for the build:
    a second build of the same database is refused; one a crash left is replaced."""
    try:
        descriptor = os.open(temporary, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise os_error(exc, "create", temporary) from exc
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ConflictError(
                f"another process is building {str(temporary.with_suffix(''))!r}"
            ) from None
        os.ftruncate(descriptor, 0)
        _remove(*(f"{temporary}{suffix}" for suffix in _SQLITE_SIDE_FILES))
        yield descriptor
    finally:
        # Closed only after SQLite closed the file: closing any descriptor of a file
        # drops the process's POSIX locks on it, SQLite's included.
        os.close(descriptor)


def _link(temporary: Path, final: Path) -> None:
    """Give the whole file its real name, never replacing one that appeared meanwhile."""
    _remove(*(f"{final}{suffix}" for suffix in _SQLITE_SIDE_FILES))
    try:
        os.link(temporary, final)
    except FileExistsError:
        raise ConflictError(
            f"{str(final)!r} was created while a new database was built for it"
        ) from None
    except OSError as exc:
        raise os_error(exc, "link", final) from exc


def _remove(*files: str | Path) -> None:
    for file in files:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(file)


def _sync_folder(folder: Path) -> None:
    """Make the new name itself durable (a link is a change to the folder)."""
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
