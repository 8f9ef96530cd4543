"""Kind priors: a named, documented multiplier of each hit's fused score by what it is.

A person or an agent asking "where is the code that does W" means a function, a method
or a class far more often than a module variable or a helper defined inside another
function's body (``App.template_global.decorator``): those match the same words as the
definition that uses them and take its place at the top. A prior multiplies the fused
``weighted_rrf_v1`` score of such hits by a documented weight below 1, after fusion; it
never removes a hit (use ``kinds`` for that) and leaves every other score as fused.

``SearchRequest.prior`` names the profile; None (the API's default) fuses exactly as the
spec says. The code-search doors (``cairn search``, MCP ``cairn_search``) send
``CODE_PRIOR``. A document's kind is read from its ID: the code graph names its symbol
documents ``kind:path#qualified_name`` (``cairn.codegraph.emit.symbol_id``), so no body
is decoded and a field policy cannot change it; IDs of another shape (a document
database's own) get weight 1. A definition is local when a function or method
``contains`` it in the code graph (``App.route.decorator``); a function assigned to a
member of another at module level (``EmptyPlaceholder.Title = function ...``) is
contained by its file, so it is not.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from cairn.index.cut import IndexCut
from cairn.index.graphs import graph_exists, in_edges, labels_usable
from cairn.index.masks import visible_everything, visible_mask
from cairn.store.commands import EntityRef
from cairn.store.limits import DEFAULT_GRAPH
from cairn.store.policy import Capability
from cairn.store.rules import Choice

__all__ = [
    "CODE_PRIOR",
    "LOCAL_PRIOR_WEIGHT",
    "PRIORS",
    "PRIOR_RULE",
    "VARIABLE_PRIOR_WEIGHT",
    "PriorWeights",
    "check_prior",
    "id_prior",
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
"""``CODE_PRIOR``'s weight of a local definition: one a function or method ``contains``
in the code graph (a closure, a class defined in a method body).
Chosen like ``VARIABLE_PRIOR_WEIGHT``: best at 0.6 with MiniLM (0.620 against 0.604
without the prior), within 0.001 of the best (0.4) with hashing."""

CONTAINS = "contains"

_ENCLOSING_KINDS = ("function", "method")
_VARIABLE_KIND = "variable"
_ONE = Fraction(1)


def check_prior(prior: object) -> None:
    """A request's ``prior``: None or a name in ``PRIORS`` (``ValidationError``)."""
    if prior is not None:
        PRIOR_RULE.check(prior, "prior")


def _kind(doc_id: str) -> str | None:
    """The kind of a code-graph symbol ID ``kind:path#qualified_name``, or None."""
    kind, colon, rest = doc_id.partition(":")
    if not colon or not kind or "#" not in rest:
        return None
    return kind


def id_prior(doc_id: str, is_local: Callable[[str], bool]) -> Fraction:
    """``CODE_PRIOR``'s weight of the document ``doc_id``; ``is_local`` says whether a
    function or method contains a symbol (asked only of symbols that are not variables)."""
    kind = _kind(doc_id)
    if kind == _VARIABLE_KIND:
        return VARIABLE_PRIOR_WEIGHT
    if kind is not None and is_local(doc_id):
        return LOCAL_PRIOR_WEIGHT
    return _ONE


def _may_read_containment(cut: IndexCut) -> bool:
    """Whether the principal may read the code graph by relation: without graph_read or
    the label's use grant, no definition counts as local (only variables weigh less)."""
    if not graph_exists(cut, DEFAULT_GRAPH):
        return False
    principal = cut.principal
    if Capability.GRAPH_READ not in principal.capabilities(cut.database, DEFAULT_GRAPH):
        return False
    return labels_usable(cut, DEFAULT_GRAPH)


class PriorWeights:
    """A prior's weight per slot of one collection at one cut, found when first asked.

    Fusion asks only for the slots it ranks (each branch's leaders): a variable is known
    by its ID, a local definition by the ``contains`` facts into it (``in_edges``: the
    graph's adjacency arrays, whose first load reads and checks every fact, so damage
    anywhere in the graph is named, never a silently different rank), counted only when
    the container is a function or method the principal may see. Answers are kept per
    position, collection, prior and principal, so later searches at the position ask
    nothing again.
    """

    def __init__(self, cut: IndexCut, collection: str, prior: str) -> None:
        check_prior(prior)
        self._cut = cut
        self._collection = collection
        view = cut.columns
        key = ("prior", prior, collection, view.position, cut.principal)
        self._known: dict[int, float] = view.memo(key, dict)
        self._containment: bool | None = None
        self._visible: npt.NDArray[np.bool_] | None = None

    def __call__(self, slots: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        """The weight of each of ``slots``."""
        known = self._known
        found = np.empty(len(slots), dtype=np.float64)
        for index, slot in enumerate(slots.tolist()):
            weight = known.get(slot)
            if weight is None:
                weight = known[slot] = float(self._weigh(slot))
            found[index] = weight
        return found

    def _weigh(self, slot: int) -> Fraction:
        return id_prior(self._cut.columns.ids[slot], self._is_local)

    def _is_local(self, doc_id: str) -> bool:
        cut, collection = self._cut, self._collection
        if self._containment is None:
            self._containment = _may_read_containment(cut)
        if not self._containment:
            return False
        for edge in in_edges(cut, DEFAULT_GRAPH, EntityRef(collection, doc_id)):
            source = edge.neighbour
            enclosing = source.collection == collection and _kind(source.id) in _ENCLOSING_KINDS
            if edge.relation == CONTAINS and enclosing and self._sees(source.id):
                return True
        return False

    def _sees(self, doc_id: str) -> bool:
        """Whether the principal sees the live document ``doc_id`` of the collection."""
        cut, view = self._cut, self._cut.columns
        node = view.nodes.get((self._collection, doc_id))
        live = view.live_slots()
        if node is None or node >= len(live) or live[node] <= 0:
            return False
        if visible_everything(cut, self._collection):
            return True
        if self._visible is None:
            self._visible = visible_mask(cut, self._collection, len(view.birth))
        slot = int(live[node])
        return slot < len(self._visible) and bool(self._visible[slot])
