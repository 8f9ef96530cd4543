"""The load's shortcuts give exactly what the plain definitions give.

``_record_bytes`` must equal ``canonical_bytes_reference`` (or raise the same error),
``_validate_ref`` must accept and refuse exactly what ``EntityRef.validate`` does, and
the whole wanted state (every body, record and the fingerprint) built with the
shortcuts must equal the one built with plain ``canonical_bytes``.
"""

from __future__ import annotations

import enum
import gc
import uuid
from collections import OrderedDict
from types import MappingProxyType
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_store_load import build

from cairn.canonical import MAX_SAFE_INTEGER, canonical_bytes, canonical_bytes_reference
from cairn.embed import HashingEmbedder
from cairn.errors import CairnError
from cairn.graph import EndpointIdentity, OccurrenceInput, SemanticGraph, SourceRange
from cairn.store import EntityRef
from cairn.store.bulk import _depth_within
from cairn.store.limits import MAX_DOCUMENT_DEPTH, json_depth
from cairn.store.load import (
    _Encoder,
    _gc_paused,
    _plain_identifier,
    _record_bytes,
    _Splitter,
    _unplain_positions,
    _validate_ref,
    _wanted,
)
from cairn.store.records import fact_record, occurrence_record, split_fact, split_occurrence


class _Colour(enum.StrEnum):
    RED = "red"


class _Level(enum.IntEnum):
    ONE = 1


class _Text(str):
    pass


def _outcome(function: Any, value: Any) -> tuple[str, Any]:
    try:
        return "ok", function(value)
    except CairnError as exc:
        return "error", (type(exc), exc.code)


_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.integers(min_value=-MAX_SAFE_INTEGER - 2, max_value=MAX_SAFE_INTEGER + 2)
    | st.floats()
    | st.sampled_from([0.5, 1.0, -0.0, 1e-7, 1e16, 1e21, 0.1, 123.456])
    | st.text()
    | st.text(alphabet='abcXYZ_/.#:0123456789 \t\n\x00\x7f\\"')
    | st.sampled_from(
        [
            "e\u0301",  # not NFC
            "\ud800",  # lone surrogate
            "Straße",
            _Colour.RED,
            _Level.ONE,
            _Text("sub"),
            (1, 2),
            uuid.UUID(int=7),
            np.float64(0.5),
            b"bytes",
        ]
    )
)
_keys = st.text(max_size=6) | st.sampled_from(["e\u0301", "\u00e9", "a", "A"])
_values = st.recursive(
    _scalars,
    lambda children: (
        st.lists(children, max_size=5)
        | st.dictionaries(_keys, children, max_size=5)
        | st.tuples(children)
        | st.dictionaries(_keys, children, max_size=3).map(OrderedDict)
    ),
    max_leaves=25,
)


@given(st.dictionaries(_keys, _values, max_size=6) | st.lists(_values, max_size=4) | _values)
@settings(max_examples=1500, deadline=None)
def test_record_bytes_equal_the_reference_or_raise_alike(value: Any) -> None:
    assert _outcome(_record_bytes, value) == _outcome(canonical_bytes_reference, value)


@pytest.mark.parametrize(
    "value",
    [
        {"a": [[[]]]},
        {1: "int key"},
        {_Text("k"): 1},
        {"k": {"deep": 1.0}},
        {"n": MAX_SAFE_INTEGER, "m": -MAX_SAFE_INTEGER},
        {"n": MAX_SAFE_INTEGER + 1},
        {"f": float("nan")},
        {"f": float("inf")},
        {"s": "\ud800"},
        {"e\u0301": 1, "\u00e9": 2},
        {"tuple": (1,)},
        {"enum": _Colour.RED},
        {"range": [1, 2, 3, 4], "confidence": [{"value": 0.9, "method": "m", "observer": None}]},
    ],
)
def test_record_bytes_on_edge_cases(value: Any) -> None:
    assert _outcome(_record_bytes, value) == _outcome(canonical_bytes_reference, value)


def _nested(depth: int) -> Any:
    value: Any = {"leaf": 1}
    for _ in range(depth - 1):
        value = {"x": value}
    return value


@pytest.mark.parametrize("depth", [199, 200, 201, 230, 254, 256])
def test_record_bytes_respect_the_depth_limit(depth: int) -> None:
    value = _nested(depth)
    assert _outcome(_record_bytes, value) == _outcome(canonical_bytes_reference, value)


def test_record_bytes_refuse_cycles_like_the_reference() -> None:
    value: dict[str, Any] = {"a": []}
    value["a"].append(value)
    assert _outcome(_record_bytes, value) == _outcome(canonical_bytes_reference, value)


_identifiers = (
    st.text(max_size=300)
    | st.text(alphabet="ab /:#._-\t\x00\x1f\x7f\x85\u00e9\u2028", max_size=300)
    | st.sampled_from(["", " ", "  \t", "a" * 256, "a" * 257, "é" * 128, "é" * 129, "\ud800"])
)


