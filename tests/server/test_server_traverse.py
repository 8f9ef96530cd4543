"""``cairn.search.traverse``: bounded neighbours and shortest paths inside one read cut."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import Corpus
from server_helpers import GRAPH, principal_mutation, ref, run

from cairn.errors import BudgetExceededError, NotFoundError, PermissionDeniedError, ValidationError
from cairn.search.traverse import (
    TraverseRequest,
    TraverseResult,
    admit_traverse,
    traverse,
    traverse_request_from_json,
    traverse_result_from_json,
)
from cairn.store import (
    Capability,
    ConfigurePolicy,
    ConfigurePrincipal,
    DeleteDocument,
    FieldPolicy,
    Grant,
    PutDocument,
    PutFact,
)

ROOT = ref("docs", "root")


def _request(corpus: Corpus, *seeds: Any, **options: Any) -> TraverseRequest:
    return TraverseRequest(corpus.db.name, GRAPH, tuple(seeds) or (ROOT,), **options)


def _reach(result: TraverseResult) -> list[tuple[str, int]]:
    return [(vertex.ref.id, vertex.hops) for vertex in result.vertices]


def test_out_neighbours_by_hops_then_ref(corpus: Corpus) -> None:
    result = traverse(corpus.db, _request(corpus, max_depth=2), "reader")
    assert _reach(result) == [("root", 0), ("alpha", 1), ("beta", 1), ("delta", 2), ("gamma", 2)]
    assert [(e.source.id, e.target.id, e.relation) for e in result.edges] == [
        ("alpha", "gamma", "calls"),
        ("beta", "delta", "references"),
        ("root", "alpha", "calls"),
        ("root", "beta", "imports"),
    ]
    assert result.path is None
    assert result.position == corpus.db.position
    assert result.edges_examined == 4  # root (2) + alpha (1) + beta (1); the last layer is not read


def test_in_and_both_directions(corpus: Corpus) -> None:
    gamma = ref("docs", "gamma")
    backwards = traverse(corpus.db, _request(corpus, gamma, direction="in", max_depth=3), "reader")
    assert _reach(backwards) == [("gamma", 0), ("alpha", 1), ("root", 2), ("a/b", 3)]
    # Edges keep their stored orientation whatever the direction walked.
    assert {(e.source.id, e.target.id) for e in backwards.edges} == {
        ("alpha", "gamma"),
        ("root", "alpha"),
        ("a/b", "root"),
    }
    both = traverse(corpus.db, _request(corpus, ref("docs", "alpha"), direction="both"), "reader")
    assert _reach(both) == [("alpha", 0), ("gamma", 1), ("root", 1)]


def test_a_relation_filter_keeps_only_those_edges(corpus: Corpus) -> None:
    calls = traverse(corpus.db, _request(corpus, max_depth=3, relations=("calls",)), "reader")
    assert _reach(calls) == [("root", 0), ("alpha", 1), ("gamma", 2), ("private", 3)]
    nothing = traverse(corpus.db, _request(corpus, max_depth=3, relations=()), "reader")
    assert _reach(nothing) == [("root", 0)] and nothing.edges == ()


def test_shortest_path_is_the_smallest_of_the_shortest(corpus: Corpus) -> None:
    # Two shortest paths root -> x: via alpha and via beta; the smaller sequence wins.
    run(
        corpus.db,
        PutDocument("docs", "x", {"text": "x"}),
        PutFact(GRAPH, ref("docs", "beta"), ref("docs", "x"), "calls"),
        PutFact(GRAPH, ref("docs", "alpha"), ref("docs", "x"), "calls"),
    )
    found = traverse(corpus.db, _request(corpus, target=ref("docs", "x"), max_depth=4), "admin")
    assert [r.id for r in found.path or ()] == ["root", "alpha", "x"]
    assert _reach(found) == [("root", 0), ("alpha", 1), ("x", 2)]
    assert [(e.source.id, e.target.id) for e in found.edges] == [("root", "alpha"), ("alpha", "x")]
    far = traverse(corpus.db, _request(corpus, target=ref("notes", "n1"), max_depth=6), "reader")
    assert [r.id for r in far.path or ()] == ["root", "alpha", "gamma", "private", "n1"]
    short = traverse(corpus.db, _request(corpus, target=ref("notes", "n1"), max_depth=2), "reader")
    assert short.path is None and short.vertices == () and short.edges == ()
    itself = traverse(corpus.db, _request(corpus, target=ROOT), "reader")
    assert itself.path == (ROOT,) and _reach(itself) == [("root", 0)]


def test_hidden_vertices_stop_traversal_and_hidden_ends_are_not_found(corpus: Corpus) -> None:
    path = _request(corpus, target=ref("notes", "n1"), max_depth=6)
    assert traverse(corpus.db, path, "restricted").path is None
    reach = traverse(corpus.db, _request(corpus, max_depth=6), "restricted")
    assert "private" not in [vertex.ref.id for vertex in reach.vertices]
    assert "n1" not in [vertex.ref.id for vertex in reach.vertices]
    with pytest.raises(NotFoundError):
        traverse(corpus.db, _request(corpus, ref("docs", "private")), "restricted")
    with pytest.raises(NotFoundError):
        traverse(corpus.db, _request(corpus, target=ref("docs", "private")), "restricted")
    with pytest.raises(NotFoundError):
        traverse(corpus.db, _request(corpus, ref("docs", "missing")), "reader")
    run(corpus.db, DeleteDocument("docs", "alpha"))
    after = traverse(corpus.db, _request(corpus, max_depth=3), "reader")
    assert "alpha" not in [vertex.ref.id for vertex in after.vertices]


def test_authorisation_like_a_walk(corpus: Corpus) -> None:
    with pytest.raises(NotFoundError):
        traverse(corpus.db, TraverseRequest(corpus.db.name, "nograph", (ROOT,)), "reader")
    with pytest.raises(ValidationError, match="names database 'elsewhere'"):
        traverse(corpus.db, TraverseRequest("elsewhere", GRAPH, (ROOT,)), "reader")
    # The label use grant is needed whenever relations is given, even empty.
    run(corpus.db, ConfigurePolicy(GRAPH, (FieldPolicy("/label", use_grant="other"),)))
    for relations in (("calls",), ()):
        with pytest.raises(PermissionDeniedError):
            traverse(corpus.db, _request(corpus, relations=relations), "reader")
    assert traverse(corpus.db, _request(corpus), "reader").vertices


def test_no_grant_on_the_graph_answers_like_a_missing_graph(corpus: Corpus) -> None:
    mutation = principal_mutation(corpus.db, "reader", ())
    grants = tuple(g for g in mutation.grants if g.resource != GRAPH)
    run(corpus.db, ConfigurePrincipal("reader", grants))
    with pytest.raises(NotFoundError, match=f"no graph {GRAPH!r}"):
        traverse(corpus.db, _request(corpus), "reader")
    # Some grant on the graph (it may write it) but no graph_read: the capability is named.
    writer = Grant(corpus.db.name, GRAPH, frozenset({Capability.GRAPH_WRITE}))
    run(corpus.db, ConfigurePrincipal("reader", (*grants, writer)))
    with pytest.raises(PermissionDeniedError, match="graph_read"):
        traverse(corpus.db, _request(corpus), "reader")


def test_unreadable_labels_are_redacted(corpus: Corpus) -> None:
    run(corpus.db, ConfigurePolicy(GRAPH, (FieldPolicy("/label", read_grant="see-labels"),)))
    result = traverse(corpus.db, _request(corpus), "reader")
    assert result.redacted_fields == ("/label",)
    assert {edge.relation for edge in result.edges} == {None}
    assert {edge.relation for edge in traverse(corpus.db, _request(corpus), "admin").edges} == {
        "calls",
        "imports",
    }


def test_documents_are_projected_with_redaction(corpus: Corpus) -> None:
    request = _request(corpus, ref("docs", "beta"), include_documents=True)
    result = traverse(corpus.db, request, "reader")
    delta = next(v for v in result.vertices if v.ref.id == "delta")
    assert delta.document is not None and delta.document.redacted
    assert "secret" not in delta.document.body
    assert all(vertex.document is not None for vertex in result.vertices)


def test_budgets_fail_explicitly(corpus: Corpus) -> None:
    with pytest.raises(BudgetExceededError) as edges:
        traverse(corpus.db, _request(corpus, max_depth=3, max_edges=2), "reader")
    assert edges.value.details["budget"] == "max_edges"
    with pytest.raises(BudgetExceededError) as vertices:
        traverse(corpus.db, _request(corpus, max_depth=3, max_vertices=3), "reader")
    assert vertices.value.details["budget"] == "max_vertices"


def test_one_read_cut_per_traversal(corpus: Corpus) -> None:
    before = corpus.db.read_cut_acquisitions
    traverse(corpus.db, _request(corpus, max_depth=4, include_documents=True), "reader")
    traverse(corpus.db, _request(corpus, target=ref("notes", "n1"), max_depth=6), "reader")
    assert corpus.db.read_cut_acquisitions == before + 2


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"direction": "sideways"}, ValidationError),
        ({"max_depth": 17}, ValidationError),
        ({"max_depth": -1}, ValidationError),
        ({"max_vertices": 0}, ValidationError),
        ({"max_edges": 50_001}, ValidationError),
        ({"relations": tuple(f"r{i}" for i in range(65))}, ValidationError),
        ({"relations": ("",)}, ValidationError),
        ({"seeds": ()}, ValidationError),
        ({"seeds": (ref("docs", "a"), ref("docs", "b")), "max_vertices": 1}, ValidationError),
        ({"target": ref("docs", "\x00")}, ValidationError),
        ({"include_documents": 1}, ValidationError),
        ({"seeds": tuple(ref("docs", f"{i:0>250}") for i in range(300))}, BudgetExceededError),
    ],
)
def test_admission(corpus: Corpus, options: dict[str, Any], error: type[Exception]) -> None:
    fields: dict[str, Any] = {"database": corpus.db.name, "graph": GRAPH, "seeds": (ROOT,)}
    fields.update(options)
    request = TraverseRequest(**fields)
    before = corpus.db.read_cut_acquisitions
    with pytest.raises(error):
        traverse(corpus.db, request, "reader")
    assert corpus.db.read_cut_acquisitions == before  # nothing was read


def test_wire_forms_round_trip_strictly(corpus: Corpus) -> None:
    request = _request(
        corpus, target=ref("notes", "n1"), direction="both", relations=("calls",), max_depth=4
    )
    assert traverse_request_from_json(request.to_json()) == request
    assert admit_traverse(request) > 0
    minimal = traverse_request_from_json(
        {"database": "main", "graph": GRAPH, "seeds": [{"collection": "docs", "id": "root"}]}
    )
    assert minimal == TraverseRequest("main", GRAPH, (ROOT,))
    result = traverse(corpus.db, _request(corpus, max_depth=2, include_documents=True), "reader")
    assert traverse_result_from_json(result.to_json()) == result
    for bad in (
        {**request.to_json(), "extra": 1},
        {**request.to_json(), "type": "cairn.contract.other.v1"},
        {**request.to_json(), "seeds": "root"},
        {**request.to_json(), "seeds": [{"collection": "docs"}]},
        {**request.to_json(), "seeds": [{"collection": "docs", "id": "r", "x": 1}]},
        {**request.to_json(), "max_depth": True},
        {**request.to_json(), "relations": "calls"},
        {**request.to_json(), "direction": 3},
        {"graph": GRAPH, "seeds": []},
        [],
    ):
        with pytest.raises(ValidationError):
            traverse_request_from_json(bad)
    with pytest.raises(ValidationError):
        traverse_result_from_json({"vertices": []})
