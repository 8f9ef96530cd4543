"""The bulk helpers of a verified load agree with the per-value reference they replace.

Each helper is a faster form of a public, per-value function (``freeze``, the record
constructors, ``absolute_path_fields``, the per-cell canonical patches); the reference
is the oracle, on hypothesis-generated JSON.
"""

from __future__ import annotations

import copy
from types import MappingProxyType
from typing import Any

import orjson
import pytest
from artifact_support import FIXED_TIME, forge, payload_of, rich_graph
from hypothesis import given, settings
from hypothesis import strategies as st

from cairn.artifact import decode_artifact, encode_artifact
from cairn.artifact.format import _plain_mapping, _walk_free
from cairn.artifact.paths import PATH_FIELD_NAMES, absolute_path_fields, has_absolute_path
from cairn.artifact.reader import _assemble, _freeze_canonical
from cairn.artifact.verify import (
    _fragment,
    _items_safe,
    _objects_safe,
    _observations_safe,
    _patch_items,
    _patch_observations,
    _same_bytes,
)
from cairn.canonical import canonical_bytes
from cairn.errors import ArtifactCorruptError, CairnError
from cairn.graph import EndpointIdentity, EvidenceOccurrence, OccurrenceOwner, SourceRange
from cairn.graph.model import freeze, thaw

_KEYS = st.one_of(st.sampled_from(sorted(PATH_FIELD_NAMES)), st.text(max_size=4))
_PATHS = st.sampled_from(["/abs", "C:\\x", "file:///x", "~/x", "rel/x", "a:b", "", "x"])
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**60), 2**60),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=5),
    _PATHS,
)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_KEYS, inner, max_size=3)),
    max_leaves=12,
)


def _parsed_canonical(value: Any) -> Any:
    """``value`` as a loader sees it: parsed back from its canonical bytes."""
    return orjson.loads(canonical_bytes(value))


@settings(max_examples=300, deadline=None)
@given(_JSON)
def test_freeze_canonical_equals_freeze_on_canonical_json(value: Any) -> None:
    try:
        parsed = _parsed_canonical(value)
    except CairnError:  # values the canonicaliser refuses never reach a load
        return
    fast, reference = _freeze_canonical(parsed), freeze(parsed)
    assert fast == reference
    assert type(fast) is type(reference)
    # Equal and printed alike: the same types all the way down (True is not 1).
    assert orjson.dumps(thaw(fast)) == orjson.dumps(thaw(reference))


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(_KEYS, st.one_of(_SCALARS, st.lists(_SCALARS, max_size=4), _JSON), max_size=5)
)
def test_a_mapping_called_plain_prints_as_the_reference_walk(value: dict[str, Any]) -> None:
    """``_plain_mapping`` (one node's attributes) claims only what ``_walk_free`` confirms:
    no error, safe, and orjson prints the mapping as it prints the walked value."""
    frozen = freeze(value)
    if not _plain_mapping(frozen):
        return
    plain, safe = _walk_free(frozen, lambda: "x")
    assert safe
    assert orjson.dumps(dict(frozen)) == orjson.dumps(plain)


def test_plain_mapping_refuses_what_the_walk_must_see() -> None:
    assert _plain_mapping(freeze({"range": [1, 2, 3, 4], "name": "f", "flag": None}))
    assert not _plain_mapping(freeze({"path": "/abs/app.py"}))
    assert not _plain_mapping(freeze({"line": 2**60}))
    assert not _plain_mapping(freeze({"range": [1, 2**60]}))
    assert not _plain_mapping(freeze({"score": 0.5}))
    assert not _plain_mapping(freeze({"partial_parse": {"error": "x", "line": 3}}))
    assert not _plain_mapping({"name": "f"})  # not frozen


def test_freeze_canonical_leaves_nothing_mutable() -> None:
    frozen = _freeze_canonical({"a": [1, {"b": [2]}], "c": {"d": []}})
    assert isinstance(frozen, MappingProxyType)
    assert frozen["a"] == (1, MappingProxyType({"b": (2,)}))
    assert isinstance(frozen["a"][1], MappingProxyType)
    assert frozen["c"]["d"] == ()
    with pytest.raises(TypeError):
        frozen["a"] = 1  # type: ignore[index]


@settings(max_examples=300, deadline=None)
@given(_JSON)
def test_has_absolute_path_agrees_with_absolute_path_fields(value: Any) -> None:
    parsed = orjson.loads(orjson.dumps(value))
    assert has_absolute_path(parsed) == bool(absolute_path_fields(parsed, "x"))


