"""The graph artifact: ``graph.cairn`` v2, legacy v1 import, folder activation, export.

``write_artifact`` / ``encode_artifact`` print a graph as deterministic, canonical,
header-guarded bytes; ``read_artifact`` / ``decode_artifact`` verify every version,
fact ID, occurrence ID, the receipt and the counts before returning a graph.
``load_legacy_v1`` reads node-link JSON as visibly degraded (refused in strict mode).
``activate_folder`` moves an output folder from ``graph.json`` to ``graph.cairn``
safely, ``folder_status`` / ``read_folder`` / ``load_graph`` apply the reader
precedence, and ``export_node_link`` writes a node-link view labelled lossy.
"""

from __future__ import annotations

from cairn.artifact.export import EXPORT_DROPPED, export_node_link, write_node_link_export
from cairn.artifact.folder import (
    TOMBSTONE,
    ActivationResult,
    FileKind,
    FolderState,
    FolderStatus,
    activate_folder,
    classify_file,
    folder_status,
    load_graph,
    read_folder,
)
from cairn.artifact.format import (
    artifact_payload,
    encode_artifact,
    resolve_generated_at,
    write_artifact,
)
from cairn.artifact.info import artifact_info, import_v1, verify_report
from cairn.artifact.legacy import decode_legacy_v1, load_legacy_v1
from cairn.artifact.limits import (
    ARTIFACT_FILENAME,
    ARTIFACT_HEADER,
    ENDPOINT_IDENTITY_POLICY,
    GENERATION_MODE_FULL,
    GENERATION_MODE_LEGACY_IMPORT,
    GRAPH_ARTIFACT_VERSION,
    LEGACY_FILENAME,
    LEGACY_PRESERVED_FILENAME,
    MAX_ARTIFACT_BYTES,
    MAX_LEGACY_BYTES,
    MAX_LEGACY_RECORDS,
)
from cairn.artifact.reader import decode_artifact, read_artifact
from cairn.artifact.result import (
    FORMAT_LEGACY_V1,
    FORMAT_V2,
    WARNING_LEGACY_PARALLEL_FACTS,
    LoadedArtifact,
)
from cairn.artifact.schema import expected_versions

__all__ = [
    "ARTIFACT_FILENAME",
    "ARTIFACT_HEADER",
    "ENDPOINT_IDENTITY_POLICY",
    "EXPORT_DROPPED",
    "FORMAT_LEGACY_V1",
    "FORMAT_V2",
    "GENERATION_MODE_FULL",
    "GENERATION_MODE_LEGACY_IMPORT",
    "GRAPH_ARTIFACT_VERSION",
    "LEGACY_FILENAME",
    "LEGACY_PRESERVED_FILENAME",
    "MAX_ARTIFACT_BYTES",
    "MAX_LEGACY_BYTES",
    "MAX_LEGACY_RECORDS",
    "TOMBSTONE",
    "WARNING_LEGACY_PARALLEL_FACTS",
    "ActivationResult",
    "FileKind",
    "FolderState",
    "FolderStatus",
    "LoadedArtifact",
    "activate_folder",
    "artifact_info",
    "artifact_payload",
    "classify_file",
    "decode_artifact",
    "decode_legacy_v1",
    "encode_artifact",
    "expected_versions",
    "export_node_link",
    "folder_status",
    "import_v1",
    "load_graph",
    "load_legacy_v1",
    "read_artifact",
    "read_folder",
    "resolve_generated_at",
    "verify_report",
    "write_artifact",
    "write_node_link_export",
]
