"""Repository -> semantic graph: scanning, language adapters, resolution, the pipeline.

The names below are imported on first use (PEP 562), so a light submodule (the
handoff to a running ``cairn watch``, the summary's printing) does not pay for the
whole pipeline's import.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_HOMES = {
    "FileOutcome": "scan",
    "Manifest": "scan",
    "ScanResult": "scan",
    "scan_repository": "scan",
}


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(f"{__name__}.{_HOMES.get(name, 'build')}")
    value = getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
