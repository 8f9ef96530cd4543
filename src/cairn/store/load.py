"""Loading a semantic graph into the store as searchable documents (code-graph spec §5).

``load_semantic_graph`` turns every node into a document in the collection of its
family (``files``, ``symbols``, ``routes``, ``sections``, ``externals``; other kinds go
to ``nodes``), with a body of the node's descriptive attributes, a ``/text`` field for
BM25 and an ``embedding`` vector from an ``Embedder``, and writes every fact with its
occurrences and endpoint identities into one graph (default ``code``).

A load is an internal admin operation, not a client command: it is not bound by the
256-mutation / 8 MiB command limits (its own bounds are ``MAX_LOAD_*`` in ``limits``),
but it is still ONE SQLite transaction with one commit position and a
``CommitReceipt`` listing every change. It is a diff: the wanted state is compared
with what is stored (document bodies, vectors bound to the live revision in the same
space, fact records and their occurrence records) and only differences are applied,
so loading the same graph twice changes nothing, and re-loading an edited graph
writes only what changed. The command ID is derived from a digest of the wanted
content, so a repeated load returns the stored receipt byte for byte.

Store fact IDs equal the graph's fact IDs: fact records are written exactly as the
graph holds them, after re-deriving each fact ID from its identity payload.
"""

from __future__ import annotations

import gc
import hashlib
import sqlite3
import struct
import uuid
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from itertools import chain, groupby
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import numpy.typing as npt
import orjson

from cairn.canonical import (
    FAST_FLOAT_MAX,
    FAST_FLOAT_MIN,
    MAX_DEPTH,
    MAX_SAFE_INTEGER,
    canonical_bytes,
    right_sized,
)
from cairn.errors import (
    BudgetExceededError,
    CairnError,
    IdentityCollisionError,
    ValidationError,
)
from cairn.graph.identity import FACT_ID_PREFIX, fact_identity_payload, id_from_payload
from cairn.graph.model import EndpointIdentity, EvidenceOccurrence, Node, SemanticFact, thaw
from cairn.graph.multigraph import SemanticGraph
from cairn.store.apply import analyse_fields, field_text, load_collection
from cairn.store.bulk import BulkApplier, BulkDocument, BulkFact, BulkVector, lookup_chunks
from cairn.store.checksums import (
    document_checksum,
    fact_checksum,
    occurrence_checksum,
    stored_bytes,
)
from cairn.store.commands import (
    CommitReceipt,
    ConfigureCollection,
    ConfigureGraph,
    DeleteDocument,
    DeleteFact,
    EntityRef,
    MutationOutcome,
    PutDocument,
    VectorField,
    VectorSpace,
)
from cairn.store.database import Planned
from cairn.store.derived import DerivedState
from cairn.store.limits import (
    DEFAULT_GRAPH,
    EMBED_BATCH_SIZE,
    LOAD_BATCH_SIZE,
    MAX_IDENTIFIER_BYTES,
    MAX_LOAD_FACTS,
    MAX_LOAD_FIELD_CHARS,
    MAX_LOAD_NODES,
    MAX_LOAD_OCCURRENCES,
    MAX_REPORTED_DAMAGE,
    MAX_SNIPPET_CHARS,
    check_identifier,
)
from cairn.store.loadkeys import (
    DerivedKeys,
    KeyDelta,
    KeyMemo,
    LoadKeys,
    fact_key,
    header_key,
    keys_path,
    node_key,
    read_keys,
    write_keys,
)
from cairn.store.policy import Capability, Principal, require
from cairn.store.records import (
    FACT_COLUMNS,
    OCCURRENCE_COLUMNS,
    OCCURRENCE_PARTS,
    StoredFact,
    StoredOccurrence,
    read_shapes,
    shape_of,
    split_fact,
    split_occurrence,
)
from cairn.store.text import CODE_ANALYZER, analyze, identifier_words, term_counts

if TYPE_CHECKING:
    from cairn.embed import Embedder
    from cairn.store.database import Database, PrincipalLike

__all__ = [
    "AGREEMENT_KINDS",
    "BODY_ATTRIBUTES",
    "COMPARED_BY_KEYS",
    "DEFAULT_GRAPH",
    "FAMILIES",
    "FAMILY_COLLECTIONS",
    "KEYS_CONFIGURED",
    "KEYS_FOREIGN",
    "KEYS_MISSING",
    "KEYS_OTHER_HEADER",
    "KEYS_OTHER_POSITION",
    "LOADER_VERSION",
    "LOAD_ANALYZER",
    "LOAD_CACHE_KIB",
    "LOAD_STEPS",
    "OTHER_COLLECTION",
    "SEARCH_FIELDS",
    "TEXT_FIELD",
    "TEXT_FIELDS",
    "VECTOR_FIELD",
    "GraphAgreement",
    "LoadProgress",
    "PreparedDocument",
    "PreparedDocuments",
    "RepairReport",
    "collection_of",
    "compare_semantic_graph",
    "embedding_text",
    "load_semantic_graph",
    "load_summary",
    "loaded_position",
    "loaded_space",
    "merge_prepared",
    "node_body",
    "node_text",
    "prepare_documents",
    "repair_collector",
]

_Item = TypeVar("_Item")

LOADER_VERSION = "cairn.store.load/4"
"""Part of every load's fingerprint: bump it when the document shape changes."""

FAMILIES: Mapping[str, str] = {
    "file": "files",
    "class": "symbols",
    "function": "symbols",
    "method": "symbols",
    "variable": "symbols",
    "route": "routes",
    "section": "sections",
    "external": "externals",
}
"""Node kind -> collection (spec code-graph §3, §5)."""

FAMILY_COLLECTIONS = ("files", "symbols", "routes", "sections", "externals")
"""The collections every load configures, even when empty."""

OTHER_COLLECTION = "nodes"
"""Where nodes of kinds outside ``FAMILIES`` go (configured only when used)."""

TEXT_FIELD = "/text"
"""The text field of a loaded document's words: a file's path, the docstring and the
words of the body (``node_text``)."""

TEXT_FIELDS = ("/name", "/qualified_name", "/signature", TEXT_FIELD)
"""The BM25 text fields of every loaded document: three name fields (body attributes
kept anyway) and ``TEXT_FIELD``; searched together by ``SEARCH_FIELDS``."""

SEARCH_FIELDS = "/name^2 /qualified_name^0.5 /signature /text"
"""The weighted field list (BM25F, ``cairn.index.text``) code search ranks by on every
door. The weights were chosen on the search bench's tuning projects (Flask, Click) only
(docs/benchmarks.md): a name that matches counts twice a body word, a class or module
name in the qualified name half."""
LOAD_ANALYZER = CODE_ANALYZER
"""The analyzer of every collection a load configures: code and English words."""

VECTOR_FIELD = "embedding"
"""The vector field of every loaded document (field pointer ``/embedding``)."""

BODY_ATTRIBUTES = (
    "name",
    "qualified_name",
    "path",
    "range",
    "language",
    "signature",
    "docstring",
    "snippet",
    "level",
    "community",
    "centrality",
    "partial_parse",
)
"""Node attributes copied into the document body when present (plus kind and identity)."""

LOAD_CACHE_KIB = 64 * 1024
"""SQLite page cache of the writer while a load's transaction runs (restored after).

64 MiB holds nearly all of the Django package's 68 MiB database; at 256 MiB the whole sdist cached
264 MiB of pages and lifted ``cairn index``'s peak RSS past 1.2 GB for no measured gain
(sdist load as fast or faster, Django package unchanged in interleaved pairs)."""

_TEXT_ATTRIBUTES = ("docstring", "body_terms", "text", "snippet_text")
_FINGERPRINT_NAMESPACE = uuid.UUID("6a0f3c2e-8d5b-4c1e-9f27-1b2d3e4f5a60")


def collection_of(kind: str) -> str:
    """The collection of a node kind."""
    return FAMILIES.get(kind, OTHER_COLLECTION)


def _bounded(value: Any, limit: int) -> Any:
    if isinstance(value, str) and len(value) > limit:
        return value[:limit]
    return value


