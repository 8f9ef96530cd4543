"""Helpers that render an indexed graph as short, hand-checkable tuples."""

from __future__ import annotations

from pathlib import Path

from cairn.canonical import canonical_bytes
from cairn.graph import SemanticGraph
from cairn.graph.registry import REGISTRY

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def disc_text(relation: str, value: dict[str, object]) -> str:
    """Discriminator values in registry field order; ``optional_chaining`` as a flag."""
    spec = REGISTRY.get(relation)
    assert spec is not None
    parts: list[str] = []
    for field in spec.fields:
        item = value.get(field.name)
        if field.name == "optional_chaining":
            if item:
                parts.append("optional")
            continue
        parts.append(str(item))
    return " ".join(parts)


def fact_tuples(graph: SemanticGraph) -> set[tuple[str, str, str, str]]:
    """Every fact as ``(relation, source, target, discriminator text)``."""
    return {
        (f.relation, f.source, f.target, disc_text(f.relation, dict(f.discriminator.value)))
        for f in graph.facts()
    }


def node_tuples(graph: SemanticGraph) -> set[tuple[str, str]]:
    """Every node as ``(kind, id)``."""
    return {(n.kind, n.id) for n in graph.nodes()}


def canonical_content(graph: SemanticGraph) -> bytes:
    """The graph's canonical content: nodes, facts and occurrences in ID order."""
    return canonical_bytes(
        {
            "nodes": [n.to_json() for n in graph.nodes()],
            "facts": [f.to_json() for f in graph.facts()],
            "occurrences": [o.to_json() for o in graph.occurrences()],
        }
    )
