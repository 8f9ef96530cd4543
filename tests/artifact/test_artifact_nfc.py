"""The writer's NFC check of a body, window by window, against a check of the whole text."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cairn.artifact.format as format_module

# ASCII, letters that compose with marks, marks, Hangul jamo (they compose too), astral.
_ALPHABET = 'ae,"[n\\ \u0301\u0303\u0327\u00e9\u1100\u1161\u11a8\U0001f600'
_PIECE = st.builds(
    lambda head, tail: head + tail,
    st.sampled_from('[,{"0'),  # a piece of a body starts with a JSON delimiter
    st.text(alphabet=_ALPHABET, max_size=30),
)


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(_PIECE, min_size=1, max_size=6), window=st.integers(1, 9))
def test_windows_agree_with_the_whole_text(pieces: list[str], window: int) -> None:
    encoded = [piece.encode() for piece in pieces]
    expected = unicodedata.is_normalized("NFC", "".join(pieces))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(format_module, "NFC_WINDOW_BYTES", window)
        assert format_module._normalized(encoded) is expected
        assert format_module._normalized([memoryview(item) for item in encoded]) is expected


def test_a_long_run_without_ascii_is_checked_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(format_module, "NFC_WINDOW_BYTES", 2)
    assert format_module._normalized([("[" + "\u00e9" * 50 + "]").encode()])
    assert not format_module._normalized([("[" + "\u00e9" * 50 + "e\u0301]").encode()])
