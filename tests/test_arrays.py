"""``cairn.arrays``: helpers equal to the numpy functions they replace."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cairn.arrays import distinct


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-(2**40), 2**40) | st.integers(0, 5), max_size=200))
def test_distinct_equals_np_unique(values: list[int]) -> None:
    array = np.asarray(values, dtype=np.int64)
    found = distinct(array)
    assert found.dtype == np.int64
    assert found.tolist() == np.unique(array).tolist()
    assert array.tolist() == values  # the input is left as it was
