"""The in-memory semantic multigraph: records, identities, registry, admission, views."""

from __future__ import annotations

from cairn.graph.diff import FactEvidenceChange, GraphDiff, diff_graphs
from cairn.graph.model import (
    ConfidenceObservation,
    Direction,
    Discriminator,
    EndpointIdentity,
    EvidenceOccurrence,
    FactEndpointIdentity,
    Hyperedge,
    IdentityReason,
    IdentityStatus,
    Node,
    OccurrenceOwner,
    SemanticFact,
    SourceRange,
)
from cairn.graph.multigraph import (
    AdmissionOutcome,
    AdmissionResult,
    GraphCounts,
    OccurrenceInput,
    SemanticGraph,
)
from cairn.graph.receipt import build_receipt, fully_stable_facts, validate_receipt
from cairn.graph.registry import REGISTRY, REGISTRY_ID, RelationRegistry, RelationSpec

__all__ = [
    "REGISTRY",
    "REGISTRY_ID",
    "AdmissionOutcome",
    "AdmissionResult",
    "ConfidenceObservation",
    "Direction",
    "Discriminator",
    "EndpointIdentity",
    "EvidenceOccurrence",
    "FactEndpointIdentity",
    "FactEvidenceChange",
    "GraphCounts",
    "GraphDiff",
    "Hyperedge",
    "IdentityReason",
    "IdentityStatus",
    "Node",
    "OccurrenceInput",
    "OccurrenceOwner",
    "RelationRegistry",
    "RelationSpec",
    "SemanticFact",
    "SemanticGraph",
    "SourceRange",
    "build_receipt",
    "diff_graphs",
    "fully_stable_facts",
    "validate_receipt",
]