def node_text(node: Node) -> str:
    """The ``/text`` of a node: a file's path, its docstring and the words of its body
    (its names and signature are fields of their own)."""
    attributes = node.attributes
    parts: list[str] = []
    if node.kind == "file" and isinstance(attributes.get("path"), str):
        parts.append(attributes["path"])
    for key in _TEXT_ATTRIBUTES:
        value = field_text(thaw(attributes.get(key)))
        if value:
            parts.append(value)
    text = "\n".join(dict.fromkeys(part for part in parts if part))
    return text[:MAX_LOAD_FIELD_CHARS]


def embedding_text(body: Mapping[str, Any]) -> str:
    """What a document's vector embeds: its name and qualified name (each also in
    words), signature and ``/text``, in that order, each once."""
    parts: list[str] = []
    for key in ("name", "qualified_name"):
        value = body.get(key)
        if isinstance(value, str):
            parts.extend((value, identifier_words(value)))
    for key in ("signature", "text"):
        value = field_text(body.get(key))
        if value:
            parts.append(value)
    text = "\n".join(dict.fromkeys(part for part in parts if part))
    return text[:MAX_LOAD_FIELD_CHARS]


def node_body(node: Node) -> dict[str, Any]:
    """The document body of a node: kind, identity, descriptive attributes, ``text``."""
    body: dict[str, Any] = {"kind": node.kind, "identity": node.identity.status.value}
    for key in BODY_ATTRIBUTES:
        if key in node.attributes and node.attributes[key] is not None:
            limit = MAX_SNIPPET_CHARS if key == "snippet" else MAX_LOAD_FIELD_CHARS
            body[key] = _bounded(thaw(node.attributes[key]), limit)
    body["text"] = node_text(node)
    return body


@dataclass(frozen=True, slots=True)
class PreparedDocument:
    """One node's document made ahead of a load: what the load's own encoding, text
    analysis and embedding give for that node.

    ``kind``, ``identity`` and ``attributes`` (thawed) are the node it was made from: a
    load takes it only for a node equal to those, so a stale or foreign one is never
    stored in place of the node's own document.
    """

    node_id: str
    kind: str
    identity: EndpointIdentity
    attributes: dict[str, Any]
    body: dict[str, Any]
    data: bytes
    fields: list[tuple[str, list[str], list[int]]]  # ``TEXT_FIELDS``' analysis


@dataclass(frozen=True, slots=True)
class PreparedDocuments:
    """Documents made ahead of a load by ``prepare_documents``, by node ID, and their
    vectors (rows of ``vectors`` in ``order``) when the embedder allows it."""

    documents: Mapping[str, PreparedDocument]
    space: dict[str, Any] | None = None
    vectors: bytes = b""
    order: Mapping[str, int] = field(default_factory=dict)

    def vector(self, node_id: str, space: VectorSpace) -> npt.NDArray[np.float32] | None:
        """The prepared vector of ``node_id`` in ``space``, or None."""
        row = self.order.get(node_id)
        if row is None or self.space is None or self.space != space.to_json():
            return None
        dimension = space.dimension
        return np.frombuffer(
            self.vectors, dtype=np.float32, count=dimension, offset=row * dimension * 4
        )

    def matches(self, node: Node) -> PreparedDocument | None:
        """The prepared document of ``node``, if it was made from an equal node."""
        held = self.documents.get(node.id)
        if (
            held is None
            or held.kind != node.kind
            or held.identity != node.identity
            or held.attributes != thaw(node.attributes)
        ):
            return None
        return held


def merge_prepared(parts: Sequence[PreparedDocuments]) -> PreparedDocuments:
    """One ``PreparedDocuments`` of ``parts`` made apart (in order: the first document of
    an ID is kept, as ``prepare_documents`` keeps the first node of an ID)."""
    if len(parts) == 1:
        return parts[0]
    documents: dict[str, PreparedDocument] = {}
    order: dict[str, int] = {}
    vectors: list[bytes] = []
    with_vectors = all(part.space is not None and part.space == parts[0].space for part in parts)
    rows = 0
    for part in parts:
        for node_id, document in part.documents.items():
            documents.setdefault(node_id, document)
        if with_vectors:
            for node_id, row in part.order.items():
                order.setdefault(node_id, rows + row)
            vectors.append(part.vectors)
            rows += len(part.order)
    if not with_vectors:
        return PreparedDocuments(documents)
    return PreparedDocuments(documents, parts[0].space, b"".join(vectors), order)


def prepare_documents(nodes: Sequence[Node], embedder: Embedder) -> PreparedDocuments:
    """The documents (and, for the row-independent hashing embedder, the vectors) a load
    would make of ``nodes``: for a worker to make while the graph is still being resolved.
    """
    from cairn.embed import HashingEmbedder

    made: dict[str, PreparedDocument] = {}
    analysed: list[tuple[list[str], list[int]]] = []  # the embedder's own analysis
    for node in nodes:
        body = node_body(node)
        made[node.id] = PreparedDocument(
            node.id,
            node.kind,
            node.identity,
            thaw(node.attributes),
            body,
            _record_bytes(body),
            analyse_fields(body, TEXT_FIELDS, LOAD_ANALYZER),
        )
        analysed.append(term_counts(analyze(embedding_text(body))))
    if type(embedder) is not HashingEmbedder or not made:
        return PreparedDocuments(made)
    rows = [
        embedder.embed_analysed(analysed[start : start + EMBED_BATCH_SIZE])
        for start in range(0, len(analysed), EMBED_BATCH_SIZE)
    ]
    matrix = np.ascontiguousarray(np.concatenate(rows), dtype=np.float32)
    order = {node_id: index for index, node_id in enumerate(made)}
    return PreparedDocuments(made, embedder.space.to_json(), matrix.tobytes(), order)


@dataclass(frozen=True, slots=True)
class _Document:
    ref: EntityRef
    body: dict[str, Any]
    data: bytes
    prepared: PreparedDocument | None = None


@dataclass(frozen=True, slots=True)
class _Wanted:
    """The state a load wants: what to configure, and where the graph's records go.

    Bodies and fact records are not held here: ``_Encoder`` encodes them a batch at a
    time as the plan walks them, so no step holds every record of the graph at once.
    """

    graph: str
    space: VectorSpace
    collections: tuple[ConfigureCollection, ...]
    source: SemanticGraph
    refs: Mapping[str, EntityRef]  # node ID -> the document it becomes
    order: tuple[str, ...]  # node IDs in the documents' (collection, ID) order


def _check_bounds(graph: SemanticGraph) -> None:
    for count, limit, what in (
        (graph.node_count, MAX_LOAD_NODES, "nodes"),
        (graph.fact_count, MAX_LOAD_FACTS, "facts"),
        (graph.occurrence_count, MAX_LOAD_OCCURRENCES, "occurrences"),
    ):
        if count > limit:
            raise BudgetExceededError(
                f"a load takes at most {limit} {what}; the graph has {count}",
                details={"what": what, "limit": limit, "size": count},
            )


def _verified(fact: SemanticFact) -> None:
    payload = fact_identity_payload(
        fact.direction, fact.source, fact.target, fact.relation, fact.discriminator
    )
    if id_from_payload(FACT_ID_PREFIX, payload)[0] != fact.id:
        raise IdentityCollisionError(
            f"fact {fact.id} does not match its identity payload", details={"fact_id": fact.id}
        )


_EXACT_ORJSON = (
    orjson.OPT_SORT_KEYS
    | orjson.OPT_PASSTHROUGH_SUBCLASS
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
)
"""orjson's canonical-path options, refusing (not printing) subclasses of str, int, dict
and list, dataclasses and datetimes; object keys must be exact ``str`` either way."""


