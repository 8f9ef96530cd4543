"""Python value-flow rules: straight-line reaching bindings (``cairn.codegraph.flow``), a use
seeing what its name holds at that statement, and the calls made through bound methods,
``functools.partial``, ``map`` results and literals run by ``eval``/``exec``."""

from __future__ import annotations

from pathlib import Path

from test_codegraph_calls_accuracy import call_pairs

from cairn.codegraph import index_repository

DEFS = """
def f(): pass
def g(): pass
"""
F = "function:m.py#f"
G = "function:m.py#g"
FILE = "file:m.py"


def _calls_of(tmp_path: Path, source: str, caller: str) -> dict[str, list[int]]:
    """Per callee of ``caller`` in ``m.py``, the lines of its call sites."""
    (tmp_path / "m.py").write_text(source, "utf-8")
    graph = index_repository(tmp_path).graph
    return {
        fact.target: sorted(o.source_range.start_line for o in graph.occurrences_of(fact.id))
        for fact in graph.facts()
        if fact.relation == "calls" and fact.source == caller
    }


def _targets(tmp_path: Path, body: str, caller: str = FILE) -> set[str]:
    """The callees of ``caller`` among ``f`` and ``g`` after indexing ``DEFS + body``."""
    pairs = call_pairs(tmp_path, {"m.py": DEFS + body})
    return {target for source, target in pairs if source == caller and target in (F, G)}


def test_a_later_assignment_replaces_an_earlier_one(tmp_path: Path) -> None:
    body = """
a = f
a()
a = g
"""
    assert _targets(tmp_path, body) == {F}  # the union of a's bindings would add g


def test_in_a_function_the_last_assignment_reaches(tmp_path: Path) -> None:
    body = """
def run(cb=f):
    cb = g
    cb()
"""
    assert _targets(tmp_path, body, "function:m.py#run") == {G}


def test_a_branch_adds_to_what_reaches(tmp_path: Path) -> None:
    body = """
import os
a = f
if os.environ:
    a = g
a()
"""
    assert _targets(tmp_path, body) == {F, G}


def test_a_use_inside_a_loop_sees_every_binding(tmp_path: Path) -> None:
    body = """
a = f
for _ in range(2):
    a()
    a = g
"""
    assert _targets(tmp_path, body) == {F, G}


def test_a_name_a_nested_scope_rebinds_keeps_every_binding(tmp_path: Path) -> None:
    body = """
a = f
def swap():
    global a
    a = g
swap()
a()
"""
    assert _targets(tmp_path, body) == {F, G}


def test_a_lambda_runs_later_and_sees_every_binding(tmp_path: Path) -> None:
    body = """
a = f
later = lambda: a()
a = g
"""
    assert _targets(tmp_path, body) == {F, G}


def test_an_item_store_replaces_the_item_at_its_key(tmp_path: Path) -> None:
    body = """
d = {"k": f, "other": {"n": f}}
d["k"] = g
d["k"]()
d["other"]["n"] = g
d["other"]["n"]()
"""
    assert _targets(tmp_path, body) == {G}


def test_dict_update_stores_its_items(tmp_path: Path) -> None:
    body = """
d = {"k": f, "j": f}
d.update({"k": g})
d.update(j=g)
d["k"]()
d["j"]()
"""
    assert _targets(tmp_path, body) == {G}


def test_a_conditional_item_store_adds(tmp_path: Path) -> None:
    body = """
import os
d = {"k": f}
if os.environ:
    d["k"] = g
d["k"]()
"""
    assert _targets(tmp_path, body) == {F, G}


def test_a_store_at_an_unknown_key_may_be_read_at_any_key(tmp_path: Path) -> None:
    body = """
def put(key="k"):
    d[key] = g
d = {}
put()
d["k"]()
"""
    assert _targets(tmp_path, body) == {G}


def test_the_decorator_a_name_holds_at_the_definition(tmp_path: Path) -> None:
    source = """
def dec1(fn): return fn
def dec2(fn): return fn
a = dec1
a = dec2
@a
def h(): pass
"""
    pairs = call_pairs(tmp_path, {"m.py": source})
    assert (FILE, "function:m.py#dec2") in pairs
    assert (FILE, "function:m.py#dec1") not in pairs


def test_functools_partial_calls_the_wrapped_function(tmp_path: Path) -> None:
    body = """
from functools import partial
p = partial(f, 1)
p()
g = partial(g, 2)
g()
"""
    assert _targets(tmp_path, body) == {F, G}


