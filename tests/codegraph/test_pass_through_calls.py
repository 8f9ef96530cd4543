"""A call of a function that returns a parameter as it is gives that call's own argument
(``A = register(A)``), not every value any call site passes the parameter; expected
callees follow Python's semantics, written by hand."""

from __future__ import annotations

from pathlib import Path

from test_codegraph_calls_accuracy import call_pairs

RUN_A = "method:m.py#A.run"
RUN_B = "method:m.py#B.run"
CLASSES = """
class A:
    def run(self): pass

class B:
    def run(self): pass
"""


def _runs(tmp_path: Path, body: str, caller: str = "function:m.py#use") -> set[str]:
    pairs = call_pairs(tmp_path, {"m.py": CLASSES + body})
    return {target for source, target in pairs if source == caller and target in (RUN_A, RUN_B)}


def test_a_class_handed_back_by_a_helper_stays_itself(tmp_path: Path) -> None:
    body = """
def register(cls, tags=None):
    cls.registered = True
    return cls

A = register(A)
B = register(B)

def use():
    A().run()
"""
    assert _runs(tmp_path, body) == {RUN_A}  # the parameter's values would add B.run


def test_nested_helpers_hand_back_the_innermost_argument(tmp_path: Path) -> None:
    body = """
def add_eq(cls):
    return cls

def add_hash(cls, attrs=None):
    return cls

A = add_hash(add_eq(A), attrs=1)
B = add_hash(add_eq(B))

def use():
    A().run()
"""
    assert _runs(tmp_path, body) == {RUN_A}


def test_a_method_handing_back_its_argument_skips_self(tmp_path: Path) -> None:
    body = """
class Registry:
    def add(self, item):
        return item

r = Registry()
first = r.add(A)
second = r.add(B)

def use():
    first().run()
"""
    assert _runs(tmp_path, body) == {RUN_A}


def test_other_return_values_are_kept(tmp_path: Path) -> None:
    body = """
def pick(cls, flag):
    if flag:
        return cls
    return B

chosen = pick(A, True)

def use():
    chosen().run()
"""
    assert _runs(tmp_path, body) == {RUN_A, RUN_B}


def test_a_parameter_rebound_in_the_function_is_not_handed_back_as_is(tmp_path: Path) -> None:
    body = """
def swap(cls):
    cls = B
    return cls

chosen = swap(A)

def use():
    chosen().run()
"""
    # Python gives B only. The rule must not hand back the argument here (the name is
    # rebound); A.run still comes from the parameter's flows, an over-approximation the
    # resolver had before this rule (returns keep every binding of a rebound name).
    assert RUN_B in _runs(tmp_path, body)


def test_a_call_that_passes_the_parameter_by_keyword_takes_every_flow(tmp_path: Path) -> None:
    body = """
def register(cls):
    return cls

A2 = register(cls=A)
B2 = register(B)

def use():
    A2().run()
"""
    # Not passed positionally: the parameter's values from every call site, as before.
    assert _runs(tmp_path, body) == {RUN_A, RUN_B}


def test_an_annotated_parameter_is_still_handed_back_as_is(tmp_path: Path) -> None:
    body = """
def register(cls: type, tags: list = None):
    return cls

A = register(A)
B = register(B)

def use():
    A().run()
"""
    # attrs' ``_add_hash(cls: type, attrs)``: an annotation does not rebind the name.
    assert _runs(tmp_path, body) == {RUN_A}


def test_the_annotation_of_a_handed_back_parameter_still_counts(tmp_path: Path) -> None:
    body = """
import somewhere

def keep(item: A):
    return item

def use():
    keep(somewhere.make()).run()
"""
    # The argument is outside the repository; the annotation says what it holds.
    assert _runs(tmp_path, body) == {RUN_A}