def test_assemble_equals_the_constructor() -> None:
    owner = OccurrenceOwner("python", "ast", "1")
    columns: list[list[Any]] = [
        ["o1", "o2"],
        ["f1", "f2"],
        [owner, owner],
        ["a.py", None],
        [SourceRange(1, 2, 3, 4), None],
        [None, "b.py"],
        [None, SourceRange(5, 1, 5, 9)],
        ["call", None],
        [None, "k"],
        [(), (MappingProxyType({"rule": "r"}),)],
        [(), ()],
        [(), ()],
        [(), ("metadata_conflict",)],
    ]
    assert _assemble(EvidenceOccurrence, columns, 2) == list(map(EvidenceOccurrence, *columns))
    assert _assemble(SourceRange, [[1], [2], [3], [4]], 1) == [SourceRange(1, 2, 3, 4)]


def test_assemble_refuses_a_short_column() -> None:
    with pytest.raises(ArtifactCorruptError, match="cells"):
        _assemble(SourceRange, [[1, 1], [2, 2], [3], [4, 4]], 2)


_COLUMNS = st.lists(st.dictionaries(st.text(max_size=3), _JSON, max_size=3), max_size=5)


@settings(max_examples=300, deadline=None)
@given(_COLUMNS)
def test_a_column_called_safe_needs_no_patch(column: list[Any]) -> None:
    parsed = orjson.loads(orjson.dumps(column))
    if _objects_safe(parsed):
        assert all(_fragment(cell) is cell for cell in parsed)
    cells = [list(cell.values()) for cell in parsed]
    if _items_safe(cells):
        assert all(_patch_items(cell) is cell for cell in cells)
    wrapped = [[cell] for cell in parsed]
    if _items_safe(wrapped):
        assert all(_patch_items(cell) is cell for cell in wrapped)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.floats(0, 1) | st.integers(0, 1), max_size=3), max_size=5))
def test_an_observation_column_called_safe_needs_no_patch(values: list[list[Any]]) -> None:
    column = [[{"value": v, "method": "m", "observer": None} for v in cell] for cell in values]
    if _observations_safe(column):
        assert all(_patch_observations(cell) is cell for cell in column)
    unsafe = [[{"value": 1e-7, "method": "m", "observer": None}]]
    assert not _observations_safe(unsafe)
    assert _patch_observations(unsafe[0]) is not unsafe[0]


def test_same_bytes_compares_views_and_bytes() -> None:
    data = b'HEADER\n{"a":1}\n'
    view = memoryview(data)[7:-1]
    assert _same_bytes(b'{"a":1}', view)
    assert not _same_bytes(b'{"a":2}', view)
    assert not _same_bytes(b'{"a":1', view)
    assert not _same_bytes(b'{"a":1} ', view)
    assert _same_bytes(b"xy", b"xy")


# ------------------------------------------------ loads through the bulk paths
GOOD = encode_artifact(rich_graph(), generated_at=FIXED_TIME)
PAYLOAD = payload_of(GOOD)


def _edited(path: tuple[Any, ...], value: Any) -> bytes:
    payload = copy.deepcopy(PAYLOAD)
    target = payload
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return forge(payload)


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("nodes", "id", 0), " "),
        (("nodes", "id", 0), 5),
        (("nodes", "kind", 0), " "),
        (("nodes", "kind", 0), ["function"]),
        (("nodes", "attributes", 0), {"nested": [{"path": "/abs/app.py"}]}),
        (("facts", "annotation_variants", 0), [{"deep": {"file": "C:\\x"}}]),
        (("occurrences", "source_range", 0), [1, 2, 3]),
        (("occurrences", "source_range", 0), [True, 1, 1, 1]),
        (("occurrences", "source_range", 0), "abcd"),
        (("occurrences", "provenance", 0), [{"source_file": "/etc/passwd"}]),
    ],
)
def test_bulk_built_records_still_refuse_bad_values(path: tuple[Any, ...], value: Any) -> None:
    with pytest.raises(ArtifactCorruptError):
        decode_artifact(_edited(path, value))


def test_the_fixture_loads_equal_through_the_bulk_paths() -> None:
    loaded = decode_artifact(GOOD).graph
    assert loaded == rich_graph()
    node = next(node for node in loaded.nodes() if node.attributes.get("tags"))
    assert node.attributes["tags"] == ("a", "b")
    assert isinstance(node.attributes, MappingProxyType)
    assert all(type(n.identity) is EndpointIdentity for n in loaded.nodes())
