"""The shape of a ``graph.cairn`` v2 payload: top-level keys, tables and record columns.

Records are stored column-wise: ``nodes``, ``facts`` and ``occurrences`` are objects
whose members are equally long arrays, row ``i`` of every column describing record
``i``, rows ordered by record ID. Values many records share (endpoint identities,
discriminators, occurrence owners) sit once in a table sorted by canonical bytes, and
columns refer to them by index. Hyperedges, being few, are plain objects.

This layout parses three to four times faster than one object per record and keeps
the file a third of the size; it is described in ``docs/artifact.md``.
"""

from __future__ import annotations

from typing import Any

from cairn.artifact.limits import ENDPOINT_IDENTITY_POLICY, GRAPH_ARTIFACT_VERSION
from cairn.graph.identity import FACT_IDENTITY_SCHEMA_VERSION, OCCURRENCE_IDENTITY_SCHEMA_VERSION
from cairn.graph.receipt import RECEIPT_SCHEMA_VERSION
from cairn.graph.registry import REGISTRY_ID

__all__ = [
    "FACT_COLUMNS",
    "HYPEREDGE_KEYS",
    "NODE_COLUMNS",
    "OCCURRENCE_COLUMNS",
    "PAYLOAD_KEYS",
    "TABLE_KEYS",
    "VERSION_KEYS",
    "expected_versions",
]

VERSION_KEYS = (
    "graph_artifact",
    "fact_identity",
    "occurrence_identity",
    "relation_registry",
    "endpoint_identity_policy",
    "receipt_schema",
)
"""Every member of ``versions``; each must be present and equal to what Cairn expects."""

NODE_COLUMNS = ("id", "kind", "identity", "attributes")
FACT_COLUMNS = (
    "id",
    "direction",
    "source",
    "target",
    "relation",
    "discriminator",
    "source_identity",
    "target_identity",
    "occurrence_ids",
    "annotation_variants",
)
OCCURRENCE_COLUMNS = (
    "id",
    "fact_id",
    "owner",
    "source_file",
    "source_range",
    "target_file",
    "target_range",
    "site_kind",
    "adapter_evidence_key",
    "provenance",
    "confidence_observations",
    "metadata_variants",
    "diagnostics",
)
HYPEREDGE_KEYS = ("id", "relation", "members", "attributes")

TABLE_KEYS = ("endpoint_identities", "discriminators", "occurrence_owners")
"""Shared-value tables, each sorted by canonical bytes with no duplicates or unused rows."""

PAYLOAD_KEYS = frozenset(
    {
        "versions",
        "repository_revision",
        "generation_mode",
        "generated_at",
        "directed",
        *TABLE_KEYS,
        "nodes",
        "facts",
        "occurrences",
        "hyperedges",
        "community_labels",
        "counts",
        "admission",
        "integrity_receipt",
        "provenance",
        "payload_sha256",
    }
)
"""Every top-level key of a v2 payload; the reader accepts exactly these."""


def expected_versions(registry_id: str = REGISTRY_ID) -> dict[str, Any]:
    """The ``versions`` object this Cairn writes and the only one it reads."""
    return {
        "graph_artifact": GRAPH_ARTIFACT_VERSION,
        "fact_identity": FACT_IDENTITY_SCHEMA_VERSION,
        "occurrence_identity": OCCURRENCE_IDENTITY_SCHEMA_VERSION,
        "relation_registry": registry_id,
        "endpoint_identity_policy": ENDPOINT_IDENTITY_POLICY,
        "receipt_schema": RECEIPT_SCHEMA_VERSION,
    }
