"""Kind priors: a named, documented multiplier of each hit's fused score by what it is.

A person or an agent asking "where is the code that does W" means a function, a method
or a class far more often than a module variable or a helper defined inside another
function's body (``App.template_global.decorator``): those match the same words as the
definition that uses them and take its place at the top. A prior multiplies the fused
``weighted_rrf_v1`` score of such hits by a documented weight below 1, after fusion; it
never removes a hit (use ``kinds`` for that) and leaves every other score as fused.

``SearchRequest.prior`` names the profile; None (the API's default) fuses exactly as the
spec says. The code-search doors (``cairn search``, MCP ``cairn_search``) send
``CODE_PRIOR``. The profile reads only what a document's ID says: the code graph names
its symbol documents ``kind:path#qualified_name`` (``cairn.codegraph.emit.symbol_id``),
so no body is decoded and a field policy cannot change the answer. IDs of another shape
(a document database's own) get weight 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from cairn.index.cut import IndexCut
from cairn.index.masks import visible_everything, visible_mask
from cairn.store.rules import Choice

__all__ = [
    "CODE_PRIOR",
    "LOCAL_PRIOR_WEIGHT",
    "PRIORS",
    "PRIOR_RULE",
    "VARIABLE_PRIOR_WEIGHT",
    "check_prior",
    "id_prior",
    "prior_weights",
]

CODE_PRIOR = "code_kinds_v1"
"""The code-search prior: module variables and local definitions weigh less."""

PRIORS = (CODE_PRIOR,)
"""Every prior a request may name."""

PRIOR_RULE = Choice(PRIORS)
"""``SearchRequest.prior``'s rule when not None: admission checks it, the OpenAPI
document and MCP schema state it (``cairn.search.rules``)."""

VARIABLE_PRIOR_WEIGHT = Fraction(3, 5)
"""``CODE_PRIOR``'s weight of a ``variable`` document. Chosen on the search bench's
tuning projects only (Flask, Click; ``bench/search_quality.py --tune-prior``) over
0.4-1.0 with the hashing and MiniLM embedders: their mean hybrid MRR@10 is flat from 0.4
to 0.7 and lower at 0.8 and 1.0 (docs/benchmarks.md)."""

LOCAL_PRIOR_WEIGHT = Fraction(3, 5)
"""``CODE_PRIOR``'s weight of a local definition: one whose qualified name extends that
of a function or method in the same file (a closure, a class defined in a method body).
Chosen like ``VARIABLE_PRIOR_WEIGHT``: best at 0.6 with MiniLM (0.620 against 0.604
without the prior), within 0.001 of the best (0.4) with hashing."""

_ENCLOSING_KINDS = ("function", "method")
_VARIABLE_KIND = "variable"
_ONE = Fraction(1)


def check_prior(prior: object) -> None:
    """A request's ``prior``: None or a name in ``PRIORS`` (``ValidationError``)."""
    if prior is not None:
        PRIOR_RULE.check(prior, "prior")


def _parts(doc_id: str) -> tuple[str, str, str] | None:
    """``(kind, path, qualified_name)`` of a code-graph symbol ID, or None."""
    kind, colon, rest = doc_id.partition(":")
    path, hash_mark, qualified = rest.partition("#")
    if not colon or not hash_mark or not kind or not qualified:
        return None
    return kind, path, qualified


def id_prior(doc_id: str, enclosing: frozenset[str] | set[str]) -> Fraction:
    """``CODE_PRIOR``'s weight of the document ``doc_id``; ``enclosing`` holds the
    ``path#qualified_name`` of every function and method document."""
    parts = _parts(doc_id)
    if parts is None:
        return _ONE
    kind, path, qualified = parts
    if kind == _VARIABLE_KIND:
        return VARIABLE_PRIOR_WEIGHT
    names = qualified.split(".")
    for end in range(len(names) - 1, 0, -1):
        if f"{path}#{'.'.join(names[:end])}" in enclosing:
            return LOCAL_PRIOR_WEIGHT
    return _ONE


def _enclosing(ids: Sequence[str], slots: npt.NDArray[np.int64]) -> set[str]:
    found: set[str] = set()
    for slot in slots.tolist():
        parts = _parts(ids[slot])
        if parts is not None and parts[0] in _ENCLOSING_KINDS:
            found.add(f"{parts[1]}#{parts[2]}")
    return found


def prior_weights(cut: IndexCut, collection: str, prior: str) -> npt.NDArray[np.float64]:
    """Per slot, the weight ``prior`` gives the live document there (1 elsewhere).

    Only documents the principal may see decide whether a definition is local, so a
    hidden function never changes a visible hit's rank. Memoised per position,
    collection, prior and (under a row policy) principal.
    """
    check_prior(prior)
    view = cut.columns
    size = len(view.birth)
    everything = visible_everything(cut, collection)
    key = ("prior", prior, collection, view.position, None if everything else cut.principal)

    def compute() -> npt.NDArray[np.float64]:
        live = view.alive(collection)[:size]
        if not everything:
            live = live & visible_mask(cut, collection, size)
        slots = np.flatnonzero(live)
        enclosing = _enclosing(view.ids, slots)
        weights = np.ones(size, dtype=np.float64)
        for slot in slots.tolist():
            weight = id_prior(view.ids[slot], enclosing)
            if weight != _ONE:
                weights[slot] = float(weight)
        weights.flags.writeable = False
        return weights

    found: npt.NDArray[np.float64] = view.memo(key, compute)
    return found
