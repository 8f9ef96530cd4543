"""Shared builders for artifact tests: a feature-complete graph and random-graph strategies."""

from __future__ import annotations

import json
from typing import Any

import networkx as nx
import orjson
from hypothesis import strategies as st

from cairn.artifact.limits import ARTIFACT_HEADER
from cairn.artifact.seal import DIGEST_PLACEHOLDER, digest_tail, seal
from cairn.graph import (
    ConfidenceObservation,
    EndpointIdentity,
    IdentityReason,
    OccurrenceInput,
    SemanticGraph,
    SourceRange,
)

FIXED_TIME = "2024-01-01T00:00:00Z"

CALL = {"invocation": "call", "dispatch": "direct", "optional_chaining": False}
CALL_FULL = {**CALL, "resolution": "resolved"}
IMPORT = {
    "specifier": "pkg.util",
    "binding_kind": "named",
    "imported_name": "helper",
    "phase": "runtime",
    "form": "static",
    "resolution": "internal",
}


def site(line: int, adapter: str = "python", **extra: Any) -> OccurrenceInput:
    """One evidence site on ``line`` of ``app.py``."""
    fields: dict[str, Any] = {
        "adapter_id": adapter,
        "strategy": "ast",
        "adapter_version": "1",
        "source_file": "src/app.py",
        "source_range": SourceRange(line, 5, line, 20),
        "site_kind": "call",
    }
    return OccurrenceInput(**{**fields, **extra})


def rich_graph() -> SemanticGraph:
    """A small graph exercising every record feature the artifact must keep."""
    graph = SemanticGraph()
    graph.add_node(
        "file:src/app.py",
        "file",
        identity=EndpointIdentity.stable(),
        attributes={"path": "src/app.py", "language": "python", "centrality": 3.2e-06},
    )
    graph.add_node("function:src/app.py#main", "function", identity=EndpointIdentity.stable())
    graph.add_node(
        "function:src/app.py#helper",
        "function",
        identity=EndpointIdentity.context_bound(IdentityReason.SOURCE_LOCATION_DERIVED),
        attributes={"signature": "helper(x)", "tags": ["a", "b"], "weight": 1.0},
    )
    graph.add_node("external:python:requests.get", "external")  # unknown identity
    graph.add_node("route:src/app.py#GET /users/{id}", "route", identity=EndpointIdentity.stable())
    graph.add_node("section:docs/guide.md#Über", "section", identity=EndpointIdentity.legacy())
    main, helper = "function:src/app.py#main", "function:src/app.py#helper"
    # Two facts on one endpoint pair differing only by discriminator (call vs construct).
    graph.add_fact(
        main,
        helper,
        "calls",
        CALL_FULL,
        occurrence=site(
            3,
            provenance=({"rule": "ast.Call"}, {"pass": 2}),
            confidence=(
                ConfidenceObservation(0.9, "static"),
                ConfidenceObservation(1.0, "exact", "reviewer"),
                ConfidenceObservation(0.00001, "noisy"),
            ),
            metadata={"callee_text": "helper()", "args": [1, 2.5]},
        ),
        annotations={"note": "hot path"},
    )
    graph.add_fact(main, helper, "calls", CALL_FULL, occurrence=site(9, adapter="tree-sitter"))
    graph.add_fact(
        main, helper, "calls", {**CALL_FULL, "invocation": "construct"}, occurrence=site(12)
    )
    # Same occurrence with conflicting metadata keeps both variants plus a diagnostic.
    graph.add_fact(main, helper, "calls", CALL_FULL, occurrence=site(20, metadata={"v": 1}))
    graph.add_fact(main, helper, "calls", CALL_FULL, occurrence=site(20, metadata={"v": 2}))
    # A partial discriminator (resolution missing).
    graph.add_fact(main, "external:python:requests.get", "calls", CALL, occurrence=site(30))
    graph.add_fact("file:src/app.py", main, "contains")
    graph.add_fact("file:src/app.py", "external:python:requests.get", "imports", IMPORT)
    graph.add_fact(
        "route:src/app.py#GET /users/{id}",
        main,
        "handles_route",
        {"method": "get", "path": "/users/<int:id>", "framework": "flask"},
        occurrence=site(40, site_kind="route"),
    )
    graph.add_fact(helper, main, "related_to")  # undirected: stored sorted
    graph.add_fact(main, helper, "no_such_relation")  # counted, never stored
    graph.add_hyperedge("community:0", "community", [main, helper], {"size": 2, "score": 0.5})
    graph.add_hyperedge("module:src", "module", ["file:src/app.py"])
    graph.set_community_label("community:0", "Application core")
    graph.set_community_label("community:1", "Docs")
    return graph


