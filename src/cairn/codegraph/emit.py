"""Turning resolved records into graph nodes, facts and occurrences, one site at a time.

``GraphEmitter`` wraps a ``SemanticGraph``: it adds each node once (externals are made
on demand, with attributes derived from their ID alone so any order gives the same
node), and it admits one fact candidate per evidence site with that site's occurrence.
It never de-duplicates: merging exact duplicates is the graph's own admission policy.
Fact candidates are queued in call order and admitted in one ``SemanticGraph.add_facts``
batch when ``graph`` is read (the same state ``add_fact`` one by one gives, much faster).
``ShareEmitter`` stands for it while one part of a build is emitted on its own: it keeps
that part's nodes and facts apart (``EmittedShare``), for ``GraphEmitter.add_shares`` to
merge then or in a later build that still has the part (``cairn watch``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from operator import is_
from types import MappingProxyType
from typing import Any, TypeVar

import orjson

from cairn.codegraph.limits import ADAPTER_VERSION
from cairn.codegraph.records import Range
from cairn.graph import (
    EndpointIdentity,
    EvidenceOccurrence,
    Node,
    OccurrenceInput,
    SemanticFact,
    SemanticGraph,
    SourceRange,
)
from cairn.graph.multigraph import FactCandidate, FactPiece, PartsMerge, admit_apart

__all__ = [
    "EmittedShare",
    "Emitter",
    "GraphEmitter",
    "ShareEmitter",
    "external_id",
    "external_node",
    "file_id",
    "interned",
    "node_of",
    "partial_marks",
    "symbol_id",
]


def file_id(path: str) -> str:
    """Node ID of a file."""
    return f"file:{path}"


def symbol_id(kind: str, path: str, qualname: str) -> str:
    """Node ID of a symbol, route or section: ``kind:path#qualified-part``."""
    return f"{kind}:{path}#{qualname}"


def partial_marks(
    parse_error: tuple[str, int] | None,
) -> tuple[dict[str, Any] | None, bool | None]:
    """The ``partial_parse`` attribute of a file node and of its symbols' nodes: the
    error and line on the file, ``True`` on each symbol; ``None`` (no attribute) for a
    file that parsed whole. No answer may pass a partial file off as whole."""
    if parse_error is None:
        return None, None
    return {"error": parse_error[0], "line": parse_error[1]}, True


def external_id(language: str, dotted: str) -> str:
    """Node ID of a symbol or module outside the repository."""
    return f"external:{language}:{dotted}"


_STABLE = EndpointIdentity.stable()
"""One shared (immutable) stable identity instead of one per node."""


def node_of(
    node_id: str,
    kind: str,
    attributes: Mapping[str, Any],
    identity: EndpointIdentity | None = None,
) -> Node:
    """The node ``GraphEmitter.node`` adds: ``kind`` first among the attributes, None
    values dropped, stable unless told otherwise (so a worker can build the same one)."""
    attrs = {key: value for key, value in attributes.items() if value is not None}
    return Node(node_id, kind, identity or _STABLE, {"kind": kind, **attrs})


def external_node(language: str, dotted: str) -> Node:
    """The node of a symbol or module outside the repository (a function of its ID)."""
    separators = "./" if language in ("python", "go") else "/"
    name = dotted
    for sep in separators:
        name = name.rsplit(sep, 1)[-1]
    return node_of(
        external_id(language, dotted),
        "external",
        {"name": name or dotted, "qualified_name": dotted, "language": language},
    )


