"""``SemanticGraph.add_facts``: the bulk path equals ``add_fact`` one by one, all or nothing."""

from __future__ import annotations

from typing import Any

import pytest
from graph_helpers import CALL, CONSTRUCT, site, stable_graph
from hypothesis import given, settings
from hypothesis import strategies as st

from cairn.errors import CairnError, MissingEndpointError, ValidationError
from cairn.graph import (
    ConfidenceObservation,
    EndpointIdentity,
    IdentityReason,
    OccurrenceInput,
    SemanticGraph,
    SourceRange,
)
from cairn.graph.multigraph import FactCandidate

NODES = ("a", "b", "c", "d")
"""Node IDs: ``d`` is context-bound, so stable x stable is not trivially true."""
UNKNOWN_NODE = "z"
DISCRIMINATORS: dict[str, list[dict[str, Any] | None]] = {
    "calls": [CALL, CONSTRUCT, {**CALL, "resolution": "External"}, {"invocation": "call"}],
    "imports": [
        {"specifier": " m ", "binding_kind": "named", "phase": "runtime", "form": "static"},
        {"specifier": "m", "binding_kind": "NAMED", "phase": "runtime", "form": "static"},
    ],
    "contains": [None, {}],
    "related_to": [None],
    "inherits": [{"kind": "extends"}, {"kind": "implements"}],
    "unregistered_relation": [None],
}
BAD_DISCRIMINATORS: list[tuple[str, dict[str, Any]]] = [
    ("calls", {"invocation": "jump"}),
    ("calls", {"nonsense": 1}),
    ("calls", {"optional_chaining": 1}),
]
MAX_CANDIDATES = 40


def base_graph() -> SemanticGraph:
    """Four nodes, one context-bound."""
    graph = stable_graph("a", "b", "c")
    graph.add_node(
        "d",
        "section",
        identity=EndpointIdentity.context_bound(IdentityReason.COLLISION_SUFFIX_DERIVED),
    )
    return graph


occurrences = st.one_of(
    st.none(),
    st.builds(
        OccurrenceInput,
        adapter_id=st.sampled_from(["python", "js"]),
        strategy=st.just("ast"),
        adapter_version=st.sampled_from([None, "1", "2"]),
        source_file=st.sampled_from([None, "app.py", "lib/x.py"]),
        source_range=st.one_of(
            st.none(), st.integers(1, 3).map(lambda line: SourceRange(line, 1, line, 9))
        ),
        site_kind=st.sampled_from([None, "call", "import"]),
        metadata=st.sampled_from([None, {"k": 1}, {"k": 2}, {"w": ["x", "y"]}]),
        confidence=st.sampled_from([(), (ConfidenceObservation(0.5, "heuristic"),)]),
        provenance=st.sampled_from([(), ({"from": "test"},)]),
    ),
)


@st.composite
def candidates(draw: st.DrawFn) -> FactCandidate:
    relation = draw(st.sampled_from(sorted(DISCRIMINATORS)))
    disc = draw(st.sampled_from(DISCRIMINATORS[relation]))
    source = draw(st.sampled_from(NODES))
    target = draw(st.sampled_from(NODES))
    return (source, target, relation, None if disc is None else dict(disc), draw(occurrences))


def admit_one_by_one(graph: SemanticGraph, batch: list[FactCandidate]) -> None:
    for source, target, relation, disc, occurrence in batch:
        graph.add_fact(source, target, relation, disc, occurrence=occurrence)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(candidates(), max_size=MAX_CANDIDATES),
    st.lists(candidates(), max_size=MAX_CANDIDATES // 2),
)
def test_bulk_equals_one_by_one(batch: list[FactCandidate], before: list[FactCandidate]) -> None:
    """Same nodes, facts, occurrences (merged), indexes and counters, from any prior state."""
    expected, actual = base_graph(), base_graph()
    admit_one_by_one(expected, before)
    admit_one_by_one(actual, before)
    admit_one_by_one(expected, batch)
    counts = actual.add_facts(batch)
    assert actual == expected
    assert actual.counts() == expected.counts()
    assert actual.admission_counts == expected.admission_counts
    assert actual.unregistered_relation_admissions == expected.unregistered_relation_admissions
    assert sum(counts.values()) == len(batch)
    for node in NODES:
        assert actual.facts_from(node) == expected.facts_from(node)
        assert actual.facts_to(node) == expected.facts_to(node)
    assert actual.endpoint_pairs() == expected.endpoint_pairs()
    assert actual.occurrences() == expected.occurrences()


@settings(max_examples=100, deadline=None)
@given(
    st.lists(candidates(), max_size=MAX_CANDIDATES),
    st.integers(0, MAX_CANDIDATES),
    st.sampled_from(["missing_source", "missing_target", "bad_discriminator", "bad_path"]),
)
def test_bulk_refusal_changes_nothing(
    batch: list[FactCandidate], position: int, fault: str
) -> None:
    """A refused candidate raises what add_fact raises for it, and the graph is untouched."""
    bad: FactCandidate
    if fault == "missing_source":
        bad = (UNKNOWN_NODE, "a", "calls", CALL, None)
    elif fault == "missing_target":
        bad = ("a", UNKNOWN_NODE, "contains", None, None)
    elif fault == "bad_discriminator":
        relation, disc = BAD_DISCRIMINATORS[position % len(BAD_DISCRIMINATORS)]
        bad = ("a", "b", relation, disc, None)
    else:
        escaping = OccurrenceInput(adapter_id="x", strategy="s", source_file="../etc")
        bad = ("a", "b", "contains", None, escaping)
    batch = [*batch[:position], bad, *batch[position:]]
    reference = base_graph()
    with pytest.raises(CairnError) as one_by_one:
        admit_one_by_one(reference, batch)
    graph = base_graph()
    untouched = graph.copy()
    with pytest.raises(type(one_by_one.value)):
        graph.add_facts(batch)
    assert graph == untouched


def test_bulk_counts_new_additional_and_duplicate() -> None:
    graph = stable_graph("a", "b")
    counts = graph.add_facts(
        [
            ("a", "b", "calls", CALL, site(1)),
            ("a", "b", "calls", dict(CALL), site(2)),
            ("a", "b", "calls", CALL, site(2)),
            ("a", "b", "calls", CALL, None),
            ("a", "b", "nope", None, site(3)),
        ]
    )
    assert dict(counts) == {
        "new_fact": 1,
        "additional_occurrence": 1,
        "exact_duplicate_merged": 2,
        "unresolved": 1,
    }
    (fact,) = graph.facts()
    assert len(fact.occurrence_ids) == 2
    assert list(fact.occurrence_ids) == sorted(fact.occurrence_ids)


def test_bulk_true_and_one_do_not_share_a_discriminator() -> None:
    """``True == 1`` in Python; the per-batch cache must still tell them apart."""
    graph = stable_graph("a", "b")
    graph.add_facts([("a", "b", "calls", {**CALL, "optional_chaining": True}, None)])
    with pytest.raises(ValidationError):
        graph.add_facts([("a", "b", "calls", {**CALL, "optional_chaining": 1}, None)])


def test_bulk_missing_endpoint_names_the_role() -> None:
    graph = stable_graph("a")
    with pytest.raises(MissingEndpointError, match="target"):
        graph.add_facts([("a", "b", "calls", CALL, None)])
