"""The storage-only integrity receipt (spec §10): what storage can vouch for, and no more.

``fact_pair_counts`` is an exact partition: every retained fact sits in exactly one of
the 16 (source status x target status) cells, using the fact's stored endpoint order
(undirected facts store their endpoints sorted, as fact identity does). By contrast
``reason_fact_counts`` counts distinct facts carrying each reason on either endpoint;
a fact with several reasons counts once per reason, so those counts are not a
partition and need not sum to the fact count.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from operator import attrgetter
from typing import Any

from cairn.errors import ArtifactCorruptError
from cairn.graph.model import IdentityStatus
from cairn.graph.multigraph import SemanticGraph

__all__ = [
    "RECEIPT_SCHEMA_VERSION",
    "STATUS_ORDER",
    "build_receipt",
    "fully_stable_facts",
    "validate_receipt",
]

RECEIPT_SCHEMA_VERSION = 1
STATUS_ORDER: tuple[str, ...] = tuple(status.value for status in IdentityStatus)
_SCOPE = "storage_only"
_STATUS = "degraded"
_REASON = "full_emission_accounting_not_available"
_ENDPOINTS = attrgetter("endpoint_identity")
_SOURCE = attrgetter("source")
_TARGET = attrgetter("target")


def build_receipt(graph: SemanticGraph) -> dict[str, Any]:
    """Compute the storage-only receipt of ``graph`` (plain JSON)."""
    cells = {src: dict.fromkeys(STATUS_ORDER, 0) for src in STATUS_ORDER}
    reasons: dict[str, int] = {}
    # A graph's facts share a handful of endpoint identity objects: count the pairs of
    # objects (in C, by identity: hashing them by value costs Python calls), then tally
    # each pair once.
    ends = list(map(_ENDPOINTS, graph.facts()))
    sources, targets = list(map(_SOURCE, ends)), list(map(_TARGET, ends))
    keys = list(zip(map(id, sources), map(id, targets), strict=True))
    pairs = dict(zip(keys, zip(sources, targets, strict=True), strict=True))
    for key, count in Counter(keys).items():
        source, target = pairs[key]
        cells[source.status.value][target.status.value] += count
        for reason in {*source.reasons, *target.reasons}:
            reasons[reason.value] = reasons.get(reason.value, 0) + count
    return {
        "accounting_scope": _SCOPE,
        "status": _STATUS,
        "reasons": [_REASON],
        "endpoint_identity": {
            "statuses": list(STATUS_ORDER),
            "fact_pair_counts": cells,
            "reason_fact_counts": dict(sorted(reasons.items())),
        },
        "storage_admission": {
            "unregistered_relation_admissions": dict(graph.unregistered_relation_admissions),
        },
    }


def fully_stable_facts(receipt: Mapping[str, Any]) -> int:
    """Facts with both endpoints stable, derived from the matrix (never stored apart)."""
    return int(receipt["endpoint_identity"]["fact_pair_counts"]["stable"]["stable"])


def validate_receipt(receipt: Any, graph: SemanticGraph) -> None:
    """Check a stored receipt against the graph it claims to describe.

    Raises ``ArtifactCorruptError`` when it is malformed, claims ``valid``, breaks the
    partition invariant, or disagrees with the receipt re-derived from ``graph``.
    """
    if not isinstance(receipt, dict):
        raise ArtifactCorruptError("integrity receipt is not an object")
    if receipt.get("status") == "valid":
        raise ArtifactCorruptError("a storage-only receipt may never claim 'valid'")
    try:
        cells = receipt["endpoint_identity"]["fact_pair_counts"]
        total = sum(int(cells[src][tgt]) for src in STATUS_ORDER for tgt in STATUS_ORDER)
    except (KeyError, TypeError, ValueError) as exc:
        raise ArtifactCorruptError("integrity receipt lacks one of the 16 cells") from exc
    if total != graph.fact_count:
        raise ArtifactCorruptError(
            f"receipt cells sum to {total}, but the graph retains {graph.fact_count} facts"
        )
    expected = build_receipt(graph)
    if receipt != expected:
        raise ArtifactCorruptError("integrity receipt disagrees with the re-derived receipt")
