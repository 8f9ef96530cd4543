"""Straight-line reaching bindings for the Python adapter: which values a name holds
where it is used, when its scope binds it more than once.

Python runs a scope's statements in order, so after ``a = f`` then ``a = g`` a call
``a()`` calls ``g`` only, and after ``d = {"k": f}`` then ``d["k"] = g`` the item ``k``
is ``g``. The extractor keeps, per scope, the bindings that reach the current statement
(an unconditional binding replaces them, one inside a branch, loop or ``try`` adds to
them) and records them with each call whose name they may narrow. The narrowing is kept
only where it is sound (``_Extractor._finish_flow`` in ``python.py``): never for a name
that a nested scope mentions (it
could rebind it with ``global``/``nonlocal`` or change its items before the use), never
inside a loop or a lambda (the use may run after later statements), and only when it
differs from the scope's full set of bindings.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from cairn.codegraph.records import Binding

__all__ = ["ITEMS", "owner_scope", "store_item", "strong_update"]

ITEMS = "items"
"""The tag of a container binding: ``("items", ((key, binding), ...))``."""


def _key_path(item: Binding, levels: int) -> list[str]:
    """The keys of a store ``levels`` subscripts deep (``d["a"]["b"] = v`` ->
    ``['a']``, ``['b']``): the value stored may itself be a container, not a key."""
    path: list[str] = []
    for _ in range(levels):
        pairs = item[1]
        assert item[0] == ITEMS and isinstance(pairs, tuple) and len(pairs) == 1
        key, item = pairs[0]
        path.append(str(key))
    return path


def _without(binding: Binding, path: Sequence[str], any_key: str) -> Binding:
    """``binding`` with the item at ``path`` removed (when it is a container whose items
    down that path are containers too); otherwise unchanged."""
    if binding[0] != ITEMS or not path:
        return binding
    pairs = binding[1]
    assert isinstance(pairs, tuple)
    head, rest = path[0], path[1:]
    kept: list[tuple[str, Binding]] = []
    for key, value in pairs:
        if key == head and key != any_key:
            if not rest:
                continue  # replaced by the store
            value = _without(value, rest, any_key)
        kept.append((key, value))
    return (ITEMS, tuple(kept))


def strong_update(
    reaching: Sequence[Binding], item: Binding, levels: int, any_key: str
) -> list[Binding]:
    """The bindings after an unconditional store of ``item`` (a one-item container
    binding ``levels`` deep): the item at the same constant key path is replaced, others
    stay."""
    path = _key_path(item, levels)
    if any_key in path:
        updated = list(reaching)  # a store at an unknown key may land anywhere: adds only
    else:
        updated = [_without(binding, path, any_key) for binding in reaching]
    if item not in updated:
        updated.append(item)
    return updated


def store_item(
    reaching: dict[str, list[Binding]],
    name: str,
    item: Binding,
    levels: int,
    strong: bool,
    any_key: str,
) -> None:
    """Record ``name[...] = v`` (``levels`` subscripts) in a scope's reaching bindings
    (when the name has any)."""
    found = reaching.get(name)
    if found is None:
        return
    if strong:
        reaching[name] = strong_update(found, item, levels, any_key)
    elif item not in found:
        found.append(item)


def owner_scope(
    name: str,
    start: str | None,
    bindings: Mapping[str, Iterable[str]],
    kinds: Mapping[str, str],
    parents: Mapping[str, str | None],
) -> str | None:
    """The scope a free ``name`` used in a child of ``start`` refers to: the nearest
    enclosing function or module scope (class scopes are skipped, as Python does) that
    binds it, else None."""
    current = start
    while current is not None:
        if kinds[current] != "class" and name in bindings[current]:
            return current
        current = parents[current]
    return None
