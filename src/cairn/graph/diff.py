"""Fact-level diff of two semantic graphs (spec §9: semantic analysis and diff use facts).

Facts are compared by ID, so two facts between the same endpoints that differ only by
discriminator are two separate entries, never one "changed edge". Occurrences are
compared per fact, nodes by their full record.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cairn.graph.multigraph import SemanticGraph

__all__ = ["FactEvidenceChange", "GraphDiff", "diff_graphs"]


@dataclass(frozen=True, slots=True)
class FactEvidenceChange:
    """A fact present on both sides whose supporting occurrences changed."""

    fact_id: str
    added_occurrences: tuple[str, ...]
    removed_occurrences: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class GraphDiff:
    """What changed from ``before`` to ``after``, all ordered by ID."""

    added_nodes: tuple[str, ...]
    removed_nodes: tuple[str, ...]
    changed_nodes: tuple[str, ...]
    added_facts: tuple[str, ...]
    removed_facts: tuple[str, ...]
    evidence_changes: tuple[FactEvidenceChange, ...]
    changed_occurrences: tuple[str, ...]

    @property
    def is_empty(self) -> bool:
        """True when nothing changed."""
        return not any(
            (
                self.added_nodes,
                self.removed_nodes,
                self.changed_nodes,
                self.added_facts,
                self.removed_facts,
                self.evidence_changes,
                self.changed_occurrences,
            )
        )

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {
            "added_nodes": list(self.added_nodes),
            "removed_nodes": list(self.removed_nodes),
            "changed_nodes": list(self.changed_nodes),
            "added_facts": list(self.added_facts),
            "removed_facts": list(self.removed_facts),
            "evidence_changes": [
                {
                    "fact_id": change.fact_id,
                    "added_occurrences": list(change.added_occurrences),
                    "removed_occurrences": list(change.removed_occurrences),
                }
                for change in self.evidence_changes
            ],
            "changed_occurrences": list(self.changed_occurrences),
        }


def diff_graphs(before: SemanticGraph, after: SemanticGraph) -> GraphDiff:
    """Compare two graphs fact by fact."""
    old_nodes = {node.id: node for node in before.nodes()}
    new_nodes = {node.id: node for node in after.nodes()}
    old_facts = {fact.id: fact for fact in before.facts()}
    new_facts = {fact.id: fact for fact in after.facts()}
    evidence: list[FactEvidenceChange] = []
    changed_occurrences: list[str] = []
    for fact_id in sorted(old_facts.keys() & new_facts.keys()):
        old_ids = set(old_facts[fact_id].occurrence_ids)
        new_ids = set(new_facts[fact_id].occurrence_ids)
        if old_ids != new_ids:
            evidence.append(
                FactEvidenceChange(
                    fact_id, tuple(sorted(new_ids - old_ids)), tuple(sorted(old_ids - new_ids))
                )
            )
        changed_occurrences.extend(
            occurrence_id
            for occurrence_id in sorted(old_ids & new_ids)
            if before.occurrence(occurrence_id) != after.occurrence(occurrence_id)
        )
    return GraphDiff(
        added_nodes=tuple(sorted(new_nodes.keys() - old_nodes.keys())),
        removed_nodes=tuple(sorted(old_nodes.keys() - new_nodes.keys())),
        changed_nodes=tuple(
            sorted(
                key
                for key in old_nodes.keys() & new_nodes.keys()
                if old_nodes[key] != new_nodes[key]
            )
        ),
        added_facts=tuple(sorted(new_facts.keys() - old_facts.keys())),
        removed_facts=tuple(sorted(old_facts.keys() - new_facts.keys())),
        evidence_changes=tuple(evidence),
        changed_occurrences=tuple(changed_occurrences),
    )