def _plain_json(value: Any) -> bool:
    """Whether the values inside ``value`` are of exact JSON types orjson prints canonically.

    Containers exact ``dict`` or ``list`` less than ``MAX_DEPTH`` deep; values strings,
    None, booleans, safe integers or floats in the band where orjson and ECMAScript
    print alike: a subset of what ``canonical_bytes`` sends to orjson. Keys are not
    looked at here: orjson refuses any key that is not an exact ``str``, and
    ``_record_bytes`` checks that the output is ASCII (so every string is NFC). The walk
    goes level by level, so the depth costs nothing per item.
    """
    level = [value]
    depth = 0
    while level:
        if depth >= MAX_DEPTH:
            return False
        deeper: list[Any] = []
        push = deeper.append
        for container in level:
            kind = type(container)
            if kind is dict:
                items = container.values()
            elif kind is list:
                items = container
            else:
                return False
            for item in items:
                kind = type(item)
                if kind is str or item is None or kind is bool:
                    continue
                if kind is dict or kind is list:
                    push(item)
                elif kind is int:
                    if not -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:
                        return False
                elif (
                    kind is not float
                    or not FAST_FLOAT_MIN <= abs(item) < FAST_FLOAT_MAX
                    or item.is_integer()
                ):
                    return False
        level = deeper
        depth += 1
    return True


def _record_bytes(value: Any) -> bytes:
    """``canonical_bytes(value)``, with one cheaper check for the common record.

    When ``_plain_json(value)`` holds, orjson accepts the keys and its output is ASCII
    (every string and key ASCII, hence NFC, without lone surrogates or NFC key
    collisions), ``canonical_bytes`` would take its orjson path with the same bytes.
    Anything else goes to ``canonical_bytes`` itself, which decides (and names any
    error). Tested against ``canonical_bytes_reference``.
    """
    if _plain_json(value):
        try:
            data = orjson.dumps(value, option=_EXACT_ORJSON)
        except orjson.JSONEncodeError:
            return canonical_bytes(value)
        if data.isascii():
            return right_sized(data)
    return canonical_bytes(value)


def _plain_identifier(value: str) -> bool:
    """A printable ASCII identifier within the limits: what ``check_identifier`` accepts.

    For ASCII text the control characters (category Cc) are exactly the non-printable
    ones, and the UTF-8 size is the length. Anything else is left to ``check_identifier``.
    """
    return (
        value.isascii()
        and value.isprintable()
        and len(value) <= MAX_IDENTIFIER_BYTES
        and bool(value.strip())
    )


def _plain_identifiers(values: Collection[str]) -> bool:
    """``_plain_identifier`` of every value, checked over all of them at once in C."""
    joined = "".join(values)
    return (
        joined.isascii()
        and joined.isprintable()
        and max(map(len, values), default=0) <= MAX_IDENTIFIER_BYTES
        and all(map(str.strip, values))
    )


PLAIN_CHECK_CHUNK = 512
"""Identifiers ``_unplain_positions`` checks together in C."""


def _unplain_positions(values: Sequence[str]) -> Iterator[int]:
    """The positions, in order, of the values ``_plain_identifier`` does not vouch for.

    Checked a chunk at a time in C; only a chunk that fails is looked at value by value.
    One non-ASCII name (the whole Django sdist has a few) had sent every node of a load
    to the per-reference checks: ~0.1 s a ``cairn watch`` round.
    """
    for start in range(0, len(values), PLAIN_CHECK_CHUNK):
        chunk = values[start : start + PLAIN_CHECK_CHUNK]
        if not _plain_identifiers(chunk):
            yield from (
                start + at for at, value in enumerate(chunk) if not _plain_identifier(value)
            )


_NODE_ID = attrgetter("id")
_NODE_KIND = attrgetter("kind")


def _validate_ref(ref: EntityRef) -> None:
    """``ref.validate()``, without the per-character scan for plain ASCII identifiers."""
    if not (_plain_identifier(ref.collection) and _plain_identifier(ref.id)):
        ref.validate()


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for a load (restored after, whatever happens).

    A load allocates millions of short-lived, acyclic records (bodies, fact and
    occurrence dicts, rows) next to a graph of millions of objects, so the collector's
    full passes over that graph cost more than the work itself. Reference counting still
    frees everything; only cycle detection waits until the load returns.
    """
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


_LENGTH = struct.Struct("<Q").pack
"""A chunk's length as the digest frames it: 8 bytes, little-endian."""
_FIRST = itemgetter(0)
_SECOND = itemgetter(1)


class _Digest:
    """SHA-256 over length-prefixed chunks (8-byte little-endian length, then the bytes)."""

    def __init__(self) -> None:
        self._hash = hashlib.sha256()

    def feed(self, *chunks: bytes) -> None:
        update = self._hash.update  # one update per piece: no joined copy per record
        for chunk in chunks:
            update(_LENGTH(len(chunk)))
            update(chunk)

    def feed_all(self, chunks: Iterable[bytes]) -> None:
        """``feed(*chunks)`` with one hash update (the framing is built in C)."""
        listed = list(chunks)
        lengths = map(_LENGTH, map(len, listed))
        self._hash.update(b"".join(chain.from_iterable(zip(lengths, listed, strict=True))))

    def feed_column(self, chunks: Sequence[bytes]) -> None:
        """One column of chunks: their count, each length, then their bytes joined (all
        lengths 8-byte little-endian). Three C-level updates, where framing each chunk
        apart cost ~0.25 s for the 168,000 fact keys of the Django sdist."""
        update = self._hash.update
        update(_LENGTH(len(chunks)))
        update(struct.pack(f"<{len(chunks)}Q", *map(len, chunks)))
        update(b"".join(chunks))

    def hexdigest(self) -> str:
        return self._hash.hexdigest()


def _wanted(graph: SemanticGraph, graph_name: str, space: VectorSpace) -> _Wanted:
    """What the store should hold for ``graph``: bounds and identifiers checked, every
    node's document named, nothing encoded yet."""
    _check_bounds(graph)
    check_identifier(graph_name, "graph")
    space.validate()
    nodes = graph.nodes()
    ids = list(map(_NODE_ID, nodes))
    homes = list(map(collection_of, map(_NODE_KIND, nodes)))
    if _plain_identifiers(set(homes)):
        refs = dict(zip(ids, map(EntityRef, homes, ids), strict=True))
        for position in _unplain_positions(ids):  # the first bad one is named
            refs[ids[position]].validate()
    else:  # the per-reference checks name the first bad one
        refs = {}
        for ref in map(EntityRef, homes, ids):
            _validate_ref(ref)
            refs[ref.id] = ref
    # Tuples compare in C: ~10x faster than a key function over ~10^5 nodes.
    order = tuple(map(_SECOND, sorted(zip(homes, ids, strict=True))))
    names = set(homes) | set(FAMILY_COLLECTIONS)
    vector = (VectorField(VECTOR_FIELD, space),)
    collections = tuple(
        ConfigureCollection(name, TEXT_FIELDS, vector, LOAD_ANALYZER) for name in sorted(names)
    )
    return _Wanted(graph_name, space, collections, graph, refs, order)