@given(_identifiers, _identifiers)
@settings(max_examples=1500, deadline=None)
def test_validate_ref_accepts_and_refuses_like_validate(collection: str, doc_id: str) -> None:
    ref = EntityRef(collection, doc_id)
    assert _outcome(_validate_ref, ref) == _outcome(EntityRef.validate, ref)


@given(st.lists(_identifiers | st.sampled_from(["function:a.py#f", "file:b.py"]), max_size=1200))
@settings(max_examples=200, deadline=None)
def test_unplain_positions_are_the_values_not_plain_one_by_one(values: list[str]) -> None:
    expected = [at for at, value in enumerate(values) if not _plain_identifier(value)]
    assert list(_unplain_positions(values)) == expected


def test_wanted_names_the_first_bad_node_id_among_plain_and_non_ascii_ones() -> None:
    graph = SemanticGraph()
    stable = EndpointIdentity.stable()
    for number in range(1500):  # several check chunks; the odd IDs sit in the middle
        graph.add_node(f"function:m.py#f{number:04d}", "function", identity=stable)
    graph.add_node("function:m.py#größe", "function", identity=stable)  # valid, not ASCII
    refs = _wanted(graph, "code", HashingEmbedder(16).space).refs
    assert refs["function:m.py#größe"] == EntityRef("symbols", "function:m.py#größe")
    assert len(refs) == 1501
    graph.add_node("function:m.py#f0700\x01", "function", identity=stable)
    graph.add_node("function:m.py#f0900" + "x" * 300, "function", identity=stable)
    with pytest.raises(CairnError) as raised:  # the first in node order, not the longer one
        _wanted(graph, "code", HashingEmbedder(16).space)
    assert "control character" in str(raised.value)


def _rich_graph() -> SemanticGraph:
    """The load tests' graph plus floats, non-ASCII text, provenance and metadata."""
    graph = build(docstring="Gibt den Namen zurück: naïve café \u00e9", extra=True)
    stable = EndpointIdentity.stable()
    graph.add_node(
        "function:app/ü.py#größe",
        "function",
        identity=stable,
        attributes={
            "name": "größe",
            "centrality": 0.125,
            "community": "c1",
            "level": 2,
            "range": [1, 1, 2, 2],
            "weights": [1.0, 2.5],
        },
    )
    graph.add_fact(
        "function:app/ü.py#größe",
        "class:app/users.py#UserService",
        "calls",
        {"invocation": "call", "dispatch": "direct"},
        occurrence=OccurrenceInput(
            adapter_id="python",
            strategy="ast",
            source_file="app/ü.py",
            source_range=SourceRange(1, 1, 1, 9),
            site_kind="call",
            provenance=({"tool": "ast", "score": 1.0},),
            confidence=(),
            metadata={"note": "naïve", "weight": 0.75},
        ),
    )
    return graph


def _walked(graph: SemanticGraph, encode: Any) -> tuple[Any, ...]:
    """Every batch an encoder yields for ``graph``, then its fingerprint."""
    encoder = _Encoder(_wanted(graph, "code", HashingEmbedder(16).space), encode)
    documents = [doc for batch in encoder.documents() for doc in batch]
    facts = [item for batch in encoder.facts() for item in batch]
    return encoder.wanted, documents, facts, encoder.fingerprint


@pytest.mark.parametrize("graph", [build(), build(extra=True), _rich_graph()])
def test_wanted_state_equals_the_plain_canonical_one(graph: SemanticGraph) -> None:
    wanted, fast_docs, fast_facts, fast_print = _walked(graph, _record_bytes)
    _, plain_docs, plain_facts, plain_print = _walked(graph, canonical_bytes)
    assert fast_print == plain_print
    assert [(d.ref, d.body, d.data) for d in fast_docs] == [
        (d.ref, d.body, d.data) for d in plain_docs
    ]
    assert [(f.fact.id, f.endpoints, f.stored) for f in fast_facts] == [
        (f.fact.id, f.endpoints, f.stored) for f in plain_facts
    ]
    # Every node once, in the store's (collection, ID) order; every fact once, by ID.
    assert [d.ref for d in fast_docs] == sorted(
        (EntityRef(wanted.refs[node.id].collection, node.id) for node in graph.nodes()),
        key=lambda ref: (ref.collection, ref.id),
    )
    assert [f.fact.id for f in fast_facts] == sorted(fact.id for fact in graph.facts())
    for document in fast_docs:
        assert document.data == canonical_bytes_reference(document.body)
    for item in fast_facts:
        fact_id = item.fact.id
        fact = graph.fact(fact_id)
        assert item.stored.shape is not None  # a graph's own records always split
        ends = (item.endpoints[0].id, item.endpoints[1].id)
        rebuilt = fact_record(item.stored, fact_id, fact.relation, ends)
        assert rebuilt == canonical_bytes_reference(fact.to_json())
        expected = {
            o.id: canonical_bytes_reference(o.to_json()) for o in graph.occurrences_of(fact_id)
        }
        assert {o.id: occurrence_record(o, fact_id) for o in item.stored.occurrences} == expected


