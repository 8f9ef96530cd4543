"""The bulk helpers of the writer agree with the per-value code they stand in for.

Each oracle is the per-value path the writer still takes when a bulk proof fails:
``_table`` with ``_discriminator_key``, ``_walk_free``/``free_items``, ``seal``, and
the pool's own result pipe for ``Spool``.
"""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

import orjson
import pytest
from artifact_support import FIXED_TIME, rich_graph
from hypothesis import given, settings
from hypothesis import strategies as st

from cairn.artifact import decode_artifact, encode_artifact
from cairn.artifact.format import (
    _discriminator_key,
    _discriminator_table,
    _flat_and_plain,
    _table,
    _walk_free,
    _where,
    _Writer,
)
from cairn.artifact.limits import ARTIFACT_HEADER
from cairn.artifact.paths import PATH_FIELD_NAMES
from cairn.artifact.seal import (
    DIGEST_PLACEHOLDER,
    Chunked,
    digest_tail,
    seal,
    sealed_pieces,
    sealing,
)
from cairn.artifact.workers import SharedWork, Spool
from cairn.errors import CairnError
from cairn.graph.model import Discriminator, freeze
from cairn.graph.multigraph import SemanticGraph

# Values that are equal across types (True == 1 == 1.0, 0.0 == -0.0) but print apart.
_TRICKY = st.sampled_from([True, False, 1, 0, 1.0, 0.0, -0.0, 2.5, "1", "a", None])
_LEAF = st.one_of(_TRICKY, st.integers(-(2**60), 2**60), st.text(max_size=3))
_DISC_VALUE = st.one_of(_LEAF, st.lists(_TRICKY, max_size=2))
_KEYS = st.one_of(st.sampled_from(sorted(PATH_FIELD_NAMES)), st.sampled_from(["k", "v", "é"]))
_PATHS = st.sampled_from(["/abs", "C:\\x", "file:///x", "~/x", "rel/x", "a:b", "", "x"])
_FREE_LEAF = st.one_of(_LEAF, _PATHS, st.floats(allow_nan=False, allow_infinity=False))
_FREE = st.recursive(
    _FREE_LEAF,
    lambda inner: st.one_of(st.lists(inner, max_size=2), st.dictionaries(_KEYS, inner, max_size=3)),
    max_leaves=6,
)
_FLAT_MAPPING = st.dictionaries(_KEYS, st.one_of(_LEAF, _PATHS), max_size=4)


@st.composite
def _discriminators(draw: st.DrawFn) -> list[Discriminator]:
    values = st.dictionaries(st.sampled_from(["a", "b", "c"]), _DISC_VALUE, max_size=3)
    scalar_values = st.dictionaries(st.sampled_from(["a", "b"]), _TRICKY, max_size=2)
    pool = draw(
        st.lists(
            st.builds(
                Discriminator,
                registry=st.sampled_from(["r1", "r2"]),
                policy_version=st.sampled_from([1, 2]),
                completeness=st.sampled_from(["complete", "partial"]),
                value=st.one_of(scalar_values, values),
                reasons=st.lists(st.sampled_from(["x", "y"]), max_size=2).map(tuple),
            ),
            min_size=1,
            max_size=6,
        )
    )
    return draw(st.lists(st.sampled_from(pool), max_size=30))


@settings(max_examples=300, deadline=None)
@given(_discriminators())
def test_discriminator_table_groups_exactly_as_the_per_value_key(
    discriminators: list[Discriminator],
) -> None:
    def outcome(call: Any) -> Any:
        try:
            return call()
        except CairnError as exc:  # an unsafe integer: both must refuse it alike
            return type(exc), str(exc)

    expected = outcome(lambda: _table(discriminators, _discriminator_key, Discriminator.to_json))
    assert outcome(lambda: _discriminator_table(discriminators)) == expected