class _Splitter:
    """``split_occurrence`` and ``split_fact`` of a graph's own objects, each shape
    encoded once per load.

    A repository's occurrences share a handful of shapes (the adapter and its version)
    and its facts a few thousand (direction, discriminator, endpoint identities), yet
    the general functions build and encode every record whole. Only records whose shape
    fields are plain strings and empty lists are memoised (a key of strings cannot
    confuse ``1`` with ``1.0``); anything else takes the general functions, whose bytes
    these equal (tested on real graphs).
    """

    def __init__(self, encode: Callable[[Any], bytes]) -> None:
        self._encode = encode
        self._occurrence_shapes: dict[tuple[Any, ...], bytes] = {}
        self._fact_shapes: dict[tuple[Any, ...], tuple[Any, bytes]] = {}

    def occurrence(self, item: EvidenceOccurrence, fact_id: str) -> StoredOccurrence:
        """``split_occurrence(item.id, fact_id, item.to_json(), encode)``."""
        encode = self._encode
        if (
            item.fact_id != fact_id
            or item.provenance
            or item.confidence_observations
            or item.metadata_variants
            or item.diagnostics
        ):
            return split_occurrence(item.id, fact_id, item.to_json(), encode)
        owner = item.owner
        key = (owner.adapter_id, owner.strategy, owner.adapter_version, item.adapter_evidence_key)
        shape = self._occurrence_shapes.get(key)
        if shape is None:
            skipped = (*OCCURRENCE_COLUMNS, *OCCURRENCE_PARTS)
            shape = encode({k: v for k, v in item.to_json().items() if k not in skipped})
            self._occurrence_shapes[key] = shape
        source, target = item.source_range, item.target_range
        parts = [
            item.site_kind,
            item.source_file,
            source.to_json() if source else None,
            item.target_file,
            target.to_json() if target else None,
        ]
        return StoredOccurrence(item.id, shape, encode(parts))

    def fact(
        self,
        fact: SemanticFact,
        endpoint_ids: tuple[str, str],
        occurrences: Sequence[StoredOccurrence],
    ) -> StoredFact:
        """``split_fact(fact.to_json(), fact.id, fact.relation, endpoint_ids, occurrences,
        encode)``."""
        ordered = tuple(sorted(occurrences, key=_by_id))
        if (
            fact.annotation_variants
            or endpoint_ids != (fact.source, fact.target)
            or fact.occurrence_ids != tuple(item.id for item in ordered)
        ):
            return split_fact(
                fact.to_json(), fact.id, fact.relation, endpoint_ids, ordered, self._encode
            )
        disc, ends = fact.discriminator, fact.endpoint_identity
        key = (
            fact.direction.value,
            id(disc),
            *_identity_key(ends.source),
            *_identity_key(ends.target),
        )
        held = self._fact_shapes.get(key)
        if held is None or held[0] is not disc:
            shape = self._encode({k: v for k, v in fact.to_json().items() if k not in FACT_COLUMNS})
            held = (disc, shape)  # the discriminator is kept alive, so its id stays its own
            self._fact_shapes[key] = held
        return StoredFact(held[1], None, ordered)


def _by_id(item: StoredOccurrence) -> str:
    return item.id


def _identity_key(identity: EndpointIdentity) -> tuple[str, ...]:
    """An endpoint identity as plain strings: its status, then its reasons (a length
    first, so two identities never run together into one key)."""
    return (str(identity.status.value), str(len(identity.reasons)), *map(str, identity.reasons))


class _Encoder:
    """The wanted records in store order, canonicalised a batch at a time, and the
    fingerprint of all of them once both walks are done.

    The digest frames the load's header, then every document in (collection, ID) order,
    then every fact in ID order: the order the plan writes them. ``encode`` gives
    canonical bytes (``_record_bytes``; tests pass ``canonical_bytes`` and compare).
    """

    def __init__(
        self,
        wanted: _Wanted,
        encode: Callable[[Any], bytes] = _record_bytes,
        prepared: PreparedDocuments | None = None,
    ) -> None:
        self.wanted = wanted
        self._encode = encode
        self._prepared = prepared
        self._digest = _Digest()
        self._walked: set[str] = set()
        header = {"loader": LOADER_VERSION, "graph": wanted.graph, "space": wanted.space.to_json()}
        self._digest.feed(canonical_bytes(header))

    def documents(self, only: Collection[str] | None = None) -> Iterator[list[_Document]]:
        """Every wanted document (or those of the node IDs in ``only``),
        ``LOAD_BATCH_SIZE`` at a time, in (collection, ID) order."""
        if self._walked:
            raise RuntimeError("a load's documents are walked once, before its facts")
        wanted, encode = self.wanted, self._encode
        node_of, refs = wanted.source.node, wanted.refs
        order = (
            wanted.order
            if only is None
            else [node_id for node_id in wanted.order if node_id in only]
        )
        matches = self._prepared.matches if self._prepared is not None else None
        for start in range(0, len(order), LOAD_BATCH_SIZE):
            batch: list[_Document] = []
            chunks: list[bytes] = []
            for node_id in order[start : start + LOAD_BATCH_SIZE]:
                ref = refs[node_id]
                node = node_of(node_id)
                held = matches(node) if matches is not None else None
                if held is None:
                    body = node_body(node)
                    data = encode(body)
                else:
                    body, data = held.body, held.data
                batch.append(_Document(ref, body, data, held))
                chunks += (ref.collection.encode(), ref.id.encode(), data)
            self._digest.feed_all(chunks)
            yield batch
        self._walked.add("documents")

    def facts(self, only: Collection[str] | None = None) -> Iterator[list[BulkFact]]:
        """Every wanted fact (or those whose IDs are in ``only``), with its
        occurrences, ``LOAD_BATCH_SIZE`` at a time, by ID."""
        if self._walked != {"documents"}:
            raise RuntimeError("a load's facts are walked once, after its documents")
        refs = self.wanted.refs
        split = _Splitter(self._encode)
        occurrence, split_one = split.occurrence, split.fact
        source = self.wanted.source
        occurrences_of = source.occurrences_of
        facts: Sequence[SemanticFact] = (
            source.facts() if only is None else list(map(source.fact, sorted(only)))
        )
        for start in range(0, len(facts), LOAD_BATCH_SIZE):
            batch: list[BulkFact] = []
            chunks: list[bytes] = []
            for fact in facts[start : start + LOAD_BATCH_SIZE]:
                _verified(fact)
                endpoints = (refs[fact.source], refs[fact.target])
                fact_id = fact.id
                occurrences = [occurrence(item, fact_id) for item in occurrences_of(fact_id)]
                stored = split_one(fact, (endpoints[0].id, endpoints[1].id), occurrences)
                batch.append(BulkFact(fact, endpoints, stored))
                chunks.extend(_fact_chunks(fact.id, fact.relation, endpoints, stored))
            self._digest.feed_all(chunks)
            yield batch
        self._walked.add("facts")

    @property
    def fingerprint(self) -> str:
        """The digest of everything walked (``RuntimeError`` before both walks end)."""
        if self._walked != {"documents", "facts"}:
            raise RuntimeError("a load's fingerprint needs every document and fact walked")
        return self._digest.hexdigest()


def _fact_chunks(
    fact_id: str, relation: str, endpoints: tuple[EntityRef, EntityRef], stored: StoredFact
) -> Iterator[bytes]:
    """Every byte a stored fact is made of, for the wanted state's digest."""
    yield fact_id.encode()
    yield relation.encode()
    for ref in endpoints:
        yield ref.collection.encode()
        yield ref.id.encode()
    yield b"s" + stored.shape if stored.shape is not None else b"r" + (stored.record or b"")
    for item in stored.occurrences:
        yield item.id.encode()
        yield b"s" + item.shape if item.shape is not None else b"r"
        yield item.parts


LoadProgress = Callable[[str], None]
"""Told the name of each load step as it starts (one of ``LOAD_STEPS``)."""
LOAD_STEPS = (
    "encoding",
    "diffing",
    "documents",
    "facts",
    "committing",
    "snapshot",
    "packing",
)
"""The steps of a load in order; a step with nothing to do may be skipped. ``documents``
puts each batch of documents and then its vectors."""


def _quiet(step: str) -> None:
    """The progress of a load nobody watches."""


RepairReport = Callable[[str, str, str], None]
"""Told ``(table, collection or graph, id)`` of each damaged stored record a load found
(its checksum failed) and rewrote from the graph."""


def _unreported(table: str, resource: str, key: str) -> None:
    """Repairs nobody asked to hear about (the load still rewrites them)."""


def _in_clause(values: Sequence[str]) -> str:
    return ", ".join("?" * len(values))


