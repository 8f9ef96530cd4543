"""The safe move of an output folder from v1 ``graph.json`` to ``graph.cairn`` (spec §12).

Folder states, decided from the files present:

* ``current_v2``: ``graph.cairn`` exists; it is what readers use (never a fallback).
* ``legacy_v1``: no ``graph.cairn``; ``graph.json`` (or else ``graph.v1.json``) is v1.
* ``moved_without_canonical``: no ``graph.cairn`` but ``graph.json`` is the tombstone.
* ``missing``: none of them.

Activation writes three files, each atomically, in an order where every intermediate
state is readable: the valid v1 ``graph.json`` is first copied byte for byte to
``graph.v1.json``, then ``graph.cairn`` is written, and only then is ``graph.json``
replaced by the tombstone. A crash therefore leaves ``legacy_v1`` or ``current_v2``,
never a folder whose only graph is gone.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cairn.artifact.atomic import atomic_write_bytes, read_bounded, read_prefix
from cairn.artifact.format import write_artifact
from cairn.artifact.legacy import decode_legacy_v1, load_legacy_v1
from cairn.artifact.limits import (
    ARTIFACT_FILENAME,
    ARTIFACT_HEADER_PREFIX,
    GENERATION_MODE_FULL,
    LEGACY_FILENAME,
    LEGACY_PRESERVED_FILENAME,
    MAX_LEGACY_BYTES,
    SNIFF_BYTES,
    TOMBSTONE_HEADER,
    TOMBSTONE_PREFIX,
    V2_READER_MIN_VERSION,
)
from cairn.artifact.reader import read_artifact
from cairn.artifact.result import LoadedArtifact
from cairn.errors import ArtifactCorruptError, ArtifactError, ArtifactMovedError, NotFoundError
from cairn.graph.multigraph import SemanticGraph

if TYPE_CHECKING:
    from cairn.artifact.segments import PrintedSegments

__all__ = [
    "TOMBSTONE",
    "ActivationResult",
    "FileKind",
    "FolderState",
    "FolderStatus",
    "activate_folder",
    "check_activation",
    "classify_file",
    "folder_status",
    "load_graph",
    "read_folder",
]

TOMBSTONE = TOMBSTONE_HEADER + f"Use graph.cairn with cairn >= {V2_READER_MIN_VERSION}.\n".encode()
"""The exact bytes that replace ``graph.json`` on activation (not JSON, by design)."""


class FolderState(StrEnum):
    """Which graph an output folder holds, from the files present."""

    CURRENT_V2 = "current_v2"
    LEGACY_V1 = "legacy_v1"
    MOVED_WITHOUT_CANONICAL = "moved_without_canonical"
    MISSING = "missing"


class FileKind(StrEnum):
    """What a graph file is, judged from its first bytes."""

    ARTIFACT = "artifact"
    TOMBSTONE = "tombstone"
    LEGACY_JSON = "legacy_json"
    UNKNOWN = "unknown"
    ABSENT = "absent"


def classify_file(path: str | os.PathLike[str]) -> FileKind:
    """Sniff ``path``: a ``graph.cairn`` (any version), a tombstone, JSON, or unknown."""
    prefix = read_prefix(path, SNIFF_BYTES) if Path(path).is_file() else None
    if prefix is None:
        return FileKind.ABSENT
    if prefix.startswith(ARTIFACT_HEADER_PREFIX):
        return FileKind.ARTIFACT
    if prefix.startswith(TOMBSTONE_PREFIX):
        return FileKind.TOMBSTONE
    if prefix.lstrip(b" \t\r\n").startswith(b"{"):
        return FileKind.LEGACY_JSON
    return FileKind.UNKNOWN


@dataclass(frozen=True, slots=True)
class FolderStatus:
    """A folder's state, the file a reader would use, and which graph files exist."""

    folder: Path
    state: FolderState
    reader_path: Path | None
    artifact: FileKind
    legacy: FileKind
    preserved_v1: FileKind

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form (paths relative to the folder)."""
        return {
            "state": self.state.value,
            "reader_file": self.reader_path.name if self.reader_path else None,
            "files": {
                ARTIFACT_FILENAME: self.artifact.value,
                LEGACY_FILENAME: self.legacy.value,
                LEGACY_PRESERVED_FILENAME: self.preserved_v1.value,
            },
        }


def folder_status(folder: str | os.PathLike[str]) -> FolderStatus:
    """Decide the folder state and reader precedence: graph.cairn, graph.json, graph.v1.json."""
    root = Path(folder)
    artifact = classify_file(root / ARTIFACT_FILENAME)
    legacy = classify_file(root / LEGACY_FILENAME)
    preserved = classify_file(root / LEGACY_PRESERVED_FILENAME)
    if artifact is not FileKind.ABSENT:
        state, reader = FolderState.CURRENT_V2, root / ARTIFACT_FILENAME
    elif legacy is FileKind.TOMBSTONE:
        state, reader = FolderState.MOVED_WITHOUT_CANONICAL, None
    elif legacy is not FileKind.ABSENT:
        state, reader = FolderState.LEGACY_V1, root / LEGACY_FILENAME
    elif preserved is not FileKind.ABSENT:
        state, reader = FolderState.LEGACY_V1, root / LEGACY_PRESERVED_FILENAME
    else:
        state, reader = FolderState.MISSING, None
    return FolderStatus(root, state, reader, artifact, legacy, preserved)


def read_folder(folder: str | os.PathLike[str], *, strict: bool = False) -> LoadedArtifact:
    """Load the graph a folder holds, by precedence; a tombstone alone is an error."""
    status = folder_status(folder)
    if status.state is FolderState.CURRENT_V2:
        assert status.reader_path is not None
        return read_artifact(status.reader_path, strict=strict)
    if status.state is FolderState.LEGACY_V1:
        assert status.reader_path is not None
        return load_legacy_v1(status.reader_path, strict=strict)
    if status.state is FolderState.MOVED_WITHOUT_CANONICAL:
        hint = (
            f"; the previous v1 graph is preserved in {LEGACY_PRESERVED_FILENAME}"
            if status.preserved_v1 is not FileKind.ABSENT
            else ""
        )
        raise ArtifactMovedError(
            f"{status.folder / LEGACY_FILENAME} is a tombstone and {ARTIFACT_FILENAME} is "
            f"missing: regenerate the graph{hint}",
            details={"folder_state": status.state.value},
        )
    raise NotFoundError(
        f"{status.folder} holds no graph ({ARTIFACT_FILENAME} or {LEGACY_FILENAME})",
        details={"folder_state": status.state.value},
    )


def load_graph(path: str | os.PathLike[str], *, strict: bool = False) -> LoadedArtifact:
    """Load a folder, a ``graph.cairn``, or a v1 JSON file; tombstones raise ``moved``."""
    target = Path(path)
    if target.is_dir():
        return read_folder(target, strict=strict)
    kind = classify_file(target)
    if kind in (FileKind.ARTIFACT, FileKind.TOMBSTONE):
        return read_artifact(target, strict=strict)
    if kind is FileKind.LEGACY_JSON:
        return load_legacy_v1(target, strict=strict)
    if kind is FileKind.ABSENT:
        raise NotFoundError(f"{target} does not exist", details={"path": str(target)})
    raise ArtifactCorruptError(f"{target} is neither a graph.cairn, a tombstone nor v1 JSON")


@dataclass(frozen=True, slots=True)
class ActivationResult:
    """What activation did: the artifact written, whether v1 was preserved, the new state."""

    status: FolderStatus
    artifact_bytes: int
    preserved_v1: bool
    tombstone_written: bool

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {
            "folder": self.status.to_json(),
            "artifact_bytes": self.artifact_bytes,
            "preserved_v1": self.preserved_v1,
            "tombstone_written": self.tombstone_written,
        }


def activate_folder(
    folder: str | os.PathLike[str],
    graph: SemanticGraph,
    *,
    repository_revision: str | None = None,
    generation_mode: str = GENERATION_MODE_FULL,
    generated_at: str | datetime | None = None,
    directed: bool = True,
    provenance: dict[str, Any] | None = None,
    printed: PrintedSegments | None = None,
) -> ActivationResult:
    """Write ``graph`` as ``folder/graph.cairn`` and move any v1 ``graph.json`` aside safely.

    Only a folder that already has a ``graph.json`` gets the tombstone in its place. A
    ``graph.json`` that is neither a valid (bounded) v1 graph nor a tombstone is never
    overwritten: activation refuses before writing anything. An existing
    ``graph.v1.json`` with other bytes is never overwritten either. ``printed``: as for
    ``write_artifact``.
    """
    root = Path(folder)
    root.mkdir(parents=True, exist_ok=True)
    legacy_path = root / LEGACY_FILENAME
    legacy_kind, original = _replaceable_legacy(legacy_path)
    preserved = False
    if original is not None:
        preserved = _preserve(root / LEGACY_PRESERVED_FILENAME, original)
    size = write_artifact(
        root / ARTIFACT_FILENAME,
        graph,
        repository_revision=repository_revision,
        generation_mode=generation_mode,
        generated_at=generated_at,
        directed=directed,
        provenance=provenance,
        printed=printed,
    )
    # A tombstone only replaces a graph.json that was there: a folder that never had one
    # has no old reader to stop, and a new file would only be clutter.
    tombstone_written = legacy_kind is not FileKind.ABSENT and (
        legacy_kind is not FileKind.TOMBSTONE or _read(legacy_path) != TOMBSTONE
    )
    if tombstone_written:
        atomic_write_bytes(legacy_path, TOMBSTONE)
    return ActivationResult(folder_status(root), size, preserved, tombstone_written)


def check_activation(folder: str | os.PathLike[str]) -> None:
    """Refuse now what ``activate_folder`` would refuse before writing anything (a
    ``graph.json`` that is neither a valid v1 graph nor a tombstone): for a writer that
    does other work first (a ``cairn watch`` round loads the database before it writes
    ``graph.cairn``)."""
    _replaceable_legacy(Path(folder) / LEGACY_FILENAME)


def _replaceable_legacy(legacy_path: Path) -> tuple[FileKind, bytes | None]:
    """What is at ``graph.json`` and, for a v1 graph, its bytes (to preserve); anything
    else there (neither a valid bounded v1 graph nor a tombstone) raises."""
    kind = classify_file(legacy_path)
    if kind is FileKind.ABSENT or kind is FileKind.TOMBSTONE:
        return kind, None
    original = read_bounded(legacy_path, MAX_LEGACY_BYTES, "v1 graph")
    try:
        decode_legacy_v1(original)
    except ArtifactError as exc:
        raise type(exc)(
            f"refusing to replace {legacy_path}: it is not a valid v1 graph ({exc.message})"
        ) from exc
    return kind, original


def _read(path: Path) -> bytes | None:
    return read_prefix(path, len(TOMBSTONE) + 1)


def _preserve(target: Path, original: bytes) -> bool:
    """Copy v1 bytes to ``graph.v1.json``; an identical copy is kept, a different one refused."""
    if target.exists():
        if target.read_bytes() == original:
            return False
        raise ArtifactError(
            f"{target} already holds a different v1 graph; move it away before activating",
            details={"path": str(target)},
        )
    atomic_write_bytes(target, original)
    return True
