"""Builders shared by the graph tests (imported by name; pytest puts this folder on the path)."""

from __future__ import annotations

from typing import Any

from cairn.graph import EndpointIdentity, OccurrenceInput, SemanticGraph, SourceRange

CALL = {
    "invocation": "call",
    "dispatch": "direct",
    "optional_chaining": False,
    "resolution": "resolved",
}
CONSTRUCT = {**CALL, "invocation": "construct"}


def site(line: int, adapter: str = "python", **extra: Any) -> OccurrenceInput:
    """One evidence site on ``line`` of ``app.py``."""
    return OccurrenceInput(
        adapter_id=adapter,
        strategy="ast",
        source_file="app.py",
        source_range=SourceRange(line, 5, line, 20),
        site_kind="call",
        **extra,
    )


def stable_graph(*node_ids: str) -> SemanticGraph:
    """A graph holding the given function nodes, all stable."""
    graph = SemanticGraph()
    for node_id in node_ids:
        graph.add_node(node_id, "function", identity=EndpointIdentity.stable())
    return graph