class _Plan:
    """Diffs the wanted state against the stored one and applies the differences.

    It walks the wanted records a batch at a time and reads the stored rows of each
    batch only, so memory holds one batch of records, not the graph's every record.
    """

    def __init__(
        self,
        wanted: _Wanted,
        embedder: Embedder,
        database: str,
        *,
        bulk: bool = True,
        progress: LoadProgress = _quiet,
        on_repair: RepairReport = _unreported,
        prepared: PreparedDocuments | None = None,
        keys: _KeyState | None = None,
        on_compare: Callable[[str], None] = _quiet,
    ) -> None:
        self.wanted = wanted
        self.embedder = embedder
        self.prepared = prepared
        self.keys = keys  # incremental: the wanted keys and the ones kept by the last load
        self.on_compare = on_compare
        self.database = database
        self.bulk = bulk  # False: every put through the row-at-a-time applier (tests' oracle)
        self.progress = progress
        self.on_repair = on_repair
        self.base = -1  # the position the last run found the database at
        self.wrote = False  # whether that run wrote anything

    def __call__(self, conn: sqlite3.Connection, principal: Principal, position: int) -> Planned:
        # A load writes most pages of a large file in one transaction: with SQLite's
        # default 2 MiB page cache, index pages spill to the WAL and are read back and
        # rewritten many times. A larger cache for this one transaction avoids that.
        previous = int(conn.execute("PRAGMA cache_size").fetchone()[0])
        conn.execute(f"PRAGMA cache_size = {-LOAD_CACHE_KIB}")
        try:
            planned = self._apply(conn, principal, position)
        finally:
            conn.execute(f"PRAGMA cache_size = {previous}")
        self.base, self.wrote = position - 1, bool(planned.mutations)
        return planned

    def _apply(self, conn: sqlite3.Connection, principal: Principal, position: int) -> Planned:
        wanted = self.wanted
        for config in wanted.collections:
            require(principal, self.database, config.name, Capability.ADMIN)
        require(principal, self.database, wanted.graph, Capability.ADMIN)
        applier = BulkApplier(conn, self.database, principal, position)
        encoder = _Encoder(wanted, prepared=self.prepared)
        outcomes: list[MutationOutcome] = []
        names = self._configure(conn, applier, outcomes)
        self.progress("diffing")
        keys = self.keys
        walk: tuple[set[str], set[str]] | None = None
        if keys is not None:
            stale = keys.stale(position - 1) or (KEYS_CONFIGURED if outcomes else None)
            self.on_compare(stale or COMPARED_BY_KEYS)
            walk = keys.walk() if stale is None else None
        if walk is None or keys is None:
            gone_facts = self._facts_gone(conn)
            gone_documents = self._documents_gone(conn, names)
        else:
            gone_facts = self._facts_moved(conn, keys, walk[1])
            gone_documents = keys.documents_gone()
        for fact_id in gone_facts:
            outcomes.append(applier.apply(DeleteFact(wanted.graph, fact_id)))
        for collection, doc_id in gone_documents:
            outcomes.append(applier.apply(DeleteDocument(collection, doc_id)))
        walk_documents, walk_facts = walk if walk is not None else (None, None)
        self.progress("documents")
        for documents in encoder.documents(walk_documents):
            stored = self._stored_documents(conn, documents)
            puts = [
                BulkDocument(
                    doc.ref.collection,
                    doc.ref.id,
                    doc.body,
                    doc.data,
                    _analysed(doc),
                    LOAD_ANALYZER,
                    TEXT_FIELDS,
                )
                for doc in documents
                if stored.get(doc.ref, _NOT_STORED)[0] != doc.data
            ]
            outcomes.extend(self._put_documents(applier, puts))
            rewritten = {EntityRef(item.collection, item.id) for item in puts}
            # A kept document's vector is current if the batch's one lookup found it so.
            needed = [
                doc
                for doc in documents
                if doc.ref in rewritten or not stored.get(doc.ref, _NOT_STORED)[1]
            ]
            outcomes.extend(self._vectors(applier, needed))
        self.progress("facts")
        shapes = read_shapes(conn, "fact_shapes"), read_shapes(conn, "occurrence_shapes")
        for facts in encoder.facts(walk_facts):
            stored_facts = self._stored_facts(conn, facts, shapes)
            changed = [
                item
                for item in facts
                if stored_facts.get(item.fact.id) != (item.endpoints, item.stored)
            ]
            outcomes.extend(self._put_facts(applier, changed))
        self.progress("committing")
        # Skipped records were never encoded: such a load is named by its keys instead.
        fingerprint = (
            encoder.fingerprint
            if walk is None or keys is None
            else keys.fingerprint(encoder.fingerprint)
        )
        command_id = uuid.uuid5(_FINGERPRINT_NAMESPACE, fingerprint)
        return Planned(command_id, fingerprint, tuple(outcomes))

    def disagreement(self, conn: sqlite3.Connection) -> GraphAgreement:
        """Where the stored state differs from the wanted one, by the very diff ``_apply``
        applies, without writing anything (``cairn check --against``)."""
        wanted, found = self.wanted, GraphAgreement()
        names = {config.name for config in wanted.collections}
        if load_collection(conn, OTHER_COLLECTION) is not None:
            names.add(OTHER_COLLECTION)
        for config in wanted.collections:
            if load_collection(conn, config.name) != config:
                found.note("collections", config.name)
        if conn.execute("SELECT 1 FROM graphs WHERE name = ?", (wanted.graph,)).fetchone() is None:
            found.note("graphs", wanted.graph)
        for fact_id in self._facts_gone(conn):
            found.note("facts_extra", fact_id)
        for collection, doc_id in self._documents_gone(conn, tuple(sorted(names))):
            found.note("documents_extra", f"{collection}/{doc_id}")
        encoder = _Encoder(wanted)
        for documents in encoder.documents():
            stored = self._stored_documents(conn, documents)
            for doc in documents:
                data, current = stored.get(doc.ref, _NOT_STORED)
                key = f"{doc.ref.collection}/{doc.ref.id}"
                if data != doc.data:
                    found.note("documents_missing" if data is None else "documents_differ", key)
                elif not current:
                    found.note("vectors_missing", key)
        shapes = read_shapes(conn, "fact_shapes"), read_shapes(conn, "occurrence_shapes")
        for facts in encoder.facts():
            stored_facts = self._stored_facts(conn, facts, shapes)
            for item in facts:
                held = stored_facts.get(item.fact.id)
                if held != (item.endpoints, item.stored):
                    found.note("facts_missing" if held is None else "facts_differ", item.fact.id)
        return found

    def _put_documents(
        self, applier: BulkApplier, puts: Sequence[BulkDocument]
    ) -> list[MutationOutcome]:
        if self.bulk:
            return applier.put_documents(puts) if puts else []
        return [applier.apply(PutDocument(item.collection, item.id, item.body)) for item in puts]

    def _put_vectors(
        self, applier: BulkApplier, puts: Sequence[BulkVector]
    ) -> list[MutationOutcome]:
        if self.bulk:
            return applier.put_vectors(puts)
        return [
            applier.put_vector_data(item.collection, item.id, item.field, item.data)
            for item in puts
        ]

    def _put_facts(self, applier: BulkApplier, puts: Sequence[BulkFact]) -> list[MutationOutcome]:
        graph = self.wanted.graph
        if self.bulk:
            return applier.put_graph_facts(graph, puts) if puts else []
        return [
            applier.put_graph_fact(graph, item.fact, item.endpoints, item.stored) for item in puts
        ]

    def _configure(
        self, conn: sqlite3.Connection, applier: BulkApplier, outcomes: list[MutationOutcome]
    ) -> tuple[str, ...]:
        """Configure the collections and the graph where they differ; return every name."""
        names = {config.name for config in self.wanted.collections}
        if load_collection(conn, OTHER_COLLECTION) is not None:
            names.add(OTHER_COLLECTION)  # a previous load used it: its leftovers are ours
        for config in self.wanted.collections:
            if load_collection(conn, config.name) != config:
                outcomes.append(applier.apply(config))
        exists = conn.execute("SELECT 1 FROM graphs WHERE name = ?", (self.wanted.graph,))
        if exists.fetchone() is None:
            outcomes.append(applier.apply(ConfigureGraph(self.wanted.graph)))
        return tuple(sorted(names))

    def _facts_gone(self, conn: sqlite3.Connection) -> list[str]:
        """Live stored facts of the graph that the load does not want, or whose endpoints
        moved (a node changed collection), by ID."""
        source, refs = self.wanted.source, self.wanted.refs
        gone: list[str] = []
        for fact_id, sc, si, tc, ti in conn.execute(
            "SELECT id, source_collection, source_id, target_collection, target_id "
            "FROM facts WHERE graph = ? AND deleted = 0 ORDER BY id",
            (self.wanted.graph,),
        ):
            fact = source.fact(fact_id) if source.has_fact(fact_id) else None
            if fact is None or (refs[fact.source], refs[fact.target]) != (
                EntityRef(sc, si),
                EntityRef(tc, ti),
            ):
                gone.append(fact_id)
        return gone

    def _facts_moved(
        self, conn: sqlite3.Connection, keys: _KeyState, walked: Collection[str]
    ) -> list[str]:
        """With kept keys: the facts the last load wrote that are not wanted now, and the
        changed ones (among ``walked``) whose endpoints moved (a node changed
        collection), by ID."""
        gone = set(keys.facts_gone())
        kept = keys.kept.facts if keys.kept is not None else {}
        changed = sorted(fact_id for fact_id in walked if fact_id in kept)
        refs, source = self.wanted.refs, self.wanted.source
        for chunk in lookup_chunks(changed):
            for fact_id, sc, si, tc, ti in conn.execute(
                "SELECT id, source_collection, source_id, target_collection, target_id "
                f"FROM facts WHERE graph = ? AND deleted = 0 AND id IN ({_in_clause(chunk)})",
                (self.wanted.graph, *chunk),
            ):
                fact = source.fact(fact_id)
                if (refs[fact.source], refs[fact.target]) != (EntityRef(sc, si), EntityRef(tc, ti)):
                    gone.add(fact_id)
        return sorted(gone)

    def _documents_gone(
        self, conn: sqlite3.Connection, names: Sequence[str]
    ) -> list[tuple[str, str]]:
        """Live stored documents of the load's collections that no node becomes, in
        (collection, ID) order."""
        refs = self.wanted.refs
        return [
            (collection, doc_id)
            for collection, doc_id in conn.execute(
                f"SELECT collection, id FROM documents "
                f"WHERE deleted = 0 AND collection IN ({_in_clause(names)}) "
                f"ORDER BY collection, id",
                tuple(names),
            )
            if refs.get(doc_id) != EntityRef(collection, doc_id)
        ]

    def _stored_documents(
        self, conn: sqlite3.Connection, documents: Sequence[_Document]
    ) -> dict[EntityRef, tuple[bytes | None, bool]]:
        """The live documents among ``documents``: stored body, and whether a live vector
        in the load's space is bound to their live revision (one lookup per batch).

        A stored row whose checksum fails is reported to ``on_repair`` and answered as
        holding no body, so the load rewrites it whole.
        """
        space = canonical_bytes(self.wanted.space.to_json())
        found: dict[EntityRef, tuple[bytes | None, bool]] = {}
        for collection, group in groupby(documents, key=_collection_of):
            ids = [doc.ref.id for doc in group]
            for chunk in lookup_chunks(ids):
                for doc_id, body, revision, owner, project, checksum, current in conn.execute(
                    "SELECT d.id, d.body, d.revision, d.owner, d.project, d.checksum, "
                    "EXISTS (SELECT 1 FROM slots AS s "
                    "JOIN vector_rows AS v ON v.slot = s.slot "
                    "JOIN vector_spaces AS p ON p.id = v.space "
                    "WHERE s.slot = d.slot AND s.death IS NULL AND s.revision = d.revision "
                    "AND v.death IS NULL AND p.field = ? AND p.space = ?) "
                    "FROM documents AS d WHERE d.collection = ? AND d.deleted = 0 "
                    f"AND d.id IN ({_in_clause(chunk)})",
                    (VECTOR_FIELD, space, collection, *chunk),
                ):
                    data = stored_bytes(body)
                    ref = EntityRef(collection, doc_id)
                    if checksum != document_checksum(
                        collection, doc_id, revision, owner, project, False, data
                    ):
                        self.on_repair("documents", collection, doc_id)
                        data = None
                    found[ref] = (data, bool(current))
        return found

    def _stored_facts(
        self,
        conn: sqlite3.Connection,
        facts: Sequence[BulkFact],
        shapes: tuple[Mapping[int, bytes], Mapping[int, bytes]],
    ) -> dict[str, tuple[tuple[EntityRef, EntityRef], StoredFact]]:
        """The live stored facts among ``facts``: endpoints and record parts.

        A fact or occurrence row whose checksum fails is reported to ``on_repair`` and
        left out, so the load rewrites the fact whole.
        """
        graph = self.wanted.graph
        fact_shapes, occurrence_shapes = shapes
        rows: list[tuple[Any, ...]] = []
        for chunk in lookup_chunks([item.fact.id for item in facts]):
            for row in conn.execute(
                "SELECT id, source_collection, source_id, target_collection, target_id, "
                "relation, shape, record, revision, checksum FROM facts WHERE graph = ? "
                f"AND deleted = 0 AND id IN ({_in_clause(chunk)})",
                (graph, *chunk),
            ):
                fact_id, sc, si, tc, ti, relation, shape, record, revision, checksum = row
                data = stored_bytes(record)
                ends = (sc, si, tc, ti)
                if checksum != fact_checksum(
                    graph, fact_id, ends, relation, shape, data, revision, False
                ):
                    self.on_repair("facts", graph, fact_id)  # rewritten: not "stored"
                    continue
                rows.append((fact_id, sc, si, tc, ti, shape, data))
        occurrences: dict[str, list[StoredOccurrence]] = {}
        damaged: set[str] = set()
        for chunk in lookup_chunks([row[0] for row in rows]):
            for fact_id, occurrence_id, shape, parts, checksum in conn.execute(
                f"SELECT fact_id, id, shape, parts, checksum FROM occurrences WHERE graph = ? "
                f"AND fact_id IN ({_in_clause(chunk)}) ORDER BY fact_id, id",
                (graph, *chunk),
            ):
                data = stored_bytes(parts) or b""
                if checksum != occurrence_checksum(graph, fact_id, occurrence_id, shape, data):
                    self.on_repair("occurrences", graph, f"{fact_id}/{occurrence_id}")
                    damaged.add(fact_id)  # the fact is rewritten with all its occurrences
                    continue
                occurrences.setdefault(fact_id, []).append(
                    StoredOccurrence(
                        occurrence_id,
                        shape_of(occurrence_shapes, shape, f"occurrence {occurrence_id}"),
                        data,
                    )
                )
        return {
            fact_id: (
                (EntityRef(sc, si), EntityRef(tc, ti)),
                StoredFact(
                    shape_of(fact_shapes, shape, f"fact {fact_id}"),
                    record,
                    tuple(occurrences.get(fact_id, ())),
                ),
            )
            for fact_id, sc, si, tc, ti, shape, record in rows
            if fact_id not in damaged
        }

    def _embed(self, batch: Sequence[_Document]) -> npt.NDArray[np.float32]:
        """The vectors of ``batch``'s texts: the prepared one of each document that has
        one in the load's space, the embedder's for the rest (prepared vectors exist only
        for a row-independent embedder, so the mix equals embedding the whole batch).
        (The postings' terms are not the embedder's: a code collection's analyzer drops
        stop words; the embedder's does not.)
        """
        prepared = self.prepared
        if prepared is None:
            return self.embedder.embed([embedding_text(doc.body) for doc in batch])
        space = self.wanted.space
        rows = [
            prepared.vector(doc.ref.id, space) if doc.prepared is not None else None
            for doc in batch
        ]
        missing = [index for index, row in enumerate(rows) if row is None]
        if len(missing) == len(batch):
            return self.embedder.embed([embedding_text(doc.body) for doc in batch])
        if missing:
            made = self.embedder.embed([embedding_text(batch[index].body) for index in missing])
            if made.shape != (len(missing), space.dimension):
                return made  # the caller names the wrong shape
            for index, row in zip(missing, made, strict=True):
                rows[index] = row
        return np.stack(rows)  # type: ignore[arg-type]

    def _vectors(self, applier: BulkApplier, needed: Sequence[_Document]) -> list[MutationOutcome]:
        """Embed and put the vectors of ``needed`` (a batch's rewritten documents and any
        without a current one), in the batch's order."""
        outcomes: list[MutationOutcome] = []
        for start in range(0, len(needed), EMBED_BATCH_SIZE):
            batch = needed[start : start + EMBED_BATCH_SIZE]
            matrix = self._embed(batch)
            if matrix.shape != (len(batch), self.wanted.space.dimension):
                raise ValidationError(
                    f"the embedder returned shape {matrix.shape} for {len(batch)} texts",
                    details={"dimension": self.wanted.space.dimension},
                )
            outcomes.extend(
                self._put_vectors(
                    applier,
                    [
                        BulkVector(doc.ref.collection, doc.ref.id, VECTOR_FIELD, row)
                        for doc, row in zip(batch, matrix, strict=True)
                    ],
                )
            )
        return outcomes


