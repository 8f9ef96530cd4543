"""The storage-only receipt computed from endpoint-identity index pairs (fast path).

``cairn.graph.receipt.build_receipt`` walks every fact object. Artifact code already
holds each fact's endpoint identities as indices into the identity table, so it counts
index pairs and expands the counts once per distinct pair. The receipt's fixed parts
come from ``build_receipt`` of an empty graph, so only the counting is restated here;
a property test proves the result equal to ``build_receipt`` of the same graph.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from cairn.graph.model import EndpointIdentity
from cairn.graph.multigraph import SemanticGraph
from cairn.graph.receipt import build_receipt

__all__ = ["receipt_from_pairs"]


def receipt_from_pairs(
    pairs: Counter[tuple[int, int]],
    identities: Sequence[EndpointIdentity],
    unregistered: Mapping[str, int],
) -> dict[str, Any]:
    """The receipt of a graph whose facts have the given (source, target) identity pairs."""
    receipt = build_receipt(SemanticGraph())
    section = receipt["endpoint_identity"]
    cells: dict[str, dict[str, int]] = section["fact_pair_counts"]
    reasons: dict[str, int] = {}
    for (source_index, target_index), count in pairs.items():
        source, target = identities[source_index], identities[target_index]
        cells[source.status.value][target.status.value] += count
        for reason in {*source.reasons, *target.reasons}:
            reasons[reason.value] = reasons.get(reason.value, 0) + count
    section["reason_fact_counts"] = dict(sorted(reasons.items()))
    receipt["storage_admission"]["unregistered_relation_admissions"] = dict(
        sorted(unregistered.items())
    )
    return receipt
