"""Show me X: a symbol by name with its document and its source lines, read from the
indexed checkout, and a plain ``stale`` flag when the file is no longer what was indexed.

The lines come from the file on disk (the database keeps ranges, not whole files); the
manifest written by the same ``cairn index`` (``manifest.json`` beside the database)
holds each file's SHA-256, so a file edited since is answered with ``stale: true`` and
no lines, never with other code presented as current. Without a manifest the answer
says the freshness is unknown (``stale: null``). Lines are bounded in bytes.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cairn.errors import CorruptionError, ValidationError
from cairn.search.names import NameResolution, resolve_name
from cairn.search.rules import MAX_SHOW_BYTES, check_record
from cairn.store.reads import DocumentResult, read_document
from cairn.store.validation import check_served_database

if TYPE_CHECKING:
    from cairn.index.database import Database
    from cairn.store.database import PrincipalLike

__all__ = [
    "DEFAULT_SOURCE_BYTES",
    "MAX_SOURCE_BYTES",
    "ShowAnswer",
    "ShowRequest",
    "Source",
    "SourceLines",
    "checkout_of",
    "show",
    "show_request",
    "source_of",
]

DEFAULT_SOURCE_BYTES = 16_000
"""Source bytes returned unless asked otherwise."""

MAX_SOURCE_BYTES = MAX_SHOW_BYTES
"""Upper bound on the source bytes one answer returns."""

MANIFEST_NAME = "manifest.json"
INDEX_FOLDER = ".cairn"


@dataclass(frozen=True, slots=True)
class SourceLines:
    """Lines ``start``..``end`` (1-based, inclusive) of ``path``; ``truncated`` when the
    byte bound cut them short."""

    path: str
    start: int
    end: int
    lines: tuple[str, ...]
    truncated: bool


@dataclass(frozen=True, slots=True)
class ShowAnswer:
    """The resolved name, its document, its source lines, and whether they are stale."""

    resolution: NameResolution
    document: DocumentResult | None
    source: SourceLines | None
    stale: bool | None
    reason: str | None


def _manifest_hashes(path: Path) -> dict[str, str | None] | None:
    try:
        data = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise CorruptionError(f"cannot read the index manifest {path}: {exc}") from exc
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, list):
        raise CorruptionError(f"the index manifest {path} has no file list")
    return {row["path"]: row.get("sha256") for row in files if isinstance(row, dict)}


def _lines(data: bytes, path: str, start: int, end: int, budget: int) -> SourceLines:
    text = data.decode("utf-8", errors="replace").splitlines()
    picked: list[str] = []
    used = 0
    truncated = False
    for line in text[start - 1 : end]:
        size = len(line.encode("utf-8")) + 1
        if used + size > budget:
            truncated = True
            break
        picked.append(line)
        used += size
    return SourceLines(path, start, start + len(picked) - 1, tuple(picked), truncated)


@dataclass(frozen=True, slots=True)
class ShowRequest:
    """Show ``name``: its document and up to ``max_bytes`` of its source (HTTP, SDK)."""

    database: str
    name: str
    max_bytes: int = DEFAULT_SOURCE_BYTES


def show_request(db: Database, request: ShowRequest, principal: PrincipalLike = None) -> ShowAnswer:
    """``show`` for a request record (fields held to their rules), from the checkout
    beside the database."""
    check_record(request)
    check_served_database(request.database, db.name)
    return show(db, request.name, max_bytes=request.max_bytes, principal=principal)


@dataclass(frozen=True, slots=True)
class Source:
    """A document's source lines (or None) and whether they are stale, with why not."""

    lines: SourceLines | None
    stale: bool | None
    reason: str | None


def checkout_of(db: Database, root: Path | str | None = None) -> tuple[Path | None, Path]:
    """The checkout root (given, or the folder holding the database's ``.cairn/``) and
    the index manifest beside the database."""
    folder = Path(db.path).resolve().parent
    base = (
        Path(root) if root is not None else folder.parent if folder.name == INDEX_FOLDER else None
    )
    return base, folder / MANIFEST_NAME


def source_of(
    body: Any, base: Path | None, listing: Path, max_bytes: int = DEFAULT_SOURCE_BYTES
) -> Source:
    """The lines of a document body's ``path`` and ``range`` in the checkout at
    ``base``, checked against the manifest at ``listing`` (stale: no lines)."""
    path, found = body.get("path"), body.get("range")
    if not isinstance(path, str):
        return Source(None, None, "the node has no file")
    if base is None:
        return Source(None, None, "no checkout root (give --root)")
    try:
        data = (base / path).read_bytes()
    except FileNotFoundError:
        return Source(None, True, f"{path} is gone from the checkout")
    except OSError as exc:
        return Source(None, None, f"cannot read {path}: {exc}")
    hashes = _manifest_hashes(listing)
    if hashes is None:
        stale, reason = None, "no index manifest: freshness unknown"
    elif hashes.get(path) != hashlib.sha256(data).hexdigest():
        return Source(None, True, f"{path} changed since it was indexed")
    else:
        stale, reason = False, None
    if isinstance(found, list | tuple) and len(found) == 4:
        start, end = int(found[0]), int(found[2])
    else:
        start, end = 1, len(data.splitlines())
    return Source(_lines(data, path, start, end, max_bytes), stale, reason)


def show(
    db: Database,
    name: str,
    *,
    root: Path | str | None = None,
    manifest: Path | str | None = None,
    max_bytes: int = DEFAULT_SOURCE_BYTES,
    principal: PrincipalLike = None,
) -> ShowAnswer:
    """Resolve ``name`` and return its document and source lines from the checkout at
    ``root`` (default: the folder holding the database's ``.cairn/``)."""
    if type(max_bytes) is not int or not 0 <= max_bytes <= MAX_SOURCE_BYTES:
        raise ValidationError(f"max_bytes must be an integer in 0..{MAX_SOURCE_BYTES}")
    base, listing = checkout_of(db, root)
    if manifest is not None:
        listing = Path(manifest)
    with db.read_cut(principal) as cut:
        resolution = resolve_name(cut, name)
        if resolution.match is None:
            return ShowAnswer(resolution, None, None, None, None)
        ref = resolution.match.ref
        document = read_document(cut, ref.collection, ref.id)
    found = source_of(document.body, base, listing, max_bytes)
    return ShowAnswer(resolution, document, found.lines, found.stale, found.reason)