def test_a_partial_that_is_not_functools_is_an_ordinary_call(tmp_path: Path) -> None:
    body = """
class Box:
    def run(self): pass
def partial(fn):
    return Box()
p = partial(f)
p.run()
"""
    pairs = call_pairs(tmp_path, {"m.py": DEFS + body})
    assert (FILE, "method:m.py#Box.run") in pairs
    assert (FILE, F) not in pairs


def test_a_bound_method_passed_on_takes_its_arguments_after_self(tmp_path: Path) -> None:
    body = """
class Box:
    def last(self):
        pass
    def middle(self, then):
        then()
    def first(self, fn, arg):
        fn(arg)
box = Box()
box.first(box.middle, box.last)
"""
    pairs = call_pairs(tmp_path, {"m.py": DEFS + body})
    assert ("method:m.py#Box.first", "method:m.py#Box.middle") in pairs
    # ``fn(arg)`` passes ``arg`` to ``then``: ``self`` is the bound box.
    assert ("method:m.py#Box.middle", "method:m.py#Box.last") in pairs


def test_iterating_a_map_gives_what_its_function_returns(tmp_path: Path) -> None:
    body = """
def pick(x):
    return g
for chosen in map(pick, [1, 2]):
    chosen()
"""
    assert _targets(tmp_path, body) == {G}


def test_a_literal_run_by_eval_or_exec_calls_from_here(tmp_path: Path) -> None:
    body = """
def run():
    eval("f()")
    exec("x = g()")
    eval("f(")  # not code: nothing is called
"""
    assert _targets(tmp_path, body, "function:m.py#run") == {F, G}


def test_eval_that_is_not_the_builtin_runs_nothing(tmp_path: Path) -> None:
    body = """
def eval(text):
    return text
eval("f()")
"""
    assert _targets(tmp_path, body) == set()


def test_a_subscript_by_a_constant_name_reads_that_key(tmp_path: Path) -> None:
    files = {
        "keys.py": "SECOND = 1\nNAME = 'g'\n",
        "m.py": DEFS
        + """
from keys import SECOND, NAME
FIRST = 0
ls = [f, g]
table = {"f": f, "g": g}
def run():
    ls[FIRST]()
def run_imported():
    ls[SECOND]()
    table[NAME]()
""",
    }
    pairs = call_pairs(tmp_path, files)
    assert {t for s, t in pairs if s == "function:m.py#run"} == {F}
    assert {t for s, t in pairs if s == "function:m.py#run_imported"} == {G}


def test_a_subscript_by_a_name_that_is_no_one_constant_reads_any_key(tmp_path: Path) -> None:
    body = """
import os
table = {"f": f, "g": g}
ls = [f, g]
KEY = "f"
if os.environ:
    KEY = "g"
def run(key):
    table[KEY]()
    ls[key]()
"""
    # ``KEY`` may hold two keys: any value of the dict; a list by an unknown index: none.
    assert _targets(tmp_path, body, "function:m.py#run") == {F, G}


def test_a_decorator_that_hands_back_what_it_got_leaves_each_function_itself(
    tmp_path: Path,
) -> None:
    source = """
handlers = []
def register(fn):
    handlers.append(fn)
    return fn
def wrap(fn):
    def inner():
        return fn()
    return inner
@register
def a(): pass
@register
def b(): pass
@wrap
def c(): pass
def run():
    a()
    c()
"""
    pairs = call_pairs(tmp_path, {"m.py": source})
    called = {t for s, t in pairs if s == "function:m.py#run"}
    # ``register``'s parameter holds both ``a`` and ``b``: the union would make ``a()``
    # call both; ``wrap`` returns a wrapper defined inside it, which ``c()`` calls.
    assert called == {"function:m.py#a", "function:m.py#wrap.inner"}


def test_a_collection_annotation_types_its_items(tmp_path: Path) -> None:
    source = """
from typing import Iterable, List, Optional
class User:
    def save(self): pass
    def append(self): pass
def run(users: list[User], more: Iterable["User"], maybe: Optional[List[User]]) -> None:
    for u in users:
        u.save()
    for v in more:
        v.save()
    for w in maybe:
        w.save()
    users[0].save()
    users.append(1)
"""
    facts = _calls_of(tmp_path, source, "function:m.py#run")
    # Lines 8, 10, 12 and 13 call User.save; ``users.append`` is the list's, not an item's.
    assert facts == {"method:m.py#User.save": [8, 10, 12, 13]}


def test_a_name_rebound_through_nonlocal_keeps_every_binding(tmp_path: Path) -> None:
    body = """
def outer():
    a = f
    def swap():
        nonlocal a
        a = g
    swap()
    a()
"""
    assert _targets(tmp_path, body, "function:m.py#outer") == {F, G}


