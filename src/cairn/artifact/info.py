"""The core of ``cairn graph info``, ``verify`` and ``import-v1``, kept out of the CLI."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from cairn.artifact.folder import activate_folder, classify_file, folder_status, load_graph
from cairn.artifact.legacy import load_legacy_v1
from cairn.artifact.limits import ARTIFACT_FILENAME, GENERATION_MODE_LEGACY_IMPORT
from cairn.artifact.result import FORMAT_V2
from cairn.graph.model import thaw

__all__ = ["artifact_info", "import_v1", "verify_report"]


def artifact_info(path: str | os.PathLike[str], *, strict: bool = False) -> dict[str, Any]:
    """Versions, counts, receipt summary, warnings and folder state of a graph file or folder.

    The graph is loaded exactly as any reader loads it (a v2 artifact fully verified),
    so the summary never describes something that would not load.
    """
    target = Path(path)
    loaded = load_graph(target, strict=strict)
    folder = target if target.is_dir() else target.parent
    summary = loaded.summary()
    summary["path"] = str(target)
    summary["file_kind"] = "folder" if target.is_dir() else classify_file(target).value
    summary["size_bytes"] = None if target.is_dir() else target.stat().st_size
    summary["verified"] = loaded.source_format == FORMAT_V2
    summary["folder"] = folder_status(folder).to_json()
    return summary


def verify_report(path: str | os.PathLike[str], *, strict: bool = False) -> dict[str, Any]:
    """The verification verdict for ``path`` plus the counts it verified."""
    info = artifact_info(path, strict=strict)
    return {
        "path": info["path"],
        "source_format": info["source_format"],
        "verified": info["verified"],
        "degraded": info["degraded"],
        "warnings": info["warnings"],
        "recommendation": info["recommendation"],
        "counts": info["counts"],
        "folder_state": info["folder"]["state"],
    }


def import_v1(
    source: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    generated_at: str | None = None,
) -> dict[str, Any]:
    """Load a v1 file (degraded) and activate ``out`` with it as ``graph.cairn``.

    The artifact keeps the legacy nodes, facts and diagnostics, records the generation
    mode ``legacy_v1_import`` and the v1 provenance, and so stays visibly degraded.
    """
    loaded = load_legacy_v1(source)
    activation = activate_folder(
        out,
        loaded.graph,
        generation_mode=GENERATION_MODE_LEGACY_IMPORT,
        generated_at=generated_at,
        directed=loaded.directed,
        provenance={**thaw(loaded.provenance), "imported_from": Path(source).name},
    )
    return {
        "source": str(source),
        "activation": activation.to_json(),
        "graph": artifact_info(Path(out) / ARTIFACT_FILENAME),
    }
