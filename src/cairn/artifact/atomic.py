"""Crash-safe file replacement and bounded reads for artifact files.

``atomic_write_bytes`` writes a temporary file in the target's directory, flushes and
fsyncs it, renames it over the target and fsyncs the directory, so a crash at any point
leaves either the previous file or the new one, never a torn mix. ``read_bounded``
refuses files over a cap without reading more than the cap plus one byte.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from cairn.errors import ArtifactError, BudgetExceededError, NotFoundError, os_error

__all__ = [
    "DEFAULT_FILE_MODE",
    "TEMP_SUFFIX",
    "atomic_write_bytes",
    "atomic_write_pieces",
    "read_bounded",
    "read_prefix",
]

TEMP_SUFFIX = ".tmp"
"""Suffix of the temporary files; readers never open them."""

DEFAULT_FILE_MODE = 0o666
"""Permissions of a new file before the umask applies (as ``open()`` creates files)."""


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Replace ``path`` with ``data`` atomically (temp file, fsync, rename, dir fsync)."""
    return atomic_write_pieces(path, (data,))


def atomic_write_pieces(path: str | os.PathLike[str], pieces: Iterable[bytes | memoryview]) -> Path:
    """``atomic_write_bytes`` of the concatenated ``pieces``, written without joining them."""
    target = Path(path)
    directory = target.parent
    try:
        directory.mkdir(parents=True, exist_ok=True)
        descriptor, temp_name = tempfile.mkstemp(
            prefix=f".{target.name}.", suffix=TEMP_SUFFIX, dir=directory
        )
    except OSError as exc:
        raise os_error(exc, f"cannot create a temporary file next to {target}", target) from exc
    try:
        os.chmod(temp_name, _file_mode(target))
        with os.fdopen(descriptor, "wb") as handle:
            for piece in pieces:
                handle.write(piece)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp_name, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp_name)
        if isinstance(exc, OSError):
            raise os_error(exc, f"cannot write {target}", target) from exc
        raise
    _fsync_directory(directory)
    return target


def _file_mode(target: Path) -> int:
    """The replaced file's permissions, or what ``open()`` would create under the umask."""
    try:
        return target.stat().st_mode & 0o777
    except OSError:
        return DEFAULT_FILE_MODE & ~_umask()


def _umask() -> int:
    """The process umask, read without changing it where the platform allows."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):  # pragma: no cover - not Linux
        pass
    current = os.umask(0o022)  # pragma: no cover - not Linux
    os.umask(current)  # pragma: no cover
    return current  # pragma: no cover


def _fsync_directory(directory: Path) -> None:
    """Make the rename durable; platforms without directory fds skip this step."""
    try:
        descriptor = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - Windows cannot open directories
        return
    try:
        os.fsync(descriptor)
    except OSError:  # pragma: no cover - some filesystems refuse directory fsync
        pass
    finally:
        os.close(descriptor)


def read_bounded(path: str | os.PathLike[str], limit: int, what: str) -> bytes:
    """Read a whole file, refusing it (``BudgetExceededError``) when it exceeds ``limit``."""
    target = Path(path)
    try:
        with target.open("rb") as handle:
            data = handle.read(limit + 1)
    except FileNotFoundError as exc:
        raise NotFoundError(
            f"{what} {target} does not exist", details={"path": str(target)}
        ) from exc
    except OSError as exc:
        raise ArtifactError(f"cannot read {what} {target}: {exc}") from exc
    if len(data) > limit:
        raise BudgetExceededError(
            f"{what} {target} is larger than the {limit}-byte cap",
            details={"path": str(target), "limit_bytes": limit},
        )
    return data


def read_prefix(path: str | os.PathLike[str], size: int) -> bytes | None:
    """The first ``size`` bytes of ``path``, or ``None`` when it is not a readable file."""
    try:
        with Path(path).open("rb") as handle:
            return handle.read(size)
    except OSError:
        return None