class Emitter(ABC):
    """What every emitter does: keeps each node once (the first of an ID; externals made
    on demand) and queues one fact candidate per evidence site, in call order. Where
    the nodes live is the subclass's: a graph (``GraphEmitter``) or one part's own
    (``ShareEmitter``)."""

    def __init__(self) -> None:
        self._pending: list[FactCandidate] = []

    @abstractmethod
    def _has(self, node_id: str) -> bool:
        """Whether a node of ``node_id`` is kept already."""

    @abstractmethod
    def _put(self, node: Node) -> None:
        """Keep ``node``."""

    def node(
        self,
        node_id: str,
        kind: str,
        attributes: Mapping[str, Any],
        identity: EndpointIdentity | None = None,
    ) -> str:
        """Add a node unless one of that ID exists already; returns its ID."""
        if not self._has(node_id):
            self._put(node_of(node_id, kind, attributes, identity))
        return node_id

    def external(self, language: str, dotted: str) -> str:
        """The external node for ``dotted`` in ``language`` (made on first use)."""
        node_id = external_id(language, dotted)
        if not self._has(node_id):
            self._put(external_node(language, dotted))
        return node_id

    def fact(
        self,
        source: str,
        target: str,
        relation: str,
        discriminator: Mapping[str, Any] | None,
        *,
        adapter: str,
        strategy: str,
        path: str,
        rng: Range | None,
        site_kind: str,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        """Queue one fact candidate with the occurrence of one evidence site.

        The mappings are copied: a caller may reuse its dict before the batch is admitted.
        """
        self._pending.append(
            (
                source,
                target,
                relation,
                dict(discriminator) if discriminator else None,
                OccurrenceInput(
                    adapter_id=adapter,
                    strategy=strategy,
                    adapter_version=ADAPTER_VERSION,
                    source_file=path,
                    source_range=SourceRange(*rng) if rng is not None else None,
                    site_kind=site_kind,
                    metadata=dict(metadata) if metadata else None,
                ),
            )
        )


@dataclass(frozen=True, slots=True)
class EmittedShare:
    """What one part of a build emitted, admitted apart: its nodes (the first of each
    ID, in call order) and its facts."""

    nodes: tuple[Node, ...]
    piece: FactPiece


_Record = TypeVar("_Record", Node, SemanticFact, EvidenceOccurrence)


def interned(made: EmittedShare, before: EmittedShare | None) -> EmittedShare:
    """``made``, each record of which ``before`` holds exactly (same ID, equal, and the
    same JSON: ``True == 1`` but they print apart) replaced by ``before``'s very object;
    ``before`` itself when nothing differs. A module emitted again after an edit keeps
    its unchanged records as they were, so what is keyed by record identity downstream
    (load keys, graph.cairn's printed segments) sees them unchanged: ten edited Django
    files otherwise printed ~1,000 segments of graph.cairn again."""
    if before is None:
        return made
    nodes = _same_records(made.nodes, {node.id: node for node in before.nodes})
    piece, held = made.piece, before.piece
    facts = _same_records(tuple(piece.facts.values()), held.facts)
    occurrences = _same_records(tuple(piece.occurrences.values()), held.occurrences)
    if (
        _all_same(nodes, before.nodes)
        and _all_same(facts, tuple(held.facts.values()))
        and _all_same(occurrences, tuple(held.occurrences.values()))
        and (piece.admitted, piece.unregistered) == (held.admitted, held.unregistered)
    ):
        return before
    return EmittedShare(
        nodes,
        FactPiece(
            MappingProxyType({fact.id: fact for fact in facts}),
            MappingProxyType({item.id: item for item in occurrences}),
            piece.admitted,
            piece.unregistered,
        ),
    )


def _same_records(made: tuple[_Record, ...], before: Mapping[str, _Record]) -> tuple[_Record, ...]:
    """``made`` with each record ``before`` holds exactly (``interned``) as that object."""
    return tuple(
        old if (old := before.get(record.id)) is not None and _exactly(old, record) else record
        for record in made
    )


def _all_same(these: tuple[Any, ...], those: tuple[Any, ...]) -> bool:
    return len(these) == len(those) and all(map(is_, these, those))


def _exactly(old: Any, new: Any) -> bool:
    """Whether two records are equal and print the same JSON (orjson tells ``true``,
    ``1`` and ``1.0`` apart, and ``-0.0`` from ``0.0``)."""
    if old is new:
        return True
    if old != new:
        return False
    try:
        return bool(
            orjson.dumps(old.to_json(), option=orjson.OPT_SORT_KEYS)
            == orjson.dumps(new.to_json(), option=orjson.OPT_SORT_KEYS)
        )
    except (TypeError, orjson.JSONEncodeError):
        return False


class ShareEmitter(Emitter):
    """Stands for a ``GraphEmitter`` while one part of a build is emitted on its own:
    the same calls, but nodes and facts are kept apart (``share``), not admitted."""

    def __init__(self) -> None:
        super().__init__()
        self._nodes: dict[str, Node] = {}

    def _has(self, node_id: str) -> bool:
        return node_id in self._nodes

    def _put(self, node: Node) -> None:
        self._nodes[node.id] = node

    def share(self) -> EmittedShare:
        """This part's nodes and its facts admitted apart (its own nodes' identities;
        any other endpoint's is checked when the share is merged)."""
        identities = {node_id: node.identity for node_id, node in self._nodes.items()}
        return EmittedShare(tuple(self._nodes.values()), admit_apart(self._pending, identities))


class GraphEmitter(Emitter):
    """Adds nodes and one fact per evidence site to a ``SemanticGraph``."""

    def __init__(self) -> None:
        super().__init__()
        self._graph = SemanticGraph()

    def _has(self, node_id: str) -> bool:
        return self._graph.has_node(node_id)

    def _put(self, node: Node) -> None:
        self._graph.put_node(node)

    @property
    def graph(self) -> SemanticGraph:
        """The graph, with every fact candidate queued so far admitted (in call order)."""
        self.flush()
        return self._graph

    def flush(self) -> None:
        """Admit every queued fact candidate now, in call order, as one batch."""
        if self._pending:
            pending, self._pending = self._pending, []
            self._graph.add_facts(pending)

    def merge_shares(
        self, keyed: Iterable[tuple[Hashable, EmittedShare]], last: PartsMerge | None
    ) -> PartsMerge | None:
        """``add_shares`` of the shares in order, each under a key, through
        ``SemanticGraph.merge_parts``: by difference from ``last`` (the merge of the
        last round's shares, consumed) when this graph is still empty; returns what the
        next round's merge needs (or None)."""
        self.flush()
        parts = [(key, share.nodes, share.piece) for key, share in keyed]
        return self._graph.merge_parts(parts, last)

    def add_shares(self, shares: Iterable[EmittedShare]) -> None:
        """Add parts emitted apart, in order, as if their calls were made here now: the
        first node of each ID is kept, then their facts are merged (queued candidates are
        admitted first)."""
        self.flush()
        parts = [(key, share.nodes, share.piece) for key, share in enumerate(shares)]
        self._graph.merge_parts(parts, remember=False)
