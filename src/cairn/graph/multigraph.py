"""``SemanticGraph``: a fact-keyed multigraph that never overwrites one relationship with another.

Admission (spec §7) turns a candidate into a typed result: a new fact, an additional
occurrence of a known fact, an exact duplicate merged into what is stored, or
``unresolved`` for an unregistered relation. Indexes by source, target, relation and
endpoint pair serve plural queries; every query returns all matching facts in ID order,
independent of insertion order (spec §8).
"""

from __future__ import annotations

import bisect
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from enum import StrEnum
from itertools import repeat
from operator import attrgetter, contains, is_
from types import MappingProxyType
from typing import Any, TypeAlias, TypeVar

from cairn.canonical import nfc
from cairn.errors import (
    AmbiguousEdgeError,
    ConflictError,
    IdentityCollisionError,
    InvariantError,
    MissingEndpointError,
    NotFoundError,
    UnknownEdgeError,
    ValidationError,
)
from cairn.graph.identity import (
    FACT_ID_PREFIX,
    OCCURRENCE_ID_PREFIX,
    check_repo_path,
    fact_identity_payload,
    id_from_payload,
    occurrence_identity_payload,
    ordered_endpoints,
)
from cairn.graph.model import (
    ConfidenceObservation,
    Direction,
    Discriminator,
    EndpointIdentity,
    EvidenceOccurrence,
    FactEndpointIdentity,
    Hyperedge,
    Node,
    OccurrenceOwner,
    SemanticFact,
    SourceRange,
    canonical_tuple,
    freeze,
    sorted_observations,
)
from cairn.graph.registry import REGISTRY, RelationRegistry, RelationSpec

__all__ = [
    "DIAGNOSTIC_ADAPTER_VERSION_CONFLICT",
    "DIAGNOSTIC_METADATA_CONFLICT",
    "DIAGNOSTIC_MULTIPLICITY_UNKNOWN",
    "AdmissionOutcome",
    "AdmissionResult",
    "FactCandidate",
    "FactPiece",
    "GraphChanges",
    "GraphCounts",
    "IdSets",
    "OccurrenceInput",
    "PartsMerge",
    "SemanticGraph",
    "admit_apart",
]

_K = TypeVar("_K")
_Record = TypeVar("_Record")

DIAGNOSTIC_METADATA_CONFLICT = "metadata_conflict"
DIAGNOSTIC_ADAPTER_VERSION_CONFLICT = "adapter_version_conflict"
DIAGNOSTIC_MULTIPLICITY_UNKNOWN = "occurrence_multiplicity_unknown"


class AdmissionOutcome(StrEnum):
    """What admitting one candidate did to the graph."""

    NEW_FACT = "new_fact"
    ADDITIONAL_OCCURRENCE = "additional_occurrence"
    EXACT_DUPLICATE_MERGED = "exact_duplicate_merged"
    UNRESOLVED = "unresolved"


@dataclass(frozen=True, slots=True)
class AdmissionResult:
    """The typed result of ``SemanticGraph.add_fact``."""

    outcome: AdmissionOutcome
    relation: str
    fact_id: str | None = None
    occurrence_id: str | None = None
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class OccurrenceInput:
    """What a producer supplies for one evidence site; the graph derives its ID."""

    adapter_id: str
    strategy: str
    adapter_version: str | None = None
    source_file: str | None = None
    source_range: SourceRange | None = None
    target_file: str | None = None
    target_range: SourceRange | None = None
    site_kind: str | None = None
    adapter_evidence_key: str | None = None
    provenance: tuple[Any, ...] = ()
    confidence: tuple[ConfidenceObservation, ...] = ()
    metadata: Mapping[str, Any] | None = None


FactCandidate: TypeAlias = tuple[
    str, str, str, "Mapping[str, Any] | None", "OccurrenceInput | None"
]
"""``(source, target, relation, discriminator, occurrence)``: one ``add_fact`` call, as data."""

IdentityOf: TypeAlias = "Callable[[str, str], EndpointIdentity]"
"""``(node ID, role) -> that endpoint's identity`` (raising when the node is unknown)."""


@dataclass(frozen=True, slots=True)
class FactPiece:
    """Fact candidates admitted apart from any graph (``admit_apart``), to be merged
    into one later (``SemanticGraph.add_pieces``): every ID derived and record built
    once, so a producer that keeps pieces across rebuilds re-derives nothing for the
    parts that did not change."""

    facts: Mapping[str, SemanticFact]
    """The facts, each listing this piece's occurrences of it; endpoint identities as
    ``admit_apart`` was told (the merge corrects them to the graph's nodes)."""
    occurrences: Mapping[str, EvidenceOccurrence]
    admitted: int
    """Candidates of registered relations (every one carried an occurrence)."""
    unregistered: Mapping[str, int]
    """Candidates refused per unregistered relation."""


@dataclass(frozen=True, slots=True)
class GraphCounts:
    """Named counts: no field says "edges" without saying which."""

    node_count: int
    fact_count: int
    endpoint_pair_count: int
    occurrence_count: int
    hyperedge_count: int

    def to_json(self) -> dict[str, int]:
        """Plain JSON form."""
        return {
            "node_count": self.node_count,
            "fact_count": self.fact_count,
            "endpoint_pair_count": self.endpoint_pair_count,
            "occurrence_count": self.occurrence_count,
            "hyperedge_count": self.hyperedge_count,
        }


