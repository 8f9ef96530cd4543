"""``merge_flows_again``: the flow table of changed modules' parts, made from the last
table, is the table ``merge_flows`` makes of every module's parts afresh (items, their
order, and the keys' order)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from cairn.codegraph.resolve import merge_flows, merge_flows_again

KEYS = [(f"function:m.f{number}", str(position)) for number in range(4) for position in range(2)]
ITEMS = [(f"m{number}.py", ("binding", number % 3)) for number in range(5)]

edges = st.lists(st.tuples(st.sampled_from(KEYS), st.sampled_from(ITEMS)), max_size=6).map(tuple)
parts = st.tuples(edges, edges)
modules = st.dictionaries(st.sampled_from([f"m{number}.py" for number in range(6)]), parts)


@settings(max_examples=400, deadline=None)
@given(modules, modules, st.lists(st.booleans(), min_size=6, max_size=6))
def test_flows_merged_again_equal_flows_merged_afresh(
    before: dict[str, Any], changes: dict[str, Any], keep: list[bool]
) -> None:
    now = {
        path: before[path]
        if path in before and keep[number]
        else changes.get(path, before.get(path))
        for number, path in enumerate(f"m{number}.py" for number in range(6))
        if path in before or path in changes
    }
    for path in list(now):
        if path in before and not keep[int(path[1])] and path not in changes:
            del now[path]  # a module gone
    before = dict(sorted(before.items()))
    now = dict(sorted(now.items()))
    table = merge_flows(list(before.values()))
    again = merge_flows_again(table, before, now)
    expected = merge_flows(list(now.values()))
    assert list(again.items()) == list(expected.items())
    if before == now:
        assert again is table  # nothing changed: the very table