def test_discriminator_table_keeps_equal_values_of_different_types_apart() -> None:
    discriminators = [Discriminator("r", 1, "complete", {"a": value}) for value in (True, 1, 1.0)]
    entries, rows = _discriminator_table(discriminators)
    # 1 and 1.0 print alike ("1"); True prints as true and must not join them.
    assert [orjson.loads(entry)["value"]["a"] for entry in entries] == [1, True]
    assert type(orjson.loads(entries[1])["value"]["a"]) is bool
    assert rows == [1, 0, 0]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(_FLAT_MAPPING, st.dictionaries(_KEYS, _FREE, max_size=3)), max_size=5))
def test_flat_and_plain_only_passes_what_walk_free_passes_unchanged(
    mappings: list[dict[str, Any]],
) -> None:
    frozen = [freeze(mapping) for mapping in mappings]
    if not _flat_and_plain(frozen):
        return
    for value in frozen:
        assert _walk_free(value, lambda: "here") == (dict(value), True)


def test_flat_and_plain_refuses_what_needs_the_slow_path() -> None:
    assert _flat_and_plain([freeze({"path": "rel/x", "n": 2**53 - 1, "ok": True, "none": None})])
    assert not _flat_and_plain([freeze({"path": "/abs"})])
    assert not _flat_and_plain([freeze({"n": 2**53 + 1})])
    assert not _flat_and_plain([freeze({"x": 0.5})])
    assert not _flat_and_plain([freeze({"x": {"y": 1}})])
    assert not _flat_and_plain(["not a mapping"])


def _printed_or_error(call: Any) -> Any:
    try:
        return orjson.dumps(call(), option=orjson.OPT_SORT_KEYS)
    except CairnError as exc:
        return type(exc), str(exc)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.lists(st.one_of(_FLAT_MAPPING, _FREE), max_size=3).map(
            lambda items: tuple(freeze(item) for item in items)
        ),
        max_size=6,
    )
)
def test_free_items_column_prints_like_the_record_by_record_path(cells: list[Any]) -> None:
    records = [SimpleNamespace(id=f"r{n}", cell=cell) for n, cell in enumerate(cells)]
    writer = _Writer(fast=True)

    def one_by_one() -> list[Any]:
        return [
            writer.free_items(record.cell, _where("x", record.id, ".cell")) if record.cell else ()
            for record in records
        ]

    def column() -> list[Any]:
        ids = [record.id for record in records]
        return writer.free_items_column(ids, [record.cell for record in records], "x", ".cell")

    assert _printed_or_error(column) == _printed_or_error(one_by_one)


def test_sealed_pieces_equal_seal_however_the_body_is_split() -> None:
    body = b'{"a":1,"payload_sha256":"' + DIGEST_PLACEHOLDER.encode() + b'","z":2}'
    tail = b',"z":2}'
    assert digest_tail({"a": 1, "payload_sha256": "x", "z": 2}) == tail
    split = [body[:3], memoryview(body)[3:6], body[6:]]  # the member in the last piece
    assert b"".join(sealed_pieces(split, tail)) == seal(body)
    assert seal(body) == seal(body, tail)
    with pytest.raises(ValueError, match="placeholder"):
        sealed_pieces([body.replace(b"0", b"1")], tail)
    with pytest.raises(ValueError, match="no top-level payload_sha256"):
        sealed_pieces([b"{}"], b"}")
    with pytest.raises(ValueError, match="no top-level payload_sha256"):
        sealed_pieces([body], b"}")  # a tail that is not the body's


def test_sealing_streams_the_same_pieces_and_checks_the_body_first() -> None:
    """The stream written while the digest is hashed on a thread: the same bytes as
    ``sealed_pieces``, the pieces before the last handed on as they are, a bad body
    refused before anything is handed on, and no hashing thread left behind by a
    writer that stops early."""
    body = b'{"a":1,"payload_sha256":"' + DIGEST_PLACEHOLDER.encode() + b'","z":2}'
    tail = b',"z":2}'
    split = [body[:3], memoryview(body)[3:6], body[6:]]
    streamed = list(sealing(split, tail))
    assert streamed[:2] == split[:2] and streamed[0] is split[0]
    assert b"".join(streamed) == b"".join(sealed_pieces(split, tail)) == seal(body)
    chunked = Chunked(6, lambda: [body[:2], body[2:6]])  # made again for each reader
    assert b"".join(sealing([chunked, body[6:]], tail)) == seal(body)
    with pytest.raises(ValueError, match="not whole"):
        sealing([body[:6], Chunked(len(body) - 6, lambda: [body[6:]])], tail)
    with pytest.raises(ValueError, match="placeholder"):
        sealing([body.replace(b"0", b"1")], tail)  # raised at the call, not when consumed
    with pytest.raises(ValueError, match="no top-level payload_sha256"):
        sealing([body], b"}")
    before = threading.active_count()
    stream = sealing([b"x" * 10_000_000, *split], tail)
    next(stream)
    stream.close()  # a failed write stops consuming: the thread is joined all the same
    assert threading.active_count() == before


