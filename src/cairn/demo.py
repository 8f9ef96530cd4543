"""The demo job: build a small semantic graph from a bundled fixture and summarise it."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from cairn.graph import (
    EndpointIdentity,
    OccurrenceInput,
    SemanticGraph,
    SourceRange,
    build_receipt,
)

__all__ = ["DEMO_ADAPTER", "build_demo_graph", "demo_summary"]

DEMO_ADAPTER = "cairn.demo"


def _fixture() -> dict[str, Any]:
    text = resources.files("cairn.data").joinpath("demo_graph.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def build_demo_graph() -> SemanticGraph:
    """Admit the fixture's nodes and facts, one occurrence per evidence site."""
    data = _fixture()
    graph = SemanticGraph()
    for node in data["nodes"]:
        graph.add_node(node["id"], node["kind"], identity=EndpointIdentity.stable())
    for fact in data["facts"]:
        for site in fact["occurrences"]:
            graph.add_fact(
                fact["source"],
                fact["target"],
                fact["relation"],
                fact.get("discriminator"),
                occurrence=OccurrenceInput(
                    adapter_id=DEMO_ADAPTER,
                    strategy="fixture",
                    source_file=site["file"],
                    source_range=SourceRange(*site["range"]),
                    site_kind=fact["relation"],
                ),
            )
    return graph


def demo_summary(graph: SemanticGraph) -> dict[str, Any]:
    """Counts, relations and the storage-only receipt of ``graph``."""
    relations: dict[str, int] = {}
    for fact in graph.facts():
        relations[fact.relation] = relations.get(fact.relation, 0) + 1
    return {
        "counts": graph.counts().to_json(),
        "facts_by_relation": dict(sorted(relations.items())),
        "admissions": dict(graph.admission_counts),
        "receipt": build_receipt(graph),
    }
