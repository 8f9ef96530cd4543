"""What a load returns: the verified graph plus the artifact's metadata and warnings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cairn.graph.multigraph import SemanticGraph

__all__ = [
    "FORMAT_LEGACY_V1",
    "FORMAT_V2",
    "REGENERATE_RECOMMENDATION",
    "WARNING_LEGACY_PARALLEL_FACTS",
    "LoadedArtifact",
]

FORMAT_V2 = "cairn.graph-artifact/2"
"""``LoadedArtifact.source_format`` of a verified ``graph.cairn``."""

FORMAT_LEGACY_V1 = "node-link/1"
"""``LoadedArtifact.source_format`` of a v1 node-link file."""

WARNING_LEGACY_PARALLEL_FACTS = "legacy_parallel_facts_unrecoverable"
"""v1 links carried no discriminator: which of them were distinct facts is lost."""

REGENERATE_RECOMMENDATION = (
    "regenerate the graph from source with `cairn index` to get stable, verified facts"
)


@dataclass(frozen=True, slots=True)
class LoadedArtifact:
    """A loaded graph with the metadata its file declared.

    ``degraded`` is true when the graph holds legacy (v1-derived) content: it then also
    carries ``WARNING_LEGACY_PARALLEL_FACTS`` and a ``recommendation`` to regenerate.
    (The storage-only receipt is always ``degraded`` too; that is a separate statement.)
    """

    graph: SemanticGraph
    source_format: str
    versions: Mapping[str, Any]
    repository_revision: str | None
    generation_mode: str
    generated_at: str | None
    directed: bool
    provenance: Mapping[str, Any]
    integrity_receipt: Mapping[str, Any]
    degraded: bool = False
    warnings: tuple[str, ...] = ()
    recommendation: str | None = None
    payload_sha256: str | None = None

    def summary(self) -> dict[str, Any]:
        """Plain JSON summary: format, versions, counts, receipt headline, warnings."""
        receipt = self.integrity_receipt
        cells = receipt.get("endpoint_identity", {}).get("fact_pair_counts", {})
        stable = cells.get("stable", {}).get("stable", 0) if isinstance(cells, Mapping) else 0
        return {
            "source_format": self.source_format,
            "versions": dict(self.versions),
            "repository_revision": self.repository_revision,
            "generation_mode": self.generation_mode,
            "generated_at": self.generated_at,
            "directed": self.directed,
            "counts": self.graph.counts().to_json(),
            "receipt": {
                "accounting_scope": receipt.get("accounting_scope"),
                "status": receipt.get("status"),
                "reasons": list(receipt.get("reasons", ())),
                "fully_stable_facts": stable,
            },
            "payload_sha256": self.payload_sha256,
            "degraded": self.degraded,
            "warnings": list(self.warnings),
            "recommendation": self.recommendation,
        }