@dataclass(slots=True)
class _Indexes:
    by_source: dict[str, set[str]] = field(default_factory=dict)
    by_target: dict[str, set[str]] = field(default_factory=dict)
    by_relation: dict[str, set[str]] = field(default_factory=dict)
    by_pair: dict[tuple[str, str], set[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, facts: Mapping[str, SemanticFact]) -> _Indexes:
        """The indexes of every fact in ``facts``, by C-level passes over their columns."""
        fact_ids = list(facts)
        values = list(facts.values())
        sources, targets = list(map(_SOURCE, values)), list(map(_TARGET, values))
        return cls(
            _grouped(sources, fact_ids),
            _grouped(targets, fact_ids),
            _grouped(map(_RELATION, values), fact_ids),
            _grouped(zip(sources, targets, strict=True), fact_ids),
        )

    def add(self, fact: SemanticFact) -> None:
        self.by_source.setdefault(fact.source, set()).add(fact.id)
        self.by_target.setdefault(fact.target, set()).add(fact.id)
        self.by_relation.setdefault(fact.relation, set()).add(fact.id)
        self.by_pair.setdefault(fact.endpoint_pair, set()).add(fact.id)


Part = tuple[Hashable, tuple[Node, ...], FactPiece]
"""One part of a graph merged by ``SemanticGraph.merge_parts``: its key, its nodes and its
facts admitted apart."""


IdSets: TypeAlias = "tuple[AbstractSet[str], AbstractSet[str], AbstractSet[str]]"
"""Node, fact and occurrence IDs."""


@dataclass(slots=True)
class PartsMerge:
    """What merging parts into an empty graph made (``SemanticGraph.merge_parts``), kept to
    merge the next parts by difference: each part by key, the records the merge stored,
    which parts hold each node ID, and how many facts end at each node. Made only when no
    two parts share a fact or occurrence ID (each record then has one part to answer
    for it); consumed by the next merge, which updates it in place.

    Each merge by difference is the next ``generation`` of the same ``lineage`` and
    says which record IDs it took out or put in (``changed``; None for the first merge,
    which put in everything): ``SemanticGraph.changes``."""

    parts: dict[Hashable, tuple[tuple[Node, ...], FactPiece]]
    nodes: dict[str, Node]
    facts: dict[str, SemanticFact]
    occurrences: dict[str, EvidenceOccurrence]
    holders: dict[str, tuple[Hashable, ...]]
    ends: Counter[str]
    lineage: object = field(default_factory=object)
    generation: int = 0
    changed: IdSets | None = None
    pairs: Counter[tuple[str, str]] = field(default_factory=Counter)
    """How many of the merge's facts join each (source, target) pair (none at zero)."""


@dataclass(frozen=True, slots=True)
class GraphChanges:
    """Which records of a graph may differ from the graph the merge before made
    (``SemanticGraph.changes``): a record whose ID none of these sets holds is the very
    object the graph of the previous ``generation`` of the same ``lineage`` held, once
    that graph's own ``written`` IDs are counted as changed too.

    ``merged`` are the IDs the merge took out or put in (None: the first merge of the
    lineage, which put in everything); ``written`` are the IDs written to the graph
    since the merge (other parts, facts admitted one by one; the sets grow while the
    graph is written). Each set may hold more than changed, never less."""

    lineage: object
    generation: int
    merged: IdSets | None
    written: IdSets


class _Journal:
    """The IDs a graph made by a merge wrote since (``GraphChanges.written``), and the
    merge (which the next merge of its lineage updates in place)."""

    __slots__ = ("facts", "merge", "nodes", "occurrences", "source")

    def __init__(self, merge: PartsMerge) -> None:
        self.source = merge
        self.merge = (merge.lineage, merge.generation, merge.changed)
        self.nodes: set[str] = set()
        self.facts: set[str] = set()
        self.occurrences: set[str] = set()

    def current(self) -> PartsMerge | None:
        """The merge while it still holds what this graph was made from, else None."""
        return self.source if self.source.generation == self.merge[1] else None


class SemanticGraph:
    """A deterministic semantic multigraph: nodes, facts, occurrences, hyperedges."""

    def __init__(self, registry: RelationRegistry = REGISTRY) -> None:
        self.registry = registry
        self._nodes: dict[str, Node] = {}
        self._facts: dict[str, SemanticFact] = {}
        self._occurrences: dict[str, EvidenceOccurrence] = {}
        self._hyperedges: dict[str, Hyperedge] = {}
        self._community_labels: dict[str, str] = {}
        # Built on the first query that needs it, then kept up to date: a graph that is
        # only built and loaded or written never pays for it (~40% of a graph's memory).
        self._built_index: _Indexes | None = None
        self._admissions: Counter[str] = Counter()
        self._unregistered: Counter[str] = Counter()
        # The last sorted listing of each table, checked before it is reused: a write
        # path that forgets to drop it can only cost a sort, never give a stale answer.
        self._listed: dict[str, tuple[list[str], tuple[Any, ...]]] = {}
        # What was written since the merge that made this graph (None: not made by one).
        self._journal: _Journal | None = None

    def changes(self) -> GraphChanges | None:
        """Which records may differ from those of the graph the merge before this
        graph's made (None: this graph was not made by ``merge_parts`` with a merge to
        remember). A reader that kept what it derived from that graph (``cairn.store.
        loadkeys.KeyMemo``) derives again only for these IDs."""
        journal = self._journal
        if journal is None:
            return None
        lineage, generation, merged = journal.merge
        written = (journal.nodes, journal.facts, journal.occurrences)
        return GraphChanges(lineage, generation, merged, written)

    @property
    def _index(self) -> _Indexes:
        """The facts by source, target, relation and endpoint pair (built on first use)."""
        if self._built_index is None:
            self._built_index = _Indexes.of(self._facts)
        return self._built_index

    def _indexed(self, fact: SemanticFact) -> None:
        """Keep a built index up to date with a fact just stored (else nothing to do)."""
        if self._built_index is not None:
            self._built_index.add(fact)

    # ----------------------------------------------------------------- nodes
    def add_node(
        self,
        node_id: str,
        kind: str,
        *,
        identity: EndpointIdentity | None = None,
        attributes: Mapping[str, Any] | None = None,
    ) -> Node:
        """Add a node; omitting ``identity`` records ``unknown``, never ``stable``.

        Adding an identical node again is a no-op; a different node under a known ID is
        a ``ConflictError`` (nothing is overwritten).
        """
        node = Node(node_id, kind, identity or EndpointIdentity.undeclared(), attributes or {})
        return self.put_node(node)

    def put_node(self, node: Node) -> Node:
        """Add a prepared ``Node`` (same rules as ``add_node``)."""
        existing = self._nodes.get(node.id)
        if existing is None:
            self._nodes[node.id] = node
            if self._journal is not None:
                self._journal.nodes.add(node.id)
            return node
        if existing != node:
            raise ConflictError(
                f"node {node.id!r} already exists with other content",
                details={"node_id": node.id},
            )
        return existing

    def node(self, node_id: str) -> Node:
        """The node with ``node_id`` (``NotFoundError`` when absent)."""
        try:
            return self._nodes[node_id]
        except KeyError:
            raise NotFoundError(f"no node {node_id!r}", details={"node_id": node_id}) from None

    def has_node(self, node_id: str) -> bool:
        """Whether the graph holds ``node_id``."""
        return node_id in self._nodes

    def nodes(self) -> tuple[Node, ...]:
        """Every node, ordered by ID."""
        return self._listing("nodes", self._nodes)

    def _listing(self, name: str, table: Mapping[str, _Record]) -> tuple[_Record, ...]:
        """``table``'s values ordered by key: the last listing when every key still
        holds the very object listed (one C-level pass), else a new sort (~0.1 s for
        the 168,000 facts of the Django sdist, and a build asks several times)."""
        held = self._listed.get(name)
        if held is not None and len(held[0]) == len(table):
            keys, values = held
            try:
                if all(map(is_, values, map(table.__getitem__, keys))):
                    return values
            except KeyError:
                pass
        keys = sorted(table)
        listed = tuple(map(table.__getitem__, keys))
        self._listed[name] = (keys, listed)
        return listed

    def node_ids(self) -> tuple[str, ...]:
        """Every node ID, sorted."""
        return tuple(sorted(self._nodes))

    # ----------------------------------------------------------------- facts
    def add_fact(
        self,
        source: str,
        target: str,
        relation: str,
        discriminator: Mapping[str, Any] | None = None,
        *,
        occurrence: OccurrenceInput | None = None,
        annotations: Mapping[str, Any] | None = None,
    ) -> AdmissionResult:
        """Admit one fact candidate (with at most one occurrence) and say what happened."""
        spec = self.registry.get(relation)
        if spec is None:
            self._unregistered[relation] += 1
            self._admissions[AdmissionOutcome.UNRESOLVED] += 1
            return AdmissionResult(
                AdmissionOutcome.UNRESOLVED, relation, reasons=("unregistered_relation",)
            )
        source_node = self._endpoint(source, "source")
        target_node = self._endpoint(target, "target")
        disc = spec.discriminator(discriminator)
        first, second = ordered_endpoints(spec.direction, source_node.id, target_node.id)
        payload = fact_identity_payload(spec.direction, first, second, relation, disc)
        fact_id, witness = id_from_payload(FACT_ID_PREFIX, payload)
        existing = self._facts.get(fact_id)
        if existing is None:
            endpoints = FactEndpointIdentity(
                self._nodes[first].identity, self._nodes[second].identity
            )
            fact = SemanticFact(fact_id, spec.direction, first, second, relation, disc, endpoints)
            self._facts[fact_id] = fact
            self._indexed(fact)
            if self._journal is not None:
                self._journal.facts.add(fact_id)
            outcome = AdmissionOutcome.NEW_FACT
        else:
            self._check_fact_witness(existing, witness)
            outcome = AdmissionOutcome.EXACT_DUPLICATE_MERGED
        if annotations:
            self._merge_annotations(fact_id, annotations)
        occurrence_id = None
        if occurrence is not None:
            occurrence_id, is_new = self._admit_occurrence(fact_id, occurrence)
            if is_new and outcome is not AdmissionOutcome.NEW_FACT:
                outcome = AdmissionOutcome.ADDITIONAL_OCCURRENCE
        self._admissions[outcome] += 1
        return AdmissionResult(outcome, relation, fact_id, occurrence_id, disc.reasons)

    def add_facts(self, candidates: Iterable[FactCandidate]) -> Mapping[str, int]:
        """Admit many candidates exactly as ``add_fact`` one by one would, but all or nothing.

        The bulk path for producers (``cairn index`` admits ~10^5 sites): identical final
        state, counters included, while each fact record is built once and repeated
        identity payloads are hashed once. Nothing changes when any candidate is refused
        (the error is the one ``add_fact`` raises for it). Returns this batch's outcome
        counts. Candidates carry no annotations; use ``add_fact`` for those.
        """
        batch = _Batch(self)
        for source, target, relation, discriminator, occurrence in candidates:
            batch.admit(source, target, relation, discriminator, occurrence)
        batch.commit()
        return MappingProxyType({o.value: batch.outcomes[o] for o in AdmissionOutcome})

    def add_pieces(self, pieces: Iterable[FactPiece]) -> Mapping[str, int]:
        """Merge pieces admitted apart, all or nothing: the same state ``add_facts`` over
        their candidates, in the same order, gives (counters included), but with no ID
        derived again: a fact or occurrence only one piece holds is stored as that very
        object. Returns the outcome counts, as ``add_facts`` does.

        Endpoints must exist by now (``MissingEndpointError``); a fact's endpoint
        identities are the graph's nodes' (corrected where the piece assumed others).
        """
        facts, occurrences = self._facts, self._occurrences
        staged_facts: dict[str, SemanticFact] = {}
        staged: dict[str, EvidenceOccurrence] = {}
        added: dict[str, list[str]] = {}
        admitted = 0
        unregistered: Counter[str] = Counter()
        for piece in pieces:
            admitted += piece.admitted
            unregistered.update(piece.unregistered)
            for fact_id, fact in piece.facts.items():
                known = staged_facts.get(fact_id) or facts.get(fact_id)
                if known is None:
                    staged_facts[fact_id] = self._with_endpoint_identities(fact)
                elif _fact_key(known) != _fact_key(fact):
                    raise IdentityCollisionError(
                        f"two different fact payloads share the ID {fact_id}",
                        details={"fact_id": fact_id},
                    )
            for occurrence_id, occurrence in piece.occurrences.items():
                known_occurrence = staged.get(occurrence_id) or occurrences.get(occurrence_id)
                if known_occurrence is None:
                    staged[occurrence_id] = occurrence
                    added.setdefault(occurrence.fact_id, []).append(occurrence_id)
                else:
                    self._check_occurrence_witness(known_occurrence, occurrence)
                    staged[occurrence_id] = _merge_occurrences(known_occurrence, occurrence)
        for fact_id, fact in staged_facts.items():
            facts[fact_id] = stored = _listing(fact, (), added.get(fact_id, ()))
            self._indexed(stored)
        for fact_id, more in added.items():
            if fact_id not in staged_facts:
                fact = facts[fact_id]
                facts[fact_id] = _listing(fact, fact.occurrence_ids, more)
        occurrences.update(staged)
        if self._journal is not None:
            self._journal.facts.update(staged_facts, added)
            self._journal.occurrences.update(staged)
        new_occurrences = sum(map(len, added.values()))
        outcomes = {
            AdmissionOutcome.NEW_FACT: len(staged_facts),
            AdmissionOutcome.ADDITIONAL_OCCURRENCE: new_occurrences - len(staged_facts),
            AdmissionOutcome.EXACT_DUPLICATE_MERGED: admitted - new_occurrences,
            AdmissionOutcome.UNRESOLVED: sum(unregistered.values()),
        }
        self._admissions.update(outcomes)
        self._unregistered.update(unregistered)
        return MappingProxyType({o.value: outcomes[o] for o in AdmissionOutcome})

    def merge_parts(
        self, parts: Sequence[Part], last: PartsMerge | None = None, *, remember: bool = True
    ) -> PartsMerge | None:
        """Each part's nodes (the first node of each ID, in part order), then every part's
        facts (``add_pieces``), as one merge; into an empty graph, also what the next
        merge needs to be made by difference (None when parts share a fact or occurrence
        ID). Given ``last`` (the merge before, which this one consumes), only the parts
        that are not the very objects under the same key are taken out and put in again:
        the graph is the one merging everything again makes (a ``cairn watch`` round
        merges every module's part again: ~0.5 s on the Django sdist). ``remember=False``
        keeps nothing for a next merge (nor copies the records for it)."""
        listed = list(parts)
        empty = not (self._nodes or self._facts or self._occurrences)
        if empty and last is not None:
            merged = _by_difference(last, listed)
            if merged is not None:
                self._hold(merged, listed)
                return merged
        for _, nodes, _ in listed:
            for node in nodes:
                if node.id not in self._nodes:
                    self.put_node(node)
        self.add_pieces([piece for _, _, piece in listed])
        if not (empty and remember):
            return None
        remembered = self._remembered(listed)
        if remembered is not None:
            self._journal = _Journal(remembered)
        return remembered

    def _hold(self, merged: PartsMerge, listed: list[Part]) -> None:
        """Take ``merged``'s records (copies: the merge keeps its own) and the outcome
        counts ``add_pieces`` gives for ``listed``'s pieces, disjoint as they are."""
        self._nodes = dict(merged.nodes)
        self._facts = dict(merged.facts)
        self._occurrences = dict(merged.occurrences)
        self._built_index = None
        self._journal = _Journal(merged)
        unregistered: Counter[str] = Counter()
        for _, _, piece in listed:
            unregistered.update(piece.unregistered)
        admitted = sum(piece.admitted for _, _, piece in listed)
        facts, occurrences = len(self._facts), len(self._occurrences)
        self._admissions.update(
            {
                AdmissionOutcome.NEW_FACT: facts,
                AdmissionOutcome.ADDITIONAL_OCCURRENCE: occurrences - facts,
                AdmissionOutcome.EXACT_DUPLICATE_MERGED: admitted - occurrences,
                AdmissionOutcome.UNRESOLVED: sum(unregistered.values()),
            }
        )
        self._unregistered.update(unregistered)

    def _remembered(self, listed: list[Part]) -> PartsMerge | None:
        """What merging ``listed`` into this (then empty) graph made, or None when parts
        share a key, a fact or an occurrence (no part alone answers for it)."""
        keys = {key for key, _, _ in listed}
        if (
            len(keys) != len(listed)
            or sum(len(piece.facts) for _, _, piece in listed) != len(self._facts)
            or sum(len(piece.occurrences) for _, _, piece in listed) != len(self._occurrences)
        ):
            return None
        holders: dict[str, tuple[Hashable, ...]] = {}
        ends: Counter[str] = Counter()
        for key, nodes, piece in listed:
            for node in nodes:
                holders[node.id] = (*holders.get(node.id, ()), key)
            ends.update(map(_SOURCE, piece.facts.values()))
            ends.update(map(_TARGET, piece.facts.values()))
        facts = self._facts.values()
        return PartsMerge(
            {key: (nodes, piece) for key, nodes, piece in listed},
            dict(self._nodes),
            dict(self._facts),
            dict(self._occurrences),
            holders,
            ends,
            pairs=Counter(zip(map(_SOURCE, facts), map(_TARGET, facts), strict=True)),
        )

    def _with_endpoint_identities(self, fact: SemanticFact) -> SemanticFact:
        """``fact`` with its endpoints' identities as this graph's nodes have them."""
        return _with_identities(fact, self._nodes)

    def _endpoint_identity(self, node_id: str, role: str) -> EndpointIdentity:
        return self._endpoint(node_id, role).identity

    def _endpoint(self, node_id: str, role: str) -> Node:
        return _endpoint_in(self._nodes, node_id, role)

    def _check_fact_witness(self, existing: SemanticFact, witness: bytes) -> None:
        stored = fact_identity_payload(
            existing.direction,
            existing.source,
            existing.target,
            existing.relation,
            existing.discriminator,
        )
        if id_from_payload(FACT_ID_PREFIX, stored)[1] != witness:
            raise IdentityCollisionError(
                f"two different fact payloads share the ID {existing.id}",
                details={"fact_id": existing.id},
            )

    def _merge_annotations(self, fact_id: str, annotations: Mapping[str, Any]) -> None:
        fact = self._facts[fact_id]
        variants = canonical_tuple((*fact.annotation_variants, freeze(annotations)))
        if variants != fact.annotation_variants:
            self._facts[fact_id] = replace(fact, annotation_variants=variants)
            if self._journal is not None:
                self._journal.facts.add(fact_id)

    # ----------------------------------------------------------- occurrences
    def _admit_occurrence(self, fact_id: str, given: OccurrenceInput) -> tuple[str, bool]:
        owner = OccurrenceOwner(given.adapter_id, given.strategy, given.adapter_version)
        source_file = check_repo_path(given.source_file, "source_file")
        target_file = check_repo_path(given.target_file, "target_file")
        payload = occurrence_identity_payload(
            fact_id,
            owner.adapter_id,
            owner.strategy,
            source_file,
            given.source_range,
            target_file,
            given.target_range,
            given.site_kind,
            given.adapter_evidence_key,
        )
        occurrence_id, _ = id_from_payload(OCCURRENCE_ID_PREFIX, payload)
        incoming = EvidenceOccurrence(
            id=occurrence_id,
            fact_id=fact_id,
            owner=owner,
            source_file=source_file,
            source_range=given.source_range,
            target_file=target_file,
            target_range=given.target_range,
            site_kind=given.site_kind,
            adapter_evidence_key=given.adapter_evidence_key,
            provenance=canonical_tuple(given.provenance) if given.provenance else (),
            confidence_observations=(
                sorted_observations(given.confidence) if given.confidence else ()
            ),
            metadata_variants=canonical_tuple([given.metadata]) if given.metadata else (),
        )
        existing = self._occurrences.get(occurrence_id)
        if existing is None:
            self._store_occurrence(incoming)
            return occurrence_id, True
        self._check_occurrence_witness(existing, incoming)
        self._occurrences[occurrence_id] = _merge_occurrences(existing, incoming)
        if self._journal is not None:
            self._journal.occurrences.add(occurrence_id)
        return occurrence_id, False

    def put_occurrence(self, occurrence: EvidenceOccurrence) -> None:
        """Store a fully formed occurrence of a known fact (used by loaders)."""
        if occurrence.fact_id not in self._facts:
            raise MissingEndpointError(f"occurrence {occurrence.id} names unknown fact")
        existing = self._occurrences.get(occurrence.id)
        if existing is None:
            self._store_occurrence(occurrence)
        else:
            self._check_occurrence_witness(existing, occurrence)
            self._occurrences[occurrence.id] = _merge_occurrences(existing, occurrence)
            if self._journal is not None:
                self._journal.occurrences.add(occurrence.id)

    def _store_occurrence(self, occurrence: EvidenceOccurrence) -> None:
        self._occurrences[occurrence.id] = occurrence
        fact = self._facts[occurrence.fact_id]
        ids = list(fact.occurrence_ids)
        bisect.insort(ids, occurrence.id)
        self._facts[fact.id] = _with_occurrence_ids(fact, tuple(ids))
        if self._journal is not None:
            self._journal.occurrences.add(occurrence.id)
            self._journal.facts.add(fact.id)

    def _check_occurrence_witness(
        self, existing: EvidenceOccurrence, incoming: EvidenceOccurrence
    ) -> None:
        if _occurrence_key(existing) != _occurrence_key(incoming):
            raise IdentityCollisionError(
                f"two different occurrence payloads share the ID {existing.id}",
                details={"occurrence_id": existing.id},
            )

    # -------------------------------------------------------------- queries
    def fact(self, fact_id: str) -> SemanticFact:
        """The fact with ``fact_id`` (``NotFoundError`` when absent)."""
        try:
            return self._facts[fact_id]
        except KeyError:
            raise NotFoundError(f"no fact {fact_id!r}", details={"fact_id": fact_id}) from None

    def has_fact(self, fact_id: str) -> bool:
        """Whether the graph holds a fact with ``fact_id``."""
        return fact_id in self._facts

    def occurrence(self, occurrence_id: str) -> EvidenceOccurrence:
        """The occurrence with ``occurrence_id`` (``NotFoundError`` when absent)."""
        try:
            return self._occurrences[occurrence_id]
        except KeyError:
            raise NotFoundError(f"no occurrence {occurrence_id!r}") from None

    def has_occurrence(self, occurrence_id: str) -> bool:
        """Whether the graph holds ``occurrence_id``."""
        return occurrence_id in self._occurrences

    def facts(self) -> tuple[SemanticFact, ...]:
        """Every fact, ordered by ID."""
        return self._listing("facts", self._facts)

    def occurrences(self) -> tuple[EvidenceOccurrence, ...]:
        """Every occurrence, ordered by ID."""
        return self._listing("occurrences", self._occurrences)

    def hyperedges(self) -> tuple[Hyperedge, ...]:
        """Every hyperedge, ordered by ID."""
        return tuple(self._hyperedges[key] for key in sorted(self._hyperedges))

    def _sorted_facts(
        self, ids: Iterable[str], relations: Iterable[str] | None = None
    ) -> tuple[SemanticFact, ...]:
        found = map(self._facts.__getitem__, sorted(ids))
        if relations is None:
            return tuple(found)
        wanted = frozenset(relations)
        return tuple(fact for fact in found if fact.relation in wanted)

    def facts_between(
        self, source: str, target: str, relations: Iterable[str] | None = None
    ) -> tuple[SemanticFact, ...]:
        """Every fact from ``source`` to ``target`` (undirected facts match either order)."""
        ids = set(self._index.by_pair.get((source, target), ()))
        for fact_id in self._index.by_pair.get((target, source), ()):
            if self._facts[fact_id].direction is Direction.UNDIRECTED:
                ids.add(fact_id)
        return self._sorted_facts(ids, relations)

    def relations_between(self, source: str, target: str) -> tuple[str, ...]:
        """The distinct relations of the facts between two nodes, sorted."""
        return tuple(sorted({fact.relation for fact in self.facts_between(source, target)}))

    def facts_from(
        self, source: str, relations: Iterable[str] | None = None
    ) -> tuple[SemanticFact, ...]:
        """Every fact whose stored source is ``source``."""
        return self._sorted_facts(self._index.by_source.get(source, ()), relations)

    def facts_to(
        self, target: str, relations: Iterable[str] | None = None
    ) -> tuple[SemanticFact, ...]:
        """Every fact whose stored target is ``target``."""
        return self._sorted_facts(self._index.by_target.get(target, ()), relations)

    def facts_by_relation(self, relation: str) -> tuple[SemanticFact, ...]:
        """Every fact of one relation."""
        return self._sorted_facts(self._index.by_relation.get(relation, ()))

    def occurrences_of(self, fact_id: str) -> tuple[EvidenceOccurrence, ...]:
        """Every occurrence supporting ``fact_id``, ordered by ID."""
        return tuple(map(self._occurrences.__getitem__, self.fact(fact_id).occurrence_ids))

    def endpoint_pairs(self, relations: Iterable[str] | None = None) -> tuple[tuple[str, str], ...]:
        """Each unique (source, target) pair once, sorted; with ``relations``, only pairs
        having at least one fact of those relations."""
        if relations is None:
            return tuple(sorted(self._index.by_pair))
        wanted = frozenset(relations)
        return tuple(
            pair
            for pair in sorted(self._index.by_pair)
            if any(self._facts[f].relation in wanted for f in self._index.by_pair[pair])
        )

    def edge_attributes(self, source: str, target: str) -> Mapping[str, Any]:
        """Single-edge compatibility view: exactly one fact, else a typed error."""
        facts = self.facts_between(source, target)
        if not facts:
            raise UnknownEdgeError(
                f"no fact joins {source!r} and {target!r}",
                details={"source": source, "target": target},
            )
        if len(facts) > 1:
            raise AmbiguousEdgeError(
                f"{len(facts)} facts join {source!r} and {target!r}; use facts_between()",
                details={"source": source, "target": target, "fact_ids": [f.id for f in facts]},
            )
        fact = facts[0]
        return MappingProxyType(
            {
                "fact_id": fact.id,
                "relation": fact.relation,
                "direction": fact.direction.value,
                "completeness": fact.discriminator.completeness,
                "discriminator": fact.discriminator.value,
                "occurrence_count": len(fact.occurrence_ids),
                "annotations": fact.annotations,
            }
        )

    # ------------------------------------------------------- hyperedges etc.
    def add_hyperedge(
        self,
        hyperedge_id: str,
        relation: str,
        members: Iterable[str],
        attributes: Mapping[str, Any] | None = None,
    ) -> Hyperedge:
        """Add a hyperedge over existing nodes (identical re-adds are no-ops)."""
        hyperedge = Hyperedge(hyperedge_id, relation, tuple(members), attributes or {})
        return self.put_hyperedge(hyperedge)

    def put_hyperedge(self, hyperedge: Hyperedge) -> Hyperedge:
        """Add a prepared ``Hyperedge`` (same rules as ``add_hyperedge``)."""
        for member in hyperedge.members:
            self._endpoint(member, "hyperedge member")
        existing = self._hyperedges.get(hyperedge.id)
        if existing is not None and existing != hyperedge:
            raise ConflictError(f"hyperedge {hyperedge.id!r} already exists with other content")
        self._hyperedges[hyperedge.id] = hyperedge
        return hyperedge

    @property
    def community_labels(self) -> Mapping[str, str]:
        """Human labels of communities, keyed by community ID."""
        return MappingProxyType(dict(sorted(self._community_labels.items())))

    def set_community_label(self, community: str, label: str) -> None:
        """Name one community; labels are presentation, never identity.

        Both strings are kept in NFC, the form the artifact writes, so a graph equals
        the one read back from its artifact.
        """
        if not isinstance(community, str) or not isinstance(label, str) or not community:
            raise ValidationError("community ID and label must be strings")
        self._community_labels[nfc(community)] = nfc(label)

    # ---------------------------------------------------------------- counts
    @property
    def node_count(self) -> int:
        """Number of nodes."""
        return len(self._nodes)

    @property
    def fact_count(self) -> int:
        """Number of semantic facts."""
        return len(self._facts)

    @property
    def endpoint_pair_count(self) -> int:
        """Number of unique (source, target) pairs (without building the query indexes:
        a graph that is only written and loaded never needs them)."""
        if self._built_index is not None:
            return len(self._built_index.by_pair)
        journal = self._journal
        merge = journal.current() if journal is not None else None
        if journal is not None and merge is not None:  # the merge's pairs, and the written
            facts = self._facts
            written = {(facts[fact_id].source, facts[fact_id].target) for fact_id in journal.facts}
            return len(merge.pairs) + len(written - merge.pairs.keys())
        facts_listed = self._facts.values()
        return len(set(zip(map(_SOURCE, facts_listed), map(_TARGET, facts_listed), strict=True)))

    @property
    def occurrence_count(self) -> int:
        """Number of evidence occurrences."""
        return len(self._occurrences)

    def counts(self) -> GraphCounts:
        """All named counts at once."""
        return GraphCounts(
            self.node_count,
            self.fact_count,
            self.endpoint_pair_count,
            self.occurrence_count,
            len(self._hyperedges),
        )

    @property
    def admission_counts(self) -> Mapping[str, int]:
        """How many admissions ended in each outcome (all outcomes present)."""
        return MappingProxyType({o.value: self._admissions[o] for o in AdmissionOutcome})

    @property
    def unregistered_relation_admissions(self) -> Mapping[str, int]:
        """Admissions refused per unregistered relation."""
        return MappingProxyType(dict(sorted(self._unregistered.items())))

    def record_admission_counts(
        self, admissions: Mapping[str, int], unregistered: Mapping[str, int]
    ) -> None:
        """Restore admission counters (used by loaders and views); replaces current ones."""
        self._admissions = Counter({AdmissionOutcome(k): int(v) for k, v in admissions.items()})
        self._unregistered = Counter({k: int(v) for k, v in unregistered.items()})

    # ---------------------------------------------------------- bulk loading
    @classmethod
    def from_records(
        cls,
        *,
        nodes: Iterable[Node],
        facts: Iterable[SemanticFact],
        occurrences: Iterable[EvidenceOccurrence],
        hyperedges: Iterable[Hyperedge] = (),
        community_labels: Mapping[str, str] | None = None,
        admission_counts: Mapping[str, int] | None = None,
        unregistered_relation_admissions: Mapping[str, int] | None = None,
        registry: RelationRegistry = REGISTRY,
    ) -> SemanticGraph:
        """Rebuild a graph from records whose IDs the caller has already verified.

        Used by loaders (the artifact reader re-derives every ID first). Structural
        consistency is still checked: endpoints exist, each occurrence belongs to a
        fact that lists it, and nothing is given twice.
        """
        graph = cls(registry)
        node_list, fact_list, occurrence_list = list(nodes), list(facts), list(occurrences)
        if not graph._load_in_bulk(node_list, fact_list, occurrence_list):
            # Something is wrong: the record-by-record path names the first offender.
            graph._load_one_by_one(node_list, fact_list, occurrence_list)
            raise InvariantError("bulk and record-by-record structural checks disagree")
        for hyperedge in hyperedges:
            graph.put_hyperedge(hyperedge)
        for community, label in (community_labels or {}).items():
            graph.set_community_label(community, label)
        graph.record_admission_counts(
            admission_counts or {}, unregistered_relation_admissions or {}
        )
        return graph

    def _load_in_bulk(
        self,
        nodes: list[Node],
        facts: list[SemanticFact],
        occurrences: list[EvidenceOccurrence],
    ) -> bool:
        """Store the records and build the indexes with C-level passes over columns.

        Returns False, leaving partial state, when any structural check fails (a
        duplicate, a missing endpoint, an occurrence not listed by its fact); the caller
        then replays ``_load_one_by_one`` to raise the typed error for the first offender.
        """
        self._nodes = dict(zip(map(_ID, nodes), nodes, strict=True))
        fact_ids = list(map(_ID, facts))
        self._facts = dict(zip(fact_ids, facts, strict=True))
        occurrence_ids = list(map(_ID, occurrences))
        self._occurrences = dict(zip(occurrence_ids, occurrences, strict=True))
        if (len(self._nodes), len(self._facts), len(self._occurrences)) != (
            len(nodes),
            len(facts),
            len(occurrences),
        ):
            return False  # an ID given twice
        self._built_index = None
        self._journal = None
        node_ids = self._nodes.keys()
        if not (node_ids >= set(map(_SOURCE, facts)) and node_ids >= set(map(_TARGET, facts))):
            return False  # a missing endpoint
        return _occurrences_listed(self._facts, facts, occurrence_ids, occurrences)

    def _load_one_by_one(
        self,
        nodes: list[Node],
        facts: list[SemanticFact],
        occurrences: list[EvidenceOccurrence],
    ) -> None:
        """The reference structural checks, record by record (raises on the first offender)."""
        self._nodes, self._facts, self._occurrences = {}, {}, {}
        self._built_index = None
        self._journal = None
        for node in nodes:
            if node.id in self._nodes:
                raise ConflictError(f"node {node.id!r} given twice")
            self._nodes[node.id] = node
        for fact in facts:
            if fact.id in self._facts:
                raise ConflictError(f"fact {fact.id} given twice")
            self._endpoint(fact.source, "source")
            self._endpoint(fact.target, "target")
            self._facts[fact.id] = fact
            self._indexed(fact)
        for occurrence in occurrences:
            fact_of = self._facts.get(occurrence.fact_id)
            if fact_of is None or occurrence.id not in fact_of.occurrence_ids:
                raise MissingEndpointError(
                    f"occurrence {occurrence.id} is not listed by fact {occurrence.fact_id}"
                )
            if occurrence.id in self._occurrences:
                raise ConflictError(f"occurrence {occurrence.id} given twice")
            self._occurrences[occurrence.id] = occurrence
        listed = sum(len(fact.occurrence_ids) for fact in self._facts.values())
        if listed != len(self._occurrences):
            raise MissingEndpointError("a fact lists an occurrence that was not given")

    # ----------------------------------------------------------------- views
    def copy(self) -> SemanticGraph:
        """An independent copy with every node, fact, occurrence and counter."""
        return self.subgraph(self._nodes)

    def subgraph(self, node_ids: Iterable[str]) -> SemanticGraph:
        """The induced graph on ``node_ids``: their facts, occurrences and hyperedges.

        Admission counters are carried over exactly; they describe the history of the
        graph the view was taken from.
        """
        keep = set(node_ids)
        for node_id in sorted(keep):
            self.node(node_id)
        view = SemanticGraph(self.registry)
        for node_id in sorted(keep):
            view._nodes[node_id] = self._nodes[node_id]
        for fact_id in sorted(self._facts):
            fact = self._facts[fact_id]
            if fact.source in keep and fact.target in keep:
                view._facts[fact_id] = fact
                for occurrence_id in fact.occurrence_ids:
                    view._occurrences[occurrence_id] = self._occurrences[occurrence_id]
        for key, hyperedge in self._hyperedges.items():
            if keep.issuperset(hyperedge.members):
                view._hyperedges[key] = hyperedge
        view._community_labels = dict(self._community_labels)
        view._admissions = Counter(self._admissions)
        view._unregistered = Counter(self._unregistered)
        return view

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SemanticGraph):
            return NotImplemented
        return (
            self.registry.identifier == other.registry.identifier
            and self._nodes == other._nodes
            and self._facts == other._facts
            and self._occurrences == other._occurrences
            and self._hyperedges == other._hyperedges
            and self._community_labels == other._community_labels
            and self._admissions == other._admissions
            and self._unregistered == other._unregistered
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        counts = self.counts()
        return (
            f"<SemanticGraph nodes={counts.node_count} facts={counts.fact_count} "
            f"endpoint_pairs={counts.endpoint_pair_count} "
            f"occurrences={counts.occurrence_count}>"
        )


class _Batch:
    """Pending state of one ``add_facts`` call; ``commit`` applies it to the graph."""

    def __init__(self, graph: SemanticGraph, identity_of: IdentityOf | None = None) -> None:
        self.graph = graph
        self.identity_of = identity_of or graph._endpoint_identity
        self.outcomes: Counter[AdmissionOutcome] = Counter()
        self.unregistered: Counter[str] = Counter()
        self.specs: dict[str, RelationSpec] = {}
        self.normalised: dict[tuple[Any, ...], Discriminator] = {}
        # (relation, first, second, id(discriminator)) -> fact ID; the discriminator
        # object is kept alive in ``self.discriminators`` so its id is never reused.
        self.fact_ids: dict[tuple[str, str, str, int], str] = {}
        self.discriminators: list[Discriminator] = []
        # Witness bytes are not kept (orjson buffers are ~4 KiB each): a repeated ID is
        # checked against the payload re-derived from the staged fact, as add_fact does.
        self.new_facts: dict[str, SemanticFact] = {}
        self.checked: set[str] = set()
        self.occurrences: dict[str, EvidenceOccurrence] = {}
        self.new_occurrences: dict[str, list[str]] = {}
        self.owners: dict[tuple[str, str, str | None], OccurrenceOwner] = {}

    def admit(
        self,
        source: str,
        target: str,
        relation: str,
        discriminator: Mapping[str, Any] | None,
        occurrence: OccurrenceInput | None,
    ) -> None:
        graph = self.graph
        spec = self.specs.get(relation)
        if spec is None:
            spec = graph.registry.get(relation)
            if spec is None:
                self.unregistered[relation] += 1
                self.outcomes[AdmissionOutcome.UNRESOLVED] += 1
                return
            self.specs[relation] = spec
        identity_of = self.identity_of
        identity_of(source, "source")
        identity_of(target, "target")
        disc = self._discriminator(spec, discriminator)
        first, second = ordered_endpoints(spec.direction, source, target)
        key = (relation, first, second, id(disc))
        fact_id = self.fact_ids.get(key)
        if fact_id is None:
            payload = fact_identity_payload(spec.direction, first, second, relation, disc)
            fact_id, witness = id_from_payload(FACT_ID_PREFIX, payload)
            self._check_or_create(fact_id, witness, spec.direction, first, second, relation, disc)
            self.fact_ids[key] = fact_id
            self.discriminators.append(disc)
            outcome = (
                AdmissionOutcome.NEW_FACT
                if fact_id not in self.checked
                else AdmissionOutcome.EXACT_DUPLICATE_MERGED
            )
            self.checked.add(fact_id)
        else:
            outcome = AdmissionOutcome.EXACT_DUPLICATE_MERGED
        if occurrence is not None:
            is_new = self._occurrence(fact_id, occurrence)
            if is_new and outcome is not AdmissionOutcome.NEW_FACT:
                outcome = AdmissionOutcome.ADDITIONAL_OCCURRENCE
        self.outcomes[outcome] += 1

    def _discriminator(self, spec: RelationSpec, raw: Mapping[str, Any] | None) -> Discriminator:
        """``spec.discriminator(raw)``, remembered per batch by relation and raw items.

        Value types are part of the key (``True == 1`` must not share an entry); raw
        values that cannot be hashed go straight to the registry.
        """
        try:
            key = (spec.name, *[(name, type(value), value) for name, value in (raw or {}).items()])
            cached = self.normalised.get(key)
        except TypeError:
            return spec.discriminator(raw)
        if cached is None:
            cached = spec.discriminator(raw)
            self.normalised[key] = cached
        return cached

    def _check_or_create(
        self,
        fact_id: str,
        witness: bytes,
        direction: Direction,
        first: str,
        second: str,
        relation: str,
        disc: Discriminator,
    ) -> None:
        """Witness-check a known fact ID, or record a new fact (first sighting)."""
        graph = self.graph
        existing = graph._facts.get(fact_id)
        if existing is not None:
            graph._check_fact_witness(existing, witness)
            self.checked.add(fact_id)  # known before the batch: never a new fact
            return
        staged = self.new_facts.get(fact_id)
        if staged is not None:
            graph._check_fact_witness(staged, witness)
            return
        endpoints = FactEndpointIdentity(
            self.identity_of(first, "source"), self.identity_of(second, "target")
        )
        self.new_facts[fact_id] = SemanticFact(
            fact_id, direction, first, second, relation, disc, endpoints
        )

    def _occurrence(self, fact_id: str, given: OccurrenceInput) -> bool:
        """Stage one occurrence (as ``_admit_occurrence``); True when its ID is new."""
        owner_key = (given.adapter_id, given.strategy, given.adapter_version)
        owner = self.owners.get(owner_key)
        if owner is None:
            owner = OccurrenceOwner(*owner_key)
            self.owners[owner_key] = owner
        source_file = check_repo_path(given.source_file, "source_file")
        target_file = check_repo_path(given.target_file, "target_file")
        payload = occurrence_identity_payload(
            fact_id,
            owner.adapter_id,
            owner.strategy,
            source_file,
            given.source_range,
            target_file,
            given.target_range,
            given.site_kind,
            given.adapter_evidence_key,
        )
        occurrence_id, _ = id_from_payload(OCCURRENCE_ID_PREFIX, payload)
        incoming = EvidenceOccurrence(
            occurrence_id,
            fact_id,
            owner,
            source_file,
            given.source_range,
            target_file,
            given.target_range,
            given.site_kind,
            given.adapter_evidence_key,
            canonical_tuple(given.provenance) if given.provenance else (),
            sorted_observations(given.confidence) if given.confidence else (),
            canonical_tuple([given.metadata]) if given.metadata else (),
        )
        existing = self.occurrences.get(occurrence_id)
        if existing is None:
            existing = self.graph._occurrences.get(occurrence_id)
            if existing is None:
                self.occurrences[occurrence_id] = incoming
                self.new_occurrences.setdefault(fact_id, []).append(occurrence_id)
                return True
        self.graph._check_occurrence_witness(existing, incoming)
        self.occurrences[occurrence_id] = _merge_occurrences(existing, incoming)
        return False

    def commit(self) -> None:
        """Apply every staged fact, occurrence and counter to the graph."""
        graph = self.graph
        facts = graph._facts
        for fact_id, fact in self.new_facts.items():
            facts[fact_id] = fact
            graph._indexed(fact)
        for fact_id, added in self.new_occurrences.items():
            fact = facts[fact_id]
            ids = tuple(sorted((*fact.occurrence_ids, *added)))
            facts[fact_id] = _with_occurrence_ids(fact, ids)
        graph._occurrences.update(self.occurrences)
        if graph._journal is not None:
            graph._journal.facts.update(self.new_facts, self.new_occurrences)
            graph._journal.occurrences.update(self.occurrences)
        graph._admissions.update(self.outcomes)
        graph._unregistered.update(self.unregistered)


_ID = attrgetter("id")
_SOURCE = attrgetter("source")
_TARGET = attrgetter("target")
_RELATION = attrgetter("relation")
_FACT_ID = attrgetter("fact_id")
_OCCURRENCE_IDS = attrgetter("occurrence_ids")


def _grouped(keys: Iterable[_K], fact_ids: list[str]) -> dict[_K, set[str]]:
    """``{key: {IDs of the facts with that key}}``, by C-level ``map`` calls only."""
    groups: defaultdict[_K, set[str]] = defaultdict(set)
    deque(map(set.add, map(groups.__getitem__, keys), fact_ids), maxlen=0)
    return dict(groups)


def admit_apart(
    candidates: Iterable[FactCandidate],
    identities: Mapping[str, EndpointIdentity] | None = None,
    registry: RelationRegistry = REGISTRY,
) -> FactPiece:
    """Admit fact candidates apart from any graph, for ``SemanticGraph.add_pieces``.

    Every candidate must carry an occurrence (what lets the merge count outcomes without
    replaying them). Endpoints are not checked here but when the piece is merged; an
    endpoint's identity is taken from ``identities``, else assumed ``stable``.
    """
    known = identities or {}
    stable = EndpointIdentity.stable()

    def identity_of(node_id: str, role: str) -> EndpointIdentity:
        return known.get(node_id, stable)

    scratch = SemanticGraph(registry)
    batch = _Batch(scratch, identity_of)
    for source, target, relation, discriminator, occurrence in candidates:
        if occurrence is None:
            raise ValidationError("a fact candidate admitted apart must carry an occurrence")
        batch.admit(source, target, relation, discriminator, occurrence)
    batch.commit()
    admitted = sum(batch.outcomes.values()) - batch.outcomes[AdmissionOutcome.UNRESOLVED]
    return FactPiece(
        MappingProxyType(scratch._facts),
        MappingProxyType(scratch._occurrences),
        admitted,
        MappingProxyType(dict(batch.unregistered)),
    )


def _with_identities(fact: SemanticFact, nodes: Mapping[str, Node]) -> SemanticFact:
    """``fact`` with its endpoints' identities as ``nodes`` have them (the same object when
    they are equal); ``MissingEndpointError`` when an endpoint is not among ``nodes``."""
    source = _endpoint_in(nodes, fact.source, "source").identity
    target = _endpoint_in(nodes, fact.target, "target").identity
    held = fact.endpoint_identity
    if (held.source is source or held.source == source) and (
        held.target is target or held.target == target
    ):
        return fact
    return replace(fact, endpoint_identity=FactEndpointIdentity(source, target))


def _endpoint_in(nodes: Mapping[str, Node], node_id: str, role: str) -> Node:
    node = nodes.get(node_id)
    if node is None:
        raise MissingEndpointError(
            f"{role} node {node_id!r} does not exist; nodes are never auto-created",
            details={"role": role, "node_id": node_id},
        )
    return node


def _by_difference(last: PartsMerge, listed: list[Part]) -> PartsMerge | None:
    """``last`` brought to ``listed`` in place: the parts no longer there as the very same
    objects taken out, the new ones put in. None when that cannot stand for merging
    ``listed`` afresh (a key twice, a record ID two parts hold, a fact ending at a node
    no part holds or whose identity changed under facts kept from before): ``last`` is
    spent then, and the caller merges everything."""
    current = {key: (nodes, piece) for key, nodes, piece in listed}
    if len(current) != len(listed):
        return None
    generation, last.generation = last.generation, _SPENT  # until it stands again
    parts = last.parts
    gone = [
        key
        for key, (nodes, piece) in parts.items()
        if (now := current.get(key)) is None or now[0] is not nodes or now[1] is not piece
    ]
    fresh = [
        key
        for key, (nodes, piece) in current.items()
        if (held := parts.get(key)) is None or held[0] is not nodes or held[1] is not piece
    ]
    facts, occurrences, holders, ends = last.facts, last.occurrences, last.holders, last.ends
    touched: set[str] = set()
    fact_ids: set[str] = set()
    occurrence_ids: set[str] = set()
    pairs = last.pairs
    for key in gone:
        nodes, piece = parts.pop(key)
        fact_ids.update(piece.facts)
        occurrence_ids.update(piece.occurrences)
        for fact in piece.facts.values():
            pair = (fact.source, fact.target)
            pairs[pair] -= 1
            if not pairs[pair]:
                del pairs[pair]
        for fact_id in piece.facts:
            del facts[fact_id]
        for occurrence_id in piece.occurrences:
            del occurrences[occurrence_id]
        ends.subtract(map(_SOURCE, piece.facts.values()))
        ends.subtract(map(_TARGET, piece.facts.values()))
        for node in nodes:
            holders[node.id] = tuple(held for held in holders[node.id] if held != key)
            touched.add(node.id)
    added: Counter[str] = Counter()
    pending: list[SemanticFact] = []
    for key in fresh:
        nodes, piece = current[key]
        parts[key] = (nodes, piece)
        fact_ids.update(piece.facts)
        occurrence_ids.update(piece.occurrences)
        fresh_facts = piece.facts.values()
        pairs.update(zip(map(_SOURCE, fresh_facts), map(_TARGET, fresh_facts), strict=True))
        for occurrence_id, occurrence in piece.occurrences.items():
            if occurrence_id in occurrences:
                return None
            occurrences[occurrence_id] = occurrence
        for fact_id, fact in piece.facts.items():
            if fact_id in facts:
                return None
            facts[fact_id] = fact  # its endpoint identities are set below
            pending.append(fact)
        added.update(map(_SOURCE, piece.facts.values()))
        added.update(map(_TARGET, piece.facts.values()))
        for node in nodes:
            holders[node.id] = (*holders.get(node.id, ()), key)
            touched.add(node.id)
    ends.update(added)
    if not _nodes_held(last, touched, added, {key: i for i, key in enumerate(current)}):
        return None
    try:
        for fact in pending:
            facts[fact.id] = _with_identities(fact, last.nodes)
    except MissingEndpointError:
        return None  # merged afresh, the error names the endpoint
    last.generation = generation + 1
    last.changed = (touched, fact_ids, occurrence_ids)
    return last


_SPENT = -1
"""The generation of a merge a failed merge by difference left half updated."""


def _nodes_held(
    last: PartsMerge, touched: set[str], added: Counter[str], position: dict[Hashable, int]
) -> bool:
    """Set each touched node ID to the first node its holding parts list (in part order),
    or drop it when none holds it; False when facts would end at a dropped node, or facts
    kept from before end at a node whose identity changed."""
    nodes, holders, ends, parts = last.nodes, last.holders, last.ends, last.parts
    by_part: dict[Hashable, dict[str, Node]] = {}
    for node_id in sorted(touched):
        holding = holders.get(node_id, ())
        if not holding:
            holders.pop(node_id, None)
            if ends[node_id] > 0:
                return False
            del ends[node_id]
            nodes.pop(node_id, None)
            continue
        first = min(holding, key=position.__getitem__)
        if first not in by_part:
            by_part[first] = {item.id: item for item in parts[first][0]}
        node = by_part[first][node_id]
        held = nodes.get(node_id)
        if (
            held is not None
            and held is not node
            and held.identity != node.identity
            and ends[node_id] > added[node_id]
        ):
            return False
        nodes[node_id] = node
    return True


def _fact_key(fact: SemanticFact) -> tuple[Any, ...]:
    """What a fact's ID is derived from (two facts of one ID must agree on it)."""
    return (fact.direction, fact.source, fact.target, fact.relation, fact.discriminator)


def _listing(fact: SemanticFact, listed: tuple[str, ...], more: Iterable[str]) -> SemanticFact:
    """``fact`` listing ``listed`` and ``more`` (the same object when that is its list)."""
    ids = tuple(sorted({*listed, *more}))
    return fact if ids == fact.occurrence_ids else _with_occurrence_ids(fact, ids)


def _with_occurrence_ids(fact: SemanticFact, ids: tuple[str, ...]) -> SemanticFact:
    """``fact`` listing ``ids`` (built directly: ``dataclasses.replace`` costs twice as
    much on the admission paths)."""
    return SemanticFact(
        fact.id,
        fact.direction,
        fact.source,
        fact.target,
        fact.relation,
        fact.discriminator,
        fact.endpoint_identity,
        ids,
        fact.annotation_variants,
    )


def _occurrences_listed(
    facts_by_id: Mapping[str, SemanticFact],
    facts: list[SemanticFact],
    occurrence_ids: list[str],
    occurrences: list[EvidenceOccurrence],
) -> bool:
    """Whether the facts list each given occurrence exactly once, under its own fact.

    With occurrence IDs already unique, the given ``(occurrence, fact)`` pairs are
    distinct; when each one is listed by its fact and the facts list as many entries as
    there are occurrences, the listings are exactly those pairs (no repeat, no stranger).
    That is exactly what the record-by-record checks accept. Every step is a C-level
    ``map`` (a dict of every listed ID cost 4x more).
    """
    if sum(map(len, map(_OCCURRENCE_IDS, facts))) != len(occurrences):
        return False
    owners = list(map(facts_by_id.get, map(_FACT_ID, occurrences)))
    if any(map(is_, owners, repeat(None))):
        return False  # an occurrence of an unknown fact
    return all(map(contains, map(_OCCURRENCE_IDS, owners), occurrence_ids))


def _occurrence_key(occurrence: EvidenceOccurrence) -> tuple[Any, ...]:
    return (
        occurrence.fact_id,
        occurrence.owner.adapter_id,
        occurrence.owner.strategy,
        occurrence.source_file,
        occurrence.source_range,
        occurrence.target_file,
        occurrence.target_range,
        occurrence.site_kind,
        occurrence.adapter_evidence_key,
    )


def _merge_occurrences(
    existing: EvidenceOccurrence, incoming: EvidenceOccurrence
) -> EvidenceOccurrence:
    """Union two observations of one occurrence; no first or last writer wins."""
    metadata = canonical_tuple((*existing.metadata_variants, *incoming.metadata_variants))
    diagnostics = set(existing.diagnostics) | set(incoming.diagnostics)
    if len(metadata) > 1:
        diagnostics.add(DIAGNOSTIC_METADATA_CONFLICT)
    unlocated = (
        existing.source_range is None
        and existing.target_range is None
        and existing.adapter_evidence_key is None
    )
    if unlocated:
        diagnostics.add(DIAGNOSTIC_MULTIPLICITY_UNKNOWN)
    provenance = [*existing.provenance, *incoming.provenance]
    owner = existing.owner
    versions = sorted(
        v for v in {owner.adapter_version, incoming.owner.adapter_version} if v is not None
    )
    if len(versions) > 1:
        # Versions sit outside identity; keep every one visible instead of choosing.
        diagnostics.add(DIAGNOSTIC_ADAPTER_VERSION_CONFLICT)
        provenance.extend({"adapter_version": version} for version in versions)
        owner = replace(owner, adapter_version=None)
    elif versions and owner.adapter_version is None and not existing.diagnostics:
        owner = replace(owner, adapter_version=versions[0])
    return replace(
        existing,
        owner=owner,
        provenance=canonical_tuple(provenance),
        confidence_observations=sorted_observations(
            (*existing.confidence_observations, *incoming.confidence_observations)
        ),
        metadata_variants=metadata,
        diagnostics=tuple(sorted(diagnostics)),
    )
