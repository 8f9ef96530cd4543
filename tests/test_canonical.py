"""Canonical JSON: RFC 8785 vectors, strict rejections, and fast path == reference."""

import hashlib
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cairn.canonical import (
    MAX_DEPTH,
    MAX_SAFE_INTEGER,
    canonical_bytes,
    canonical_bytes_reference,
    canonical_set,
    digest,
    format_number,
    nfc,
)
from cairn.errors import CanonicalizationError

# RFC 8785 Appendix B number serialisations (IEEE double -> ECMAScript string).
RFC_NUMBERS = [
    (0.0, "0"),
    (-0.0, "0"),
    (5e-324, "5e-324"),
    (1.7976931348623157e308, "1.7976931348623157e+308"),
    (9007199254740992.0, "9007199254740992"),
    (9007199254740994.0, "9007199254740994"),
    (295147905179352830000.0, "295147905179352830000"),
    (1e21, "1e+21"),
    (1e23, "1e+23"),
    (1e-7, "1e-7"),
    (0.000001, "0.000001"),
    (333333333.3333332, "333333333.3333332"),
    (4.5, "4.5"),
    (0.002, "0.002"),
    (1e-27, "1e-27"),
    (1e30, "1e+30"),
    (-1.5e-9, "-1.5e-9"),
    (123456789012345680000.0, "123456789012345680000"),
    (1.2345678901234568e17, "123456789012345680"),
    (100.0, "100"),
]


@pytest.mark.parametrize(("value", "expected"), RFC_NUMBERS)
def test_number_formatting_matches_ecmascript(value: float, expected: str) -> None:
    assert format_number(value) == expected
    assert canonical_bytes(value) == expected.encode()
    assert canonical_bytes_reference(value) == expected.encode()


def test_rfc8785_example_object() -> None:
    value = {
        "numbers": [333333333.33333329, 1e30, 4.50, 2e-3, 0.000000000000000000000000001],
        "string": "\u20ac$\u000f\u000aA'\u0042\u0022\u005c\\\"/",
        "literals": [None, True, False],
    }
    expected = (
        '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
        '"string":"\u20ac$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'
    )
    assert canonical_bytes_reference(value) == expected.encode("utf-8")
    assert canonical_bytes(value) == expected.encode("utf-8")


def test_keys_sort_by_code_point_and_strings_are_nfc() -> None:
    decomposed = "e\u0301"  # e + combining acute
    value = {"b": 1, "a": 2, decomposed: 3, "\U0001f600": 4, "\uffff": 5}
    out = canonical_bytes(value).decode()
    assert out == '{"a":2,"b":1,"\u00e9":3,"\uffff":5,"\U0001f600":4}'
    assert canonical_bytes(decomposed) == '"\u00e9"'.encode()


def test_control_characters_escape_lowercase() -> None:
    assert canonical_bytes("\x00\x1f\b\t\n\f\r\x7f") == b'"\\u0000\\u001f\\b\\t\\n\\f\\r\x7f"'


@pytest.mark.parametrize(
    "bad",
    [
        math.nan,
        math.inf,
        -math.inf,
        (1, 2),
        {1, 2},
        b"bytes",
        {1: "int key"},
        MAX_SAFE_INTEGER + 1,
        -(MAX_SAFE_INTEGER + 1),
        "\ud800",
        object(),
    ],
)
def test_non_json_values_are_rejected(bad: object) -> None:
    with pytest.raises(CanonicalizationError):
        canonical_bytes(bad)
    with pytest.raises(CanonicalizationError):
        canonical_bytes_reference(bad)


def test_booleans_are_not_numbers() -> None:
    with pytest.raises(CanonicalizationError):
        format_number(True)


def test_cycles_are_rejected() -> None:
    looped: list[object] = []
    looped.append(looped)
    with pytest.raises(CanonicalizationError, match=r"cycle|deeper"):
        canonical_bytes(looped)
    mapping: dict[str, object] = {}
    mapping["self"] = mapping
    with pytest.raises(CanonicalizationError):
        canonical_bytes_reference(mapping)


def test_depth_limit() -> None:
    value: object = 1
    for _ in range(MAX_DEPTH):
        value = [value]
    assert canonical_bytes(value).startswith(b"[[")
    with pytest.raises(CanonicalizationError, match="deeper"):
        canonical_bytes([value])


def test_keys_colliding_after_nfc_are_rejected() -> None:
    with pytest.raises(CanonicalizationError, match="collide"):
        canonical_bytes({"\u00e9": 1, "e\u0301": 2})


def test_digest_is_full_sha256_of_canonical_bytes() -> None:
    value = {"b": [1, 2], "a": "x"}
    assert digest(value) == hashlib.sha256(b'{"a":"x","b":[1,2]}').hexdigest()
    assert len(digest(value)) == 64


def test_canonical_set_dedupes_and_orders_by_bytes() -> None:
    # Byte order of the canonical forms: '"' (0x22) < '3' (0x33) < '{' (0x7b).
    assert canonical_set([{"b": 1}, "z", {"b": 1}, 3, "a"]) == ["a", "z", 3, {"b": 1}]


def test_nfc_keeps_normalised_text_identical() -> None:
    text = "already normal"
    assert nfc(text) is text


json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-MAX_SAFE_INTEGER, max_value=MAX_SAFE_INTEGER)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=6) | st.dictionaries(st.text(max_size=8), children, max_size=6)
    ),
    max_leaves=40,
)


@settings(max_examples=400, deadline=None)
@given(json_values)
def test_fast_path_is_byte_identical_to_reference(value: object) -> None:
    assert_fast_path_equals_reference(value)


def assert_fast_path_equals_reference(value: object) -> None:
    """``canonical_bytes`` gives the reference's bytes, or fails where the reference does."""
    try:
        expected = canonical_bytes_reference(value)
    except CanonicalizationError:
        with pytest.raises(CanonicalizationError):
            canonical_bytes(value)
        return
    assert canonical_bytes(value) == expected


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_every_float_round_trips_through_its_canonical_form(value: float) -> None:
    text = format_number(value)
    assert float(text) == value or (value == 0 and text == "0")


whole_float_values = st.recursive(
    st.integers(min_value=-(2**60), max_value=2**60).map(float)
    | st.sampled_from([0.0, -0.0, 1.0, 2.0**53, 2.0**53 + 2, 1e16, 1e21])
    | json_scalars,
    lambda children: (
        st.lists(children, max_size=6) | st.dictionaries(st.text(max_size=8), children, max_size=6)
    ),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)
@given(whole_float_values)
def test_whole_floats_take_the_fast_path_with_reference_bytes(value: object) -> None:
    assert_fast_path_equals_reference(value)


def test_whole_float_weights_print_as_integers() -> None:
    assert canonical_bytes({"w": 1.0, "v": [0.5, -0.0, 3.0]}) == b'{"v":[0.5,0,3],"w":1}'


def test_right_sized_bytes_hold_only_their_length() -> None:
    """Kept records cost their length, not orjson's (up to 4 KiB) output buffer."""
    import tracemalloc

    import orjson

    from cairn.canonical import right_sized

    records = [{"id": f"n{i}", "range": [i, 1, i, 9]} for i in range(200)]
    tracemalloc.start()
    try:
        kept = [canonical_bytes(record) for record in records]
        held, _peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert kept == [orjson.dumps(record, option=orjson.OPT_SORT_KEYS) for record in records]
    longest = max(len(item) for item in kept)
    assert held < len(records) * (longest + 128)  # bytes header plus list slot, no slack
    assert right_sized(b"abc") == b"abc"