def test_a_nested_key_named_like_the_digest_is_left_alone() -> None:
    """Free-form values may use the digest's key: only the top-level member is sealed."""
    graph = SemanticGraph()
    graph.add_node("file:a.py", "file", attributes={"payload_sha256": DIGEST_PLACEHOLDER})
    graph.add_node("file:b.py", "file", attributes={"payload_sha256": "not hex"})
    provenance = {"payload_sha256": DIGEST_PLACEHOLDER, "producer": "test"}
    for parallel in (False, True):
        data = encode_artifact(
            graph, generated_at="2024-01-01T00:00:00Z", provenance=provenance, parallel=parallel
        )
        loaded = decode_artifact(data)
        assert loaded.graph.node("file:a.py").attributes["payload_sha256"] == DIGEST_PLACEHOLDER
        assert loaded.graph.node("file:b.py").attributes["payload_sha256"] == "not hex"
        assert loaded.graph == graph
        payload = orjson.loads(data[len(ARTIFACT_HEADER) : -1])
        assert payload["provenance"] == provenance
        assert payload["payload_sha256"] != DIGEST_PLACEHOLDER


def _write_to(state: bytes, spool: Spool) -> int:
    return spool.write(state)


@pytest.mark.parametrize("parallel", [True, False])
def test_spool_hands_bytes_back_from_a_forked_worker(parallel: bool) -> None:
    data = bytes(range(256)) * 40_000
    with Spool() as spool, SharedWork(data, 1, parallel=parallel) as work:
        work.submit(_write_to, spool)
        [size] = work.drain()
        assert size == len(data)
        assert spool.view(size) == data
        with pytest.raises(EOFError):
            spool.view(size + 1)


def test_parallel_write_through_the_spool_is_byte_identical(monkeypatch: Any) -> None:
    from cairn.artifact import format as format_module

    graph = rich_graph()
    serial = encode_artifact(graph, generated_at=FIXED_TIME, parallel=False)
    monkeypatch.setattr(format_module, "PARALLEL_MIN_WRITE_OBJECTS", 0)
    assert encode_artifact(graph, generated_at=FIXED_TIME, parallel=True) == serial
    assert decode_artifact(serial).graph == graph


# ------------------------------------------------------------------ load side
@settings(max_examples=300, deadline=None)
@given(st.lists(st.dictionaries(_KEYS, _FREE, max_size=3), max_size=6))
def test_freeze_objects_equals_freeze_canonical_cell_by_cell(cells: list[dict[str, Any]]) -> None:
    from cairn.artifact.reader import _EMPTY_MAPPING, _freeze_canonical, _freeze_objects

    parsed = [orjson.loads(orjson.dumps(cell, option=orjson.OPT_SORT_KEYS)) for cell in cells]
    expected = [_freeze_canonical(cell) if cell else _EMPTY_MAPPING for cell in parsed]
    got = _freeze_objects(parsed)
    assert got == expected
    assert [type(item) for item in got] == [type(item) for item in expected]


def test_columns_of_equals_one_attribute_pass_per_column() -> None:
    from operator import attrgetter

    from cairn.artifact.format import _OCCURRENCE_FIELDS, _columns_of

    occurrences = rich_graph().occurrences()
    expected = [tuple(map(attrgetter(name), occurrences)) for name in _OCCURRENCE_FIELDS]
    assert _columns_of(occurrences, _OCCURRENCE_FIELDS) == expected
    assert _columns_of((), ("id", "kind")) == [(), ()]
