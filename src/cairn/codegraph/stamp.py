"""The index stamp: what the last whole ``cairn index`` of a folder read and wrote, so a
run whose inputs and outputs are all as that run left them says "nothing changed"
without parsing, resolving, writing or loading anything.

A stamp (``STAMP_FILENAME`` in the index folder) holds a fingerprint of every input
besides the files (Cairn's own code and the versions it depends on, the repository's
path and checked-out revision, the options that shape the outputs: excludes, a fixed
``generated_at`` (given, or from ``SOURCE_DATE_EPOCH``: ``fixed_time``), loading or not,
the embedder's space), every scanned file's path, language, signature (size, mtime,
ctime, inode) and the SHA-256 the run read, the entries the scan skipped, the identities
of the outputs (graph.cairn and manifest.json: size, mtime, inode; what is at
graph.json; cairn.db: incarnation and position) and the summary the run printed. A file
whose signature is unchanged and was last written ``RACY_MARGIN_NS`` before the stamped
run began is taken as read; any other is read and hashed again. A run that goes on to
write removes the stamp first and writes a new one only after its load committed, so a
stamp never describes outputs it did not see whole; any doubt (no stamp, another format,
a file that cannot be read) means the whole index runs, as it would without a stamp.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from cairn.artifact.atomic import atomic_write_bytes, read_bounded
from cairn.codegraph.build import IndexResult, repository_revision
from cairn.codegraph.cache import RACY_MARGIN_NS, code_fingerprint
from cairn.codegraph.scan import ScanResult, read_source, scan_repository
from cairn.errors import CairnError

__all__ = [
    "STAMP_FILENAME",
    "UNCHANGED",
    "as_unchanged",
    "code_fingerprint",
    "compare_since",
    "files_read",
    "fixed_time",
    "inputs_fingerprint",
    "remove_stamp",
    "same_files",
    "unchanged_summary",
    "write_stamp",
    "written",
]

STAMP_FILENAME = "index-stamp.json"
STAMP_FORMAT = "cairn.codegraph.stamp/1"
MAX_STAMP_BYTES = 256 * 1024 * 1024
"""A stamp larger than this is not read (the whole index runs)."""

UNCHANGED = "nothing: no input changed since the last index"
"""What the load summary's ``compared`` says when nothing was loaded because nothing
changed."""

_OUTPUT_FILES = ("graph.cairn", "manifest.json")
_LEGACY_FILE = "graph.json"
_DATABASE_FILE = "cairn.db"


def inputs_fingerprint(
    root: Path,
    folder: Path,
    *,
    excludes: Sequence[str],
    generated_at: str | None,
    load: bool,
    space: Mapping[str, Any] | None,
) -> str:
    """A SHA-256 of every input of an index besides the files themselves."""
    inputs = {
        "format": STAMP_FORMAT,
        "code": code_fingerprint(),
        "root": str(root.resolve()),
        "folder": str(folder.resolve()),
        "revision": repository_revision(root.resolve()),
        "excludes": list(excludes),
        "generated_at": fixed_time(generated_at),
        "load": load,
        "space": space,
    }
    return hashlib.sha256(orjson.dumps(inputs, option=orjson.OPT_SORT_KEYS)).hexdigest()


def fixed_time(generated_at: str | None) -> str | None:
    """The fixed ``generated_at`` graph.cairn is written with (``--generated-at``, else a
    numeric ``SOURCE_DATE_EPOCH``, resolved: the same time named either way writes the
    same bytes), or None when it is written with the time of writing."""
    from cairn.artifact.format import resolve_generated_at

    if generated_at is None and not os.environ.get("SOURCE_DATE_EPOCH", "").strip().isdigit():
        return None
    return resolve_generated_at(generated_at)


def _identity(path: Path) -> list[int] | None:
    try:
        status = path.stat()
    except OSError:
        return None
    return [status.st_size, status.st_mtime_ns, status.st_ino]


def _outputs(folder: Path) -> dict[str, Any]:
    """What is in the index folder now, as a stamp records it."""
    from cairn.artifact.folder import classify_file

    found: dict[str, Any] = {name: _identity(folder / name) for name in _OUTPUT_FILES}
    found[_LEGACY_FILE] = classify_file(folder / _LEGACY_FILE).value
    found[".gitignore"] = (folder / ".gitignore").exists()
    return found


def _database(folder: Path) -> list[Any] | None:
    from cairn.store.load import loaded_position

    found = loaded_position(folder / _DATABASE_FILE)
    return None if found is None else [found[0], found[1]]


def written(folder: Path) -> dict[str, Any]:
    """The identities of what an index wrote in ``folder`` (graph.cairn, manifest.json,
    what is at graph.json, .gitignore; cairn.db's incarnation and position): equal
    before and after only when nothing wrote there in between."""
    return {"outputs": _outputs(folder), "database": _database(folder)}


def _skipped(scan: ScanResult) -> list[Any]:
    return [entry.to_json() for entry in scan.skipped]


def remove_stamp(folder: Path) -> None:
    """Remove ``folder``'s stamp (a run that is about to write)."""
    # A folder the run cannot write to fails on its first real write instead.
    with contextlib.suppress(OSError):
        (folder / STAMP_FILENAME).unlink(missing_ok=True)


def write_stamp(
    folder: Path, fingerprint: str, result: IndexResult, summary: Mapping[str, Any]
) -> bool:
    """Stamp what the run that made ``result`` and ``summary`` read and wrote (after its
    load committed); False when it cannot be stamped (a file without a hash, a stamp
    that cannot be written): the next run then indexes whole."""
    read = files_read(result)
    if read is None:
        return False
    load = summary.get("load")
    database = _database(folder) if load is not None else None
    if load is not None and (database is None or database[1] != load.get("position")):
        return False  # another writer came in after this run's load: nothing to vouch for
    kept = {
        key: value
        for key, value in summary.items()
        if key not in ("seconds", "phase_seconds", "cache", "workers", "searchable_seconds")
    }
    stamp = {
        "format": STAMP_FORMAT,
        "inputs": fingerprint,
        **read,
        "outputs": _outputs(folder),
        "database": database,
        "summary": kept,
    }
    try:
        atomic_write_bytes(folder / STAMP_FILENAME, orjson.dumps(stamp))
    except (OSError, CairnError):
        remove_stamp(folder)
        return False
    return True


def files_read(result: IndexResult) -> dict[str, Any] | None:
    """What the run that made ``result`` read: when it began (``started_ns``), every
    scanned file's path, language, signature and SHA-256 (``files``) and the entries
    the scan skipped; None when a file has no hash or signature (it cannot be vouched
    for). ``same_files`` compares a later scan with it."""
    scan = result.scan
    if scan is None:
        return None
    hashes = {entry.path: entry.sha256 for entry in result.manifest.entries}
    files: list[Any] = []
    for scanned in scan.files:
        sha256 = hashes.get(scanned.path)
        if sha256 is None or scanned.signature is None:
            return None
        files.append([scanned.path, scanned.language, list(scanned.signature), sha256])
    return {"started_ns": result.started_ns, "files": files, "skipped": _skipped(scan)}


def _read_stamp(folder: Path) -> dict[str, Any] | None:
    path = folder / STAMP_FILENAME
    if not path.is_file():
        return None
    try:
        stamp = orjson.loads(read_bounded(path, MAX_STAMP_BYTES, "index stamp"))
    except (OSError, CairnError, orjson.JSONDecodeError):
        return None
    if not isinstance(stamp, dict) or stamp.get("format") != STAMP_FORMAT:
        return None
    return stamp


def unchanged_summary(
    root: Path, folder: Path, fingerprint: str, excludes: Sequence[str]
) -> tuple[dict[str, Any] | None, ScanResult | None]:
    """The summary of the last run when nothing it read or wrote changed since (its
    stamp says what: see the module), else None; and the scan of ``root`` it made to
    know, if it made one (the index that follows uses it instead of scanning again)."""
    stamp = _read_stamp(folder)
    if stamp is None or stamp.get("inputs") != fingerprint:
        return None, None

    def outputs_same() -> bool:
        return _outputs(folder) == stamp["outputs"] and (
            stamp["database"] is None or _database(folder) == stamp["database"]
        )

    try:
        return compare_since(
            outputs_same, lambda: scan_repository(root, excludes=excludes), stamp, stamp["summary"]
        )
    except (KeyError, TypeError, ValueError, IndexError):
        return None, None  # a stamp of another shape: the whole index runs


def compare_since(
    outputs_same: Callable[[], bool],
    rescan: Callable[[], ScanResult],
    read: Mapping[str, Any],
    summary: Mapping[str, Any],
) -> tuple[dict[str, Any] | None, ScanResult | None]:
    """``summary`` of an earlier run as "nothing changed" (``as_unchanged``, timed by
    step) when its outputs are as it left them and a scan finds the files it ``read``
    (``files_read``, or a stamp) with the same bytes; else None. With it, the scan when
    one was made (an index that follows uses it instead of scanning again)."""
    started = time.perf_counter()
    if not outputs_same():
        return None, None
    checked = time.perf_counter()
    scan = rescan()
    scanned = time.perf_counter()
    if not same_files(scan, read):
        return None, scan
    ended = time.perf_counter()
    spent = {
        "checking outputs": round(checked - started, 3),
        "scanning": round(scanned - checked, 3),
        "comparing files": round(ended - scanned, 3),
    }
    return as_unchanged(summary, spent, ended - started), scan


def as_unchanged(
    summary: Mapping[str, Any], phase_seconds: Mapping[str, float], seconds: float
) -> dict[str, Any]:
    """``summary`` of an earlier run as the summary of a run that found nothing changed
    since it (``"unchanged": true``; its load changed nothing, compared ``UNCHANGED``)."""
    summary = dict(summary)
    summary["phase_seconds"] = dict(phase_seconds)
    summary["seconds"] = round(seconds, 3)
    summary["cache"] = None
    summary["unchanged"] = True
    load = summary.get("load")
    if isinstance(load, dict):
        summary["searchable_seconds"] = 0.0  # it was before this run began
        summary["load"] = {
            **load,
            "changes": 0,
            "up_to_date": True,
            "mutations": {},
            "repaired": [],
            "compared": UNCHANGED,
        }
    return summary


def same_files(scan: ScanResult, stamp: Mapping[str, Any]) -> bool:
    """Whether the scan finds the files a run read (``files_read``, or a stamp) with the
    bytes it read, and the entries it skipped."""
    if _skipped(scan) != stamp["skipped"]:
        return False
    files = stamp["files"]
    if len(files) != len(scan.files):
        return False
    trusted_before = int(stamp["started_ns"]) - RACY_MARGIN_NS
    for scanned, (path, language, signature, sha256) in zip(scan.files, files, strict=True):
        if scanned.path != path or scanned.language != language:
            return False
        now = scanned.signature
        if now is not None and list(now) == signature and max(now[1], now[2]) < trusted_before:
            continue
        read = read_source(scan.root, scanned)
        if read.outcome.sha256 != sha256:
            return False
    return True
