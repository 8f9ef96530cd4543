"""Named versions, file names, caps and tuning knobs of the graph artifact, in one place.

Every number the artifact reader, writer and the v1 importer apply is declared here, so
a reader can see what is bounded and by how much, and tests refer to the same values.
"""

from __future__ import annotations

__all__ = [
    "ARTIFACT_FILENAME",
    "ARTIFACT_HEADER",
    "ARTIFACT_HEADER_PREFIX",
    "ENDPOINT_IDENTITY_POLICY",
    "GENERATION_MODE_FULL",
    "GENERATION_MODE_LEGACY_IMPORT",
    "GRAPH_ARTIFACT_VERSION",
    "LEGACY_ADAPTER_ID",
    "LEGACY_FILENAME",
    "LEGACY_PRESERVED_FILENAME",
    "LEGACY_STRATEGY",
    "MAX_ARTIFACT_BYTES",
    "MAX_LEGACY_BYTES",
    "MAX_LEGACY_RECORDS",
    "MIN_RECORD_BYTES",
    "NFC_WINDOW_BYTES",
    "NODE_LINK_EXPORT_FORMAT",
    "PARALLEL_MIN_BYTES",
    "PARALLEL_MIN_WRITE_OBJECTS",
    "PARALLEL_WORKERS",
    "SNIFF_BYTES",
    "TOMBSTONE_HEADER",
    "TOMBSTONE_PREFIX",
    "V2_READER_MIN_VERSION",
    "VERIFY_CHUNK_OBJECTS",
    "WRITE_CHUNKS",
]

GRAPH_ARTIFACT_VERSION = 2
"""Version of the ``graph.cairn`` format written and read here (spec §11)."""

ARTIFACT_HEADER_PREFIX = b"CAIRN_GRAPH_ARTIFACT/"
ARTIFACT_HEADER = ARTIFACT_HEADER_PREFIX + str(GRAPH_ARTIFACT_VERSION).encode() + b"\n"
"""The first line of every ``graph.cairn``; it also makes the file invalid JSON."""

TOMBSTONE_PREFIX = b"CAIRN_GRAPH_MOVED/"
TOMBSTONE_HEADER = TOMBSTONE_PREFIX + str(GRAPH_ARTIFACT_VERSION).encode() + b"\n"
"""The first line of the ``graph.json`` tombstone left behind by folder activation."""

V2_READER_MIN_VERSION = "0.1.0"
"""The first Cairn release that reads ``graph.cairn`` v2 (named in the tombstone)."""

ENDPOINT_IDENTITY_POLICY = "cairn.endpoint-identity/1"
"""The endpoint identity qualification policy (spec §3) the artifact's nodes follow."""

GENERATION_MODE_FULL = "full"
"""Generation mode of a graph built from source by a complete run."""

GENERATION_MODE_LEGACY_IMPORT = "legacy_v1_import"
"""Generation mode of a graph converted from a v1 node-link file (always degraded)."""

ARTIFACT_FILENAME = "graph.cairn"
LEGACY_FILENAME = "graph.json"
LEGACY_PRESERVED_FILENAME = "graph.v1.json"

LEGACY_ADAPTER_ID = "cairn.legacy_v1"
"""Adapter ID recorded on every occurrence created by the v1 importer."""

LEGACY_STRATEGY = "node_link_import"
"""Strategy recorded on every occurrence created by the v1 importer."""

NODE_LINK_EXPORT_FORMAT = "cairn.node-link-export/1"
"""Format tag of the lossy node-link export (never a v1 artifact)."""

MAX_ARTIFACT_BYTES = 4 * 1024**3
"""Largest ``graph.cairn`` the reader accepts (4 GiB); larger files are refused."""

MAX_LEGACY_BYTES = 256 * 1024**2
"""Largest v1 node-link file the importer reads (256 MiB)."""

MAX_LEGACY_RECORDS = 2_000_000
"""Most nodes plus links a v1 file may hold before the importer refuses it."""

SNIFF_BYTES = 64
"""How many leading bytes are read to tell v2, tombstone and v1 files apart."""

PARALLEL_WORKERS = 1
"""Forked worker processes that verify while the main process builds records.

The main process is the bottleneck (it must build every record), so one worker uses
the second core; with more workers than spare cores they would slow the main process.
"""

PARALLEL_MIN_BYTES = 8 * 1024**2
"""Below this body size (8 MiB) a load verifies in one process; forking costs more."""

PARALLEL_MIN_WRITE_OBJECTS = 50_000
"""Below this many occurrences, an artifact is printed in one process."""

MIN_RECORD_BYTES = 120
"""A lower bound on the bytes one fact or occurrence takes, to plan ID-check ranges."""

VERIFY_CHUNK_OBJECTS = 40_000
"""Facts or occurrences handed to one verification task."""

WRITE_CHUNKS = 8
"""Row chunks a large occurrence section is printed in (a worker may share them)."""

NFC_WINDOW_BYTES = 1024**2
"""About how many bytes of a written body one NFC check decodes at a time."""