COMPARED_BY_KEYS = "by keys"
"""What an incremental load tells ``on_compare`` when it compared only changed records."""
KEYS_MISSING = "every record: no kept keys"
KEYS_FOREIGN = "every record: the kept keys belong to another database"
KEYS_OTHER_HEADER = "every record: Cairn, the embedder or the collections changed"
KEYS_OTHER_POSITION = "every record: the database was written since the last load"
KEYS_CONFIGURED = "every record: the collections were (re)configured"


@dataclass(frozen=True, slots=True)
class _KeyState:
    """An incremental load's keys (``cairn.store.loadkeys``): the wanted state's, and
    those the last load kept (None: none, or none that could be read)."""

    header: str
    incarnation: str
    derived: DerivedKeys
    kept: LoadKeys | None

    @property
    def documents(self) -> dict[str, tuple[str, bytes]]:
        return self.derived.documents

    @property
    def facts(self) -> dict[str, bytes | None]:
        return self.derived.facts

    @classmethod
    def of(
        cls,
        wanted: _Wanted,
        incarnation: str,
        kept: LoadKeys | None,
        memo: KeyMemo | None = None,
    ) -> _KeyState:
        """The keys of ``wanted`` beside ``kept`` (through ``memo`` when there is one)."""
        graph, refs = wanted.source, wanted.refs
        header = header_key(
            {
                "loader": LOADER_VERSION,
                "graph": wanted.graph,
                "space": wanted.space.to_json(),
                "collections": [config.to_json() for config in wanted.collections],
            }
        )
        if memo is not None:
            return cls(header, incarnation, memo.keys(graph, refs), kept)
        occurrences_of = graph.occurrences_of
        documents = {
            node_id: (ref.collection, node_key(graph.node(node_id)))
            for node_id, ref in refs.items()
        }
        facts = {
            fact.id: fact_key(
                fact,
                (refs[fact.source].collection, refs[fact.target].collection),
                occurrences_of(fact.id),
            )
            for fact in graph.facts()
        }
        keyless = {fact_id for fact_id, key in facts.items() if key is None}
        # Summed only when the kept keys turn out current (``fingerprint``).
        return cls(header, incarnation, DerivedKeys(documents, facts, None, keyless), kept)

    def stale(self, position: int) -> str | None:
        """Why the kept keys do not describe this database at ``position``, or None."""
        kept = self.kept
        if kept is None:
            return KEYS_MISSING
        if kept.incarnation != self.incarnation:
            return KEYS_FOREIGN
        if kept.header != self.header:
            return KEYS_OTHER_HEADER
        if kept.position != position:
            return KEYS_OTHER_POSITION
        return None

    def _delta(self) -> KeyDelta | None:
        """The memo's delta when it runs from the very keys kept (the usual ``cairn
        watch`` round), else None."""
        delta, kept = self.derived.delta, self.kept
        if delta is None or kept is None:
            return None
        if kept.documents is not delta.documents or kept.facts is not delta.facts:
            return None
        return delta

    def walk(self) -> tuple[set[str], set[str]]:
        """The node and fact IDs whose records must be compared whole: the kept keys
        do not say they are stored as wanted (a key differs or is new), and every fact
        with no key (call only when ``stale`` found the kept keys current)."""
        assert self.kept is not None
        wanted, keyless = self.derived, self.derived.keyless
        delta = self._delta()
        if delta is not None:  # only where the memo derived anew can a key differ
            documents = {node_id for node_id in delta.nodes if node_id in wanted.documents}
            facts = {fact_id for fact_id in delta.fact_ids if fact_id in wanted.facts}
            return documents, facts | keyless
        held_documents, held_facts = self.kept.documents, self.kept.facts
        documents = {
            node_id
            for node_id, held in wanted.documents.items()
            if held_documents.get(node_id) != held
        }
        facts = {
            fact_id
            for fact_id, key in wanted.facts.items()
            if key is None or held_facts.get(fact_id) != key
        }
        return documents, facts

    def documents_gone(self) -> list[tuple[str, str]]:
        """(collection, ID) of the kept documents no node becomes now, or in another
        collection."""
        assert self.kept is not None
        wanted, kept = self.documents, self.kept.documents
        delta = self._delta()
        candidates = kept.keys() if delta is None else (delta.nodes & kept.keys())
        return sorted(
            (kept[node_id][0], node_id)
            for node_id in candidates
            if wanted.get(node_id, ("",))[0] != kept[node_id][0]
        )

    def facts_gone(self) -> list[str]:
        """The kept facts not wanted now."""
        assert self.kept is not None
        delta = self._delta()
        candidates = self.kept.facts.keys() if delta is None else delta.fact_ids
        kept, wanted = self.kept.facts, self.facts
        return [fact_id for fact_id in candidates if fact_id in kept and fact_id not in wanted]

    def fingerprint(self, walked: str) -> str:
        """Names a load that skipped records: every key (their ``key_sums``), and the
        digest of the records it did walk (``walked``: those compared whole)."""
        documents, facts = self.derived.summed()
        digest = _Digest()
        digest.feed(
            b"keys",
            self.header.encode(),
            walked.encode(),
            documents.to_bytes(32, "big"),
            facts.to_bytes(32, "big"),
        )
        return digest.hexdigest()

    def for_position(self, position: int) -> LoadKeys:
        """The keys to keep once the wanted state is stored at ``position``."""
        return LoadKeys(self.header, self.incarnation, position, self.documents, self.facts)