def test_an_encoder_walks_documents_then_facts_once() -> None:
    encoder = _Encoder(_wanted(build(), "code", HashingEmbedder(16).space))
    with pytest.raises(RuntimeError):
        next(encoder.facts())  # the digest frames documents first
    with pytest.raises(RuntimeError):
        _ = encoder.fingerprint
    for _ in encoder.documents():
        pass
    with pytest.raises(RuntimeError):
        next(encoder.documents())
    with pytest.raises(RuntimeError):
        _ = encoder.fingerprint  # facts not walked yet
    for _ in encoder.facts():
        pass
    assert len(encoder.fingerprint) == 64


def _fail_while_paused() -> None:
    with _gc_paused():
        assert not gc.isenabled()
        raise RuntimeError("boom")


def test_gc_is_paused_inside_and_restored_after() -> None:
    assert gc.isenabled()
    with pytest.raises(RuntimeError, match="boom"):
        _fail_while_paused()
    assert gc.isenabled()
    gc.disable()
    try:
        with _gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # it was off before: left off
    finally:
        gc.enable()


_nested_values = st.recursive(
    st.none() | st.integers() | st.text(max_size=3) | st.floats(allow_nan=False),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.text(max_size=2), children, max_size=3)
        | st.tuples(children, children)
        | st.dictionaries(st.text(max_size=2), children, max_size=2).map(MappingProxyType)
    ),
    max_leaves=40,
)


@given(_nested_values, st.integers(min_value=0, max_value=6))
@settings(max_examples=1500, deadline=None)
def test_depth_within_agrees_with_json_depth(value: Any, limit: int) -> None:
    assert _depth_within(value, limit) == (json_depth(value) <= limit)


@pytest.mark.parametrize(
    "depth", [MAX_DOCUMENT_DEPTH - 1, MAX_DOCUMENT_DEPTH, MAX_DOCUMENT_DEPTH + 1]
)
def test_depth_within_at_the_document_limit(depth: int) -> None:
    value = _nested(depth)
    assert json_depth(value) == depth
    assert _depth_within(value, MAX_DOCUMENT_DEPTH) == (depth <= MAX_DOCUMENT_DEPTH)


def _indexed(fixture: str) -> SemanticGraph:
    from pathlib import Path

    from cairn.codegraph import index_repository

    root = Path(__file__).resolve().parents[1] / "fixtures" / fixture
    return index_repository(root).graph


@pytest.mark.parametrize(
    "graph",
    [build(), build(extra=True), _rich_graph(), _indexed("flask_app"), _indexed("ts_lib")],
    ids=["small", "extra", "rich", "flask_app", "ts_lib"],
)
def test_the_splitter_equals_the_general_split_functions(graph: SemanticGraph) -> None:
    # The oracle: the general functions over each record's whole JSON, with the
    # reference encoder. The splitter memoises shapes; its bytes must not differ.
    splitter = _Splitter(_record_bytes)
    memoised = 0
    for fact in graph.facts():
        ends = (fact.source, fact.target)
        occurrences = [splitter.occurrence(o, fact.id) for o in graph.occurrences_of(fact.id)]
        expected_occurrences = [
            split_occurrence(o.id, fact.id, o.to_json(), canonical_bytes_reference)
            for o in graph.occurrences_of(fact.id)
        ]
        assert occurrences == expected_occurrences
        stored = splitter.fact(fact, ends, occurrences)
        expected = split_fact(
            fact.to_json(),
            fact.id,
            fact.relation,
            ends,
            expected_occurrences,
            canonical_bytes_reference,
        )
        assert stored == expected
        memoised += stored.shape is not None
    assert memoised == graph.fact_count  # a graph's own records always split


def test_the_splitter_keeps_apart_shapes_that_differ_in_endpoint_identity() -> None:
    # Same relation and discriminator, endpoints of three identities: three shapes.
    graph = SemanticGraph()
    identities = {
        "a": EndpointIdentity.stable(),
        "b": EndpointIdentity.context_bound("source_location_derived"),
        "c": EndpointIdentity.context_bound("source_location_derived", "source_ordinal_derived"),
    }
    for name, identity in identities.items():
        graph.add_node(f"function:m.py#{name}", "function", identity=identity)
    for target in ("a", "b", "c"):
        graph.add_fact(
            "function:m.py#a",
            f"function:m.py#{target}",
            "calls",
            {"invocation": "call", "dispatch": "direct"},
        )
    splitter = _Splitter(_record_bytes)
    shapes = set()
    for fact in graph.facts():
        ends = (fact.source, fact.target)
        stored = splitter.fact(fact, ends, [])
        reference = split_fact(
            fact.to_json(), fact.id, fact.relation, ends, [], canonical_bytes_reference
        )
        assert stored == reference
        shapes.add(stored.shape)
    assert len(shapes) == 3