def test_positional_arguments_past_the_named_ones_flow_into_star_args(tmp_path: Path) -> None:
    body = """
def pipe(*steps):
    def run():
        for step in steps:
            step()
    return run
def first(label, *handlers):
    handlers[0]()
pipe(f)()
first("x", g)
"""
    pairs = call_pairs(tmp_path, {"m.py": DEFS + body})
    assert {t for s, t in pairs if s == "function:m.py#pipe.run"} == {F}
    # ``label`` takes the first argument; ``handlers`` only what comes after it.
    assert {t for s, t in pairs if s == "function:m.py#first"} == {G}


def test_a_mapping_annotation_types_its_values_not_its_keys(tmp_path: Path) -> None:
    source = """
class User:
    def save(self): pass
def run(users: dict[str, User]) -> None:
    for key, user in users.items():
        user.save()
    for other in users.values():
        other.save()
    users["a"].save()
    users.get("a").save()
    for name in users:
        name.save()
"""
    # Lines 6, 8, 9 and 10; iterating the dict itself gives its keys (line 12: nothing).
    assert _calls_of(tmp_path, source, "function:m.py#run") == {
        "method:m.py#User.save": [6, 8, 9, 10]
    }


def test_a_tuple_loop_target_takes_each_element(tmp_path: Path) -> None:
    body = """
def run():
    for first, second in [(f, g)]:
        second()
"""
    assert _targets(tmp_path, body, "function:m.py#run") == {G}


def test_enumerate_zip_and_copies_keep_the_items(tmp_path: Path) -> None:
    source = """
class User:
    def save(self): pass
class Team:
    def play(self): pass
def run(users: list[User], teams: list[Team]) -> None:
    for i, u in enumerate(users):
        u.save()
    for u2, t in zip(users, teams):
        t.play()
    for u3 in sorted(users):
        u3.save()
    copied = list(users)
    copied[0].save()
    for j, k in enumerate(range(3)):
        k.save()
"""
    # ``enumerate`` pairs an index with each item, ``zip`` the items side by side;
    # ``range`` yields ints: nothing (line 16).
    assert _calls_of(tmp_path, source, "function:m.py#run") == {
        "method:m.py#User.save": [8, 12, 14],
        "method:m.py#Team.play": [10],
    }


def test_a_rebound_builtin_is_not_taken_for_enumerate(tmp_path: Path) -> None:
    source = """
class User:
    def save(self): pass
def enumerate(xs):
    return []
def run(users: list[User]) -> None:
    for i, u in enumerate(users):
        u.save()
"""
    assert _calls_of(tmp_path, source, "function:m.py#run") == {"function:m.py#enumerate": [7]}


def test_annotations_without_type_arguments_are_read(tmp_path: Path) -> None:
    source = """
class User:
    def save(self): pass
def run(a: tuple[()], b: "list[]", c: dict[()], d: "dict[str]", users: list[User]) -> tuple[()]:
    for u in users:
        u.save()
"""
    # The odd annotations type nothing, and the file is still read whole.
    assert _calls_of(tmp_path, source, "function:m.py#run") == {"method:m.py#User.save": [6]}


def test_reading_a_literal_or_an_annotation_warns_nothing() -> None:
    import warnings

    from cairn.codegraph.python import extract_python

    source = b'eval("0x1for x in y")\ndef f(a: "1if b else c"): pass\n'
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        extract_python("m.py", source)
    # The compiler would warn "invalid hexadecimal literal": it is not the user's code.
    assert [str(w.message) for w in caught] == []


def test_storing_a_dict_at_a_key_replaces_the_whole_item(tmp_path: Path) -> None:
    body = """
d = {"a": {"b": f, "c": f}}
d["a"] = {"b": g}
d["a"]["c"]()
d["a"]["b"]()
"""
    # ``d["a"]`` is the new dict: its ``c`` is gone, its ``b`` is ``g``.
    assert _targets(tmp_path, body) == {G}


def test_a_very_deep_expression_is_read_whole(tmp_path: Path) -> None:
    # 1,500 chained additions: a tree deeper than the default recursion limit allows the
    # visitor (generated code looks like this), read on a thread with a larger stack.
    terms = " + ".join(["f()"] * 1500)
    source = f"def f(): pass\ndef g(): pass\ndef run():\n    x = {terms}\n    g()\n"
    calls = _calls_of(tmp_path, source, "function:m.py#run")
    assert calls == {F: [4] * 1500, G: [5]}
    import sys

    assert sys.getrecursionlimit() < 20_000  # the raised limit was put back