_NOT_STORED = (None, False)
"""What ``_stored_documents`` says of a document it did not find: no body, no vector."""


def _collection_of(document: _Document) -> str:
    return document.ref.collection


def _analysed(document: _Document) -> list[tuple[str, list[str], list[int]]] | None:
    """The analysed text fields of a prepared document (None: the applier analyses it)."""
    held = document.prepared
    return None if held is None else held.fields


AGREEMENT_KINDS = (
    "collections",
    "graphs",
    "documents_missing",
    "documents_differ",
    "documents_extra",
    "vectors_missing",
    "facts_missing",
    "facts_differ",
    "facts_extra",
)
"""The ways a database can disagree with a graph, in report order."""


@dataclass
class GraphAgreement:
    """How a database differs from a graph: per kind, a count and the first keys."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(AGREEMENT_KINDS, 0))
    examples: dict[str, list[str]] = field(default_factory=dict)

    @property
    def agrees(self) -> bool:
        """Whether a load of the graph would change nothing."""
        return not any(self.counts.values())

    def note(self, kind: str, key: str) -> None:
        self.counts[kind] += 1
        shown = self.examples.setdefault(kind, [])
        if len(shown) < MAX_REPORTED_DAMAGE:
            shown.append(key)

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {
            "agrees": self.agrees,
            "differences": {
                kind: {"count": count, "examples": self.examples.get(kind, [])}
                for kind, count in self.counts.items()
            },
        }


def compare_semantic_graph(
    conn: sqlite3.Connection,
    graph: SemanticGraph,
    *,
    graph_name: str = DEFAULT_GRAPH,
    embedder: Embedder | None = None,
    on_repair: RepairReport | None = None,
) -> GraphAgreement:
    """How the database read through ``conn`` (inside one read transaction) differs from
    what ``load_semantic_graph(graph)`` would make it hold: the load's own diff, nothing
    written. Damaged stored records are told to ``on_repair`` and count as differing."""
    if not isinstance(graph, SemanticGraph):
        raise ValidationError("compare_semantic_graph() takes a SemanticGraph")
    if embedder is None:
        from cairn.embed import HashingEmbedder

        embedder = HashingEmbedder()
    with _gc_paused():
        wanted = _wanted(graph, graph_name, embedder.space)
        plan = _Plan(wanted, embedder, "", on_repair=on_repair or _unreported)
        return plan.disagreement(conn)


def load_semantic_graph(
    db: Database,
    graph: SemanticGraph,
    *,
    graph_name: str = DEFAULT_GRAPH,
    embedder: Embedder | None = None,
    principal: PrincipalLike = None,
    now: datetime | None = None,
    checkpoint: bool = True,
    pack: bool = True,
    progress: LoadProgress | None = None,
    on_repair: RepairReport | None = None,
    prepared: PreparedDocuments | None = None,
    incremental: bool = False,
    on_compare: Callable[[str], None] | None = None,
    key_memo: KeyMemo | None = None,
) -> CommitReceipt:
    """Make the store hold ``graph`` as documents, vectors and facts: one atomic diff.

    Returns the receipt of the one transaction that applied the differences; when
    nothing differs, nothing is written and the position stays (the stored receipt of
    an identical earlier load is returned, else an empty receipt at the current
    position). Needs admin on the family collections and the graph. With
    ``checkpoint`` (the default), a load that changed something then writes a column
    snapshot (``DerivedState.checkpoint_derived``: ``cairn.open``'s handle keeps the
    columns, ``cairn.store.open``'s derives nothing) so the next cold open is faster. With
    ``pack`` (the default), the first load into an empty database then packs the file
    (``Database.vacuum``). ``cairn index`` turns both off: measured on a code index, they
    cost more at index time than they save (see docs/benchmarks.md).
    ``progress`` is told the name of each step as it starts (``LOAD_STEPS``);
    ``on_repair`` is told each damaged stored record (failed checksum) the load found
    and rewrote from the graph. ``prepared`` holds documents made ahead
    (``prepare_documents``, in a worker while the graph was resolved); each is used only
    for a node equal to the one it was made from, so the stored state is the same.
    With ``incremental`` (``cairn index``), the load keeps its records' keys beside the
    database (``cairn.store.loadkeys``) and, when the last load's keys describe the
    database as it is, compares and re-reads only the records whose keys changed;
    unchanged rows are trusted, not re-verified (``cairn check`` and a full load do).
    ``on_compare`` is told how an incremental load compared: ``COMPARED_BY_KEYS``, or
    why it compared every record (``KEYS_MISSING`` and the like). ``key_memo`` (a
    process that loads the same database again and again, ``cairn watch``) keeps the
    keys by record object between incremental loads: the same keys, derived only for
    records that are new objects, and writes the keys file on a thread
    (``KeyMemo.settle`` waits for it).
    """
    if not isinstance(graph, SemanticGraph):
        raise ValidationError("load_semantic_graph() takes a SemanticGraph")
    if embedder is None:
        from cairn.embed import HashingEmbedder

        embedder = HashingEmbedder()
    report = progress or _quiet
    first = db.position == 0
    with _gc_paused():
        receipt = _load(
            db,
            graph,
            graph_name,
            embedder,
            principal,
            now,
            bulk=True,
            progress=report,
            on_repair=on_repair or _unreported,
            prepared=prepared,
            incremental=incremental,
            on_compare=on_compare or _quiet,
            key_memo=key_memo,
        )
        if (
            checkpoint
            and receipt.mutations
            and isinstance(db, DerivedState)
            and db.derived_behind()
        ):
            report("snapshot")
            db.checkpoint_derived()  # the next cold open maps the columns, not the rows
    if pack and first and receipt.mutations:
        report("packing")
        db.vacuum()  # the file held nothing before: pack what the bulk insert left half full
    return receipt


def _load(
    db: Database,
    graph: SemanticGraph,
    graph_name: str,
    embedder: Embedder,
    principal: PrincipalLike,
    now: datetime | None,
    *,
    bulk: bool,
    progress: LoadProgress = _quiet,
    on_repair: RepairReport = _unreported,
    prepared: PreparedDocuments | None = None,
    incremental: bool = False,
    on_compare: Callable[[str], None] = _quiet,
    key_memo: KeyMemo | None = None,
) -> CommitReceipt:
    """The load, with batched puts (``bulk``) or row by row (the tests' oracle)."""
    with _gc_paused():
        progress("encoding")
        wanted = _wanted(graph, graph_name, embedder.space)
        path = keys_path(db.path) if incremental else None
        keys = None
        if path is not None:
            kept = read_keys(path) if key_memo is None else key_memo.read(path)
            keys = _KeyState.of(wanted, str(db.incarnation), kept, key_memo)
        plan = _Plan(
            wanted,
            embedder,
            db.name,
            bulk=bulk,
            progress=progress,
            on_repair=on_repair,
            prepared=prepared,
            keys=keys,
            on_compare=on_compare,
        )
        receipt = db.apply_internal(plan, principal, now=now)
        if path is not None and keys is not None:
            # A load that wrote nothing found the wanted state stored where the database
            # stood; its receipt may be the replay of the same content's load at an
            # older position.
            at = receipt.token.position if plan.wrote else plan.base
            kept_now = keys.for_position(at)
            if key_memo is None:
                write_keys(path, kept_now)
            else:
                key_memo.write(path, kept_now)
        return receipt


def _read_only(path: str | Path) -> closing[sqlite3.Connection]:
    """A read-only connection to the database file at ``path``, closed on exit."""
    return closing(sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True))


def loaded_space(path: str | Path) -> VectorSpace | None:
    """The vector space a previous load gave the ``symbols`` collection of the database
    at ``path`` (read-only), or None: no such database, collection or readable record.
    ``cairn index`` re-indexes with the embedder the index was built with."""
    if not Path(path).is_file():
        return None
    try:
        with _read_only(path) as conn:
            config = load_collection(conn, FAMILIES["function"])
    except (sqlite3.Error, CairnError, KeyError, TypeError, ValueError):
        return None  # an older layout or a damaged record: the caller's default stands
    if config is None:
        return None
    spaces = [item.space for item in config.vector_fields if item.name == VECTOR_FIELD]
    return spaces[0] if spaces else None


def loaded_position(path: str | Path) -> tuple[str, int] | None:
    """The incarnation and position of the database file at ``path`` (read-only: what a
    reader sees now), or None when there is no readable database there. ``cairn index``
    compares them with those its last run left (``cairn.codegraph.stamp``)."""
    if not Path(path).is_file():
        return None
    try:
        with _read_only(path) as conn:
            meta = dict(
                conn.execute(
                    "SELECT key, value FROM meta WHERE key IN ('incarnation', 'position')"
                ).fetchall()
            )
        return str(meta["incarnation"]), int(meta["position"])
    except (sqlite3.Error, KeyError, TypeError, ValueError):
        return None


def repair_collector(into: list[dict[str, str]]) -> RepairReport:
    """An ``on_repair`` that appends ``{"table", "resource", "id"}`` to ``into``."""

    def collect(table: str, resource: str, key: str) -> None:
        into.append({"table": table, "resource": resource, "id": key})

    return collect


def load_summary(receipt: CommitReceipt, *, before: int | None = None) -> dict[str, Any]:
    """Plain JSON summary of a load's receipt: position, command ID, changes per kind.

    With ``before`` (the database position before the load), a load that committed
    nothing says so: ``changes`` 0 and ``up_to_date`` true, even when the receipt is the
    stored one of an identical earlier load (whose changes were made then, not now).
    """
    applied = before is None or receipt.token.position > before
    kinds: dict[str, int] = {}
    for outcome in receipt.mutations if applied else ():
        kinds[outcome.kind] = kinds.get(outcome.kind, 0) + 1
    changes = sum(kinds.values())
    return {
        "command_id": str(receipt.command_id),
        "database": receipt.token.database,
        "position": receipt.token.position if applied else before,
        "changes": changes,
        "up_to_date": changes == 0,
        "mutations": dict(sorted(kinds.items())),
    }
