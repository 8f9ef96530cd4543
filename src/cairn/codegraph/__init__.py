"""Repository -> semantic graph: scanning, language adapters, resolution, the pipeline."""

from __future__ import annotations

from cairn.codegraph.build import (
    IndexResult,
    WrittenIndex,
    default_workers,
    extract_file,
    index_repository,
    index_summary,
    write_index,
)
from cairn.codegraph.scan import FileOutcome, Manifest, ScanResult, scan_repository

__all__ = [
    "FileOutcome",
    "IndexResult",
    "Manifest",
    "ScanResult",
    "WrittenIndex",
    "default_workers",
    "extract_file",
    "index_repository",
    "index_summary",
    "scan_repository",
    "write_index",
]
