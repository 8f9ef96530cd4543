"""Lossy node-link export of a semantic graph, for tools that only read node-link JSON.

The export is never a v1 artifact and never claims equivalence with ``graph.cairn``
(spec §12): its payload says ``"lossy": true`` and lists what was dropped. Each fact is
one link (a multigraph keyed by fact ID), so parallel facts stay distinct; occurrences
shrink to a count, and provenance, confidence observations, identity reasons,
annotations, the receipt and admission counters are left out. networkx reads it with
``node_link_graph(data, edges="links")``.
"""

from __future__ import annotations

import os
from typing import Any

import orjson

from cairn.artifact.atomic import atomic_write_bytes
from cairn.artifact.limits import NODE_LINK_EXPORT_FORMAT
from cairn.graph.model import thaw
from cairn.graph.multigraph import SemanticGraph

__all__ = ["EXPORT_DROPPED", "export_node_link", "write_node_link_export"]

EXPORT_DROPPED = (
    "evidence_occurrences_reduced_to_counts",
    "provenance",
    "confidence_observations",
    "endpoint_identity_reasons",
    "fact_annotations",
    "hyperedges",
    "integrity_receipt",
    "admission_counters",
)
"""What the node-link export leaves out; written into the export itself."""

_RESERVED_NODE_KEYS = frozenset({"id", "kind", "identity_status"})


def export_node_link(graph: SemanticGraph) -> dict[str, Any]:
    """A lossy node-link document of ``graph`` (plain JSON, deterministic order)."""
    nodes = []
    for node in graph.nodes():
        entry: dict[str, Any] = {
            key: value
            for key, value in thaw(node.attributes).items()
            if key not in _RESERVED_NODE_KEYS
        }
        entry.update(id=node.id, kind=node.kind, identity_status=node.identity.status.value)
        nodes.append(entry)
    links = [
        {
            "source": fact.source,
            "target": fact.target,
            "key": fact.id,
            "fact_id": fact.id,
            "relation": fact.relation,
            "direction": fact.direction.value,
            "completeness": fact.discriminator.completeness,
            "discriminator": thaw(fact.discriminator.value),
            "occurrence_count": len(fact.occurrence_ids),
        }
        for fact in graph.facts()
    ]
    return {
        "format": NODE_LINK_EXPORT_FORMAT,
        "lossy": True,
        "dropped": list(EXPORT_DROPPED),
        "directed": True,
        "multigraph": True,
        "graph": {
            "lossy": True,
            "source": "cairn semantic graph",
            "counts": graph.counts().to_json(),
        },
        "nodes": nodes,
        "links": links,
    }


def write_node_link_export(path: str | os.PathLike[str], graph: SemanticGraph) -> int:
    """Write the lossy export atomically to ``path``; returns its size in bytes."""
    data = orjson.dumps(export_node_link(graph), option=orjson.OPT_SORT_KEYS) + b"\n"
    atomic_write_bytes(path, data)
    return len(data)