# ------------------------------------------------------------ strategies
_TEXT = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=6
).filter(lambda text: text.strip() != "")
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1),
    st.floats(allow_nan=False, min_value=-9007199254740991.0, max_value=9007199254740991.0),
    st.sampled_from([0.00001, 1.0, -0.0, 1e-7, 123456.789]),
    _TEXT,
)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_TEXT, inner, max_size=3)),
    max_leaves=6,
)
_IDENTITIES = st.sampled_from(
    [
        EndpointIdentity.stable(),
        EndpointIdentity.undeclared(),
        EndpointIdentity.legacy(),
        EndpointIdentity.context_bound(IdentityReason.SOURCE_ORDINAL_DERIVED),
        EndpointIdentity.context_bound(
            IdentityReason.COLLISION_SUFFIX_DERIVED, IdentityReason.SOURCE_LOCATION_DERIVED
        ),
    ]
)
_RELATIONS = st.sampled_from(
    [
        ("calls", CALL_FULL),
        ("calls", CALL),
        ("calls", {**CALL_FULL, "dispatch": "method"}),
        ("contains", None),
        ("related_to", None),
        ("imports", IMPORT),
        ("inherits", {"kind": "extends"}),
        ("unregistered_thing", None),
    ]
)
# NFC only: the graph keeps file names as given, the artifact stores them normalised
# (test_non_nfc_schema_strings_take_the_exact_slow_path covers the other case).
_FILES = st.sampled_from(["src/a.py", "src/b/c.py", "docs/\u00e9.md", None])


@st.composite
def graph_specs(draw: st.DrawFn) -> dict[str, Any]:
    """A random graph description (nodes, fact candidates, hyperedges, labels)."""
    count = draw(st.integers(min_value=1, max_value=6))
    nodes = [
        (f"n{index}", draw(st.sampled_from(["function", "file"])), draw(_IDENTITIES))
        for index in range(count)
    ]
    attributes = [draw(st.dictionaries(_TEXT, _JSON, max_size=2)) for _ in nodes]
    candidate = st.tuples(
        st.integers(0, count - 1),
        st.integers(0, count - 1),
        _RELATIONS,
        st.one_of(st.none(), st.integers(1, 50)),
        _FILES,
        st.lists(_JSON, max_size=2),
        st.lists(st.floats(min_value=0.0, max_value=1.0), max_size=2),
        st.one_of(st.none(), st.dictionaries(_TEXT, _JSON, max_size=2)),
        st.sampled_from(["python", "tree-sitter"]),
    )
    facts = draw(st.lists(candidate, max_size=10))
    labels = draw(st.dictionaries(_TEXT, _TEXT, max_size=2))
    hyper = draw(st.lists(st.integers(0, count - 1), min_size=1, max_size=3))
    return {
        "nodes": nodes,
        "attributes": attributes,
        "facts": facts,
        "labels": labels,
        "hyper": hyper,
    }


def build(spec: dict[str, Any], order: list[int] | None = None) -> SemanticGraph:
    """Build the graph a spec describes, admitting fact candidates in ``order``."""
    graph = SemanticGraph()
    for (node_id, kind, identity), attrs in zip(spec["nodes"], spec["attributes"], strict=True):
        graph.add_node(node_id, kind, identity=identity, attributes=attrs)
    facts = spec["facts"]
    for index in order if order is not None else range(len(facts)):
        source, target, (relation, disc), line, file, prov, conf, meta, adapter = facts[index]
        occurrence = OccurrenceInput(
            adapter_id=adapter,
            strategy="ast",
            source_file=file,
            source_range=SourceRange(line, 1, line, 9) if line else None,
            provenance=tuple(prov),
            confidence=tuple(ConfidenceObservation(value, "m") for value in conf),
            metadata=meta,
        )
        graph.add_fact(f"n{source}", f"n{target}", relation, disc, occurrence=occurrence)
    graph.add_hyperedge("h0", "group", [f"n{index}" for index in spec["hyper"]], {"k": 1})
    for community, label in spec["labels"].items():
        graph.set_community_label(community, label)
    return graph


# ------------------------------------------------------------ tampering
def body_of(data: bytes) -> bytes:
    """The JSON body of an artifact (header and final newline removed)."""
    assert data.startswith(ARTIFACT_HEADER) and data.endswith(b"\n")
    return data[len(ARTIFACT_HEADER) : -1]


def forge(payload: dict[str, Any]) -> bytes:
    """An artifact for ``payload``: canonical, with a correct digest (a careful forger)."""
    from cairn.canonical import canonical_bytes

    unsealed = dict(payload, payload_sha256=DIGEST_PLACEHOLDER)
    return ARTIFACT_HEADER + seal(canonical_bytes(unsealed)) + b"\n"


def payload_of(data: bytes) -> dict[str, Any]:
    """The parsed payload of an artifact."""
    parsed: dict[str, Any] = orjson.loads(body_of(data))
    return parsed


def reseal(data: bytes) -> bytes:
    """Recompute the digest of an edited artifact, so only deeper checks can catch it."""
    body = body_of(data)
    tail = digest_tail(orjson.loads(body))
    start = len(body) - len(tail) - 1 - len(DIGEST_PLACEHOLDER)  # the top-level member
    body = body[:start] + DIGEST_PLACEHOLDER.encode() + body[start + 64 :]
    return ARTIFACT_HEADER + seal(body, tail) + b"\n"


def v1_reader(text: str) -> Any:
    """What a v1 reader does: ``json.loads`` then networkx ``node_link_graph``."""
    return nx.node_link_graph(json.loads(text), edges="links")
