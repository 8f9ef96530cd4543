"""Reading ``graph.cairn`` v2 with full verification (spec §11); no flag skips any of it.

Order of checks: header line (tombstone -> ``ArtifactMovedError``, other artifact
version -> ``ArtifactIncompatibleError``, anything else -> ``ArtifactCorruptError``),
JSON parse, every ``versions`` member (missing or unknown -> incompatible), the exact
set of payload keys, then, at the same time, record construction here and, in forked
workers, the canonical-body check and the re-derivation of every fact and occurrence
ID. The receipt and the named counts are re-derived from the rebuilt graph. Any
failure raises before a graph is returned, so nothing half-loaded escapes.
"""

from __future__ import annotations

import os
import unicodedata
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import fields
from itertools import chain, pairwise, repeat
from types import MappingProxyType
from typing import Any

import orjson

from cairn.artifact.atomic import read_bounded
from cairn.artifact.limits import (
    ARTIFACT_HEADER,
    ARTIFACT_HEADER_PREFIX,
    MAX_ARTIFACT_BYTES,
    MIN_RECORD_BYTES,
    PARALLEL_MIN_BYTES,
    PARALLEL_WORKERS,
    TOMBSTONE_PREFIX,
    VERIFY_CHUNK_OBJECTS,
)
from cairn.artifact.paths import absolute_path_fields
from cairn.artifact.result import (
    FORMAT_V2,
    REGENERATE_RECOMMENDATION,
    WARNING_LEGACY_PARALLEL_FACTS,
    LoadedArtifact,
)
from cairn.artifact.runtime import gc_paused
from cairn.artifact.schema import (
    FACT_COLUMNS,
    HYPEREDGE_KEYS,
    NODE_COLUMNS,
    OCCURRENCE_COLUMNS,
    PAYLOAD_KEYS,
    VERSION_KEYS,
    expected_versions,
)
from cairn.artifact.seal import DIGEST_KEY
from cairn.artifact.tally import receipt_from_pairs
from cairn.artifact.verify import (
    VerifyState,
    check_canonical_body,
    check_fact_ids,
    check_occurrence_ids,
    check_payload_digest,
    check_record_rules,
    release_caches,
)
from cairn.artifact.workers import SharedWork
from cairn.canonical import MAX_SAFE_INTEGER, canonical_bytes
from cairn.errors import (
    ArtifactCorruptError,
    ArtifactIncompatibleError,
    ArtifactMovedError,
    CairnError,
    LegacyArtifactError,
)
from cairn.graph.model import (
    ConfidenceObservation,
    Direction,
    Discriminator,
    EndpointIdentity,
    EvidenceOccurrence,
    FactEndpointIdentity,
    Hyperedge,
    IdentityStatus,
    Node,
    OccurrenceOwner,
    SemanticFact,
    SourceRange,
    freeze,
)
from cairn.graph.multigraph import AdmissionOutcome, SemanticGraph
from cairn.graph.registry import LEGACY_RELATION, REGISTRY, RelationRegistry

__all__ = ["decode_artifact", "read_artifact", "split_header"]

_DIRECTIONS = {direction.value: direction for direction in Direction}
_EMPTY: tuple[Any, ...] = ()
_EMPTY_MAPPING: Mapping[str, Any] = MappingProxyType({})
_CONTAINERS = (dict, list)
_CONTAINER_SET = frozenset(_CONTAINERS)


def read_artifact(
    path: str | os.PathLike[str],
    *,
    strict: bool = False,
    max_bytes: int = MAX_ARTIFACT_BYTES,
    parallel: bool = True,
) -> LoadedArtifact:
    """Read and fully verify the ``graph.cairn`` at ``path``.

    ``strict`` refuses artifacts holding legacy (v1-derived) content with
    ``LegacyArtifactError``. ``parallel`` only chooses whether forked workers share
    the verification; the checks are the same either way.
    """
    data = read_bounded(path, max_bytes, "graph artifact")
    return decode_artifact(data, strict=strict, parallel=parallel)


def split_header(data: bytes) -> memoryview:
    """The canonical JSON body of an artifact's bytes, after checking header and newline."""
    if data.startswith(ARTIFACT_HEADER):
        if not data.endswith(b"\n") or data.endswith(b"\n\n") or len(data) == len(ARTIFACT_HEADER):
            raise ArtifactCorruptError("the artifact body is truncated or has trailing data")
        return memoryview(data)[len(ARTIFACT_HEADER) : -1]
    if data.startswith(TOMBSTONE_PREFIX):
        raise ArtifactMovedError(
            "this file is a tombstone: the graph moved to graph.cairn",
            details={"tombstone": data[:200].decode("utf-8", "replace")},
        )
    if data.startswith(ARTIFACT_HEADER_PREFIX):
        declared = data[: data.find(b"\n")].decode("utf-8", "replace")
        raise ArtifactIncompatibleError(
            f"unsupported artifact header {declared!r}; this Cairn reads "
            f"{ARTIFACT_HEADER.decode().strip()!r}",
            details={"header": declared},
        )
    raise ArtifactCorruptError("the file does not start with the graph.cairn header")


def decode_artifact(data: bytes, *, strict: bool = False, parallel: bool = True) -> LoadedArtifact:
    """Verify the bytes of a ``graph.cairn`` and return the graph they hold."""
    body = split_header(data)
    fast = data.isascii() or unicodedata.is_normalized("NFC", data.decode("utf-8", "replace"))
    state = VerifyState(data, body, fast)
    # Workers fork before anything is parsed (they parse their own copy): cheap to
    # fork, and no copy-on-write faults on shared objects afterwards.
    use_workers = parallel and len(body) >= PARALLEL_MIN_BYTES
    with gc_paused(), SharedWork(state, PARALLEL_WORKERS, parallel=use_workers) as work:
        for task in _verification_tasks(len(body)):
            work.submit(*task)
        payload = _parse(body)
        versions = _check_versions(payload)
        _check_keys(payload)
        try:
            loaded = _build(payload, versions, fast=fast)
        except ArtifactCorruptError:
            raise
        except _MALFORMED as exc:
            raise ArtifactCorruptError(f"the artifact holds a malformed record: {exc}") from exc
        try:
            results = work.drain(VerifyState(data, body, fast, payload), from_end=True)
        finally:
            release_caches()
        problems = [problem for result in results for problem in result]
    if problems:
        raise ArtifactCorruptError(
            f"the artifact does not verify: {problems[0]}",
            details={"problems": problems[:10], "problem_count": len(problems)},
        )
    if strict and loaded.degraded:
        raise LegacyArtifactError(
            "strict mode refuses an artifact holding legacy v1 content; "
            + REGENERATE_RECOMMENDATION
        )
    return loaded


_MALFORMED = (
    CairnError,
    KeyError,
    TypeError,
    ValueError,
    AttributeError,
    IndexError,
    AssertionError,
)


def _verification_tasks(body_size: int) -> list[tuple[Any, ...]]:
    """Tasks that re-derive IDs in ranges, plus the canonical-body and record-rule checks.

    The record counts are not known before parsing, so ranges are planned from an upper
    bound; tasks past the end of a column find nothing to check.
    """
    estimate = max(1, body_size // MIN_RECORD_BYTES)
    tasks: list[tuple[Any, ...]] = [
        (check_record_rules,),
        (check_canonical_body,),
        (check_payload_digest,),
    ]
    for start in range(0, estimate, VERIFY_CHUNK_OBJECTS):
        tasks.append((check_fact_ids, start, start + VERIFY_CHUNK_OBJECTS))
        tasks.append((check_occurrence_ids, start, start + VERIFY_CHUNK_OBJECTS))
    return tasks


def _parse(body: bytes | memoryview) -> dict[str, Any]:
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise ArtifactCorruptError(f"the artifact body is not valid JSON: {exc}") from exc
    if type(payload) is not dict:
        raise ArtifactCorruptError("the artifact payload is not a JSON object")
    return payload


def _check_versions(payload: dict[str, Any]) -> dict[str, Any]:
    versions = payload.get("versions")
    if type(versions) is not dict:
        raise ArtifactIncompatibleError("the artifact declares no versions object")
    expected = expected_versions()
    missing = [key for key in VERSION_KEYS if key not in versions]
    if missing:
        raise ArtifactIncompatibleError(
            f"the artifact lacks version fields {missing}", details={"missing": missing}
        )
    unknown = sorted(set(versions) - set(VERSION_KEYS))
    if unknown:
        raise ArtifactIncompatibleError(
            f"the artifact declares unknown version fields {unknown}", details={"unknown": unknown}
        )
    for key in VERSION_KEYS:
        given = versions[key]
        if type(given) is not type(expected[key]) or given != expected[key]:
            raise ArtifactIncompatibleError(
                f"artifact {key} version {given!r} is not supported (expected {expected[key]!r})",
                details={"field": key, "found": given, "expected": expected[key]},
            )
    return versions


def _check_keys(payload: dict[str, Any]) -> None:
    missing = sorted(PAYLOAD_KEYS - set(payload))
    extra = sorted(set(payload) - PAYLOAD_KEYS)
    if missing or extra:
        raise ArtifactCorruptError(
            f"the payload's top-level keys are wrong (missing {missing}, unexpected {extra})",
            details={"missing": missing, "unexpected": extra},
        )


# -------------------------------------------------------------- validation
def _corrupt(message: str) -> ArtifactCorruptError:
    return ArtifactCorruptError(message)


def _columns(payload: dict[str, Any], name: str, names: Sequence[str]) -> list[list[Any]]:
    """The named columns of a section, checked to be equally long arrays."""
    section = payload[name]
    if type(section) is not dict or set(section) != set(names):
        raise _corrupt(f"{name} must be an object with exactly the columns {sorted(names)}")
    columns = [section[column] for column in names]
    if any(type(column) is not list for column in columns):
        raise _corrupt(f"every column of {name} must be an array")
    if len({len(column) for column in columns}) > 1:
        raise _corrupt(f"the columns of {name} differ in length")
    return columns


def _strictly_sorted_strings(values: list[Any], what: str) -> None:
    if set(map(type, values)) - {str}:
        raise _corrupt(f"every {what} must be a string")
    if values != sorted(values) or len(set(values)) != len(values):
        raise _corrupt(f"{what}s must be unique and in ascending order")


def _indexes(values: list[Any], size: int, what: str) -> None:
    if not values:
        return
    if set(map(type, values)) - {int} or min(values) < 0 or max(values) >= size:
        raise _corrupt(f"{what} must be row numbers of its table (0..{size - 1})")


def _check_table_order(entries: list[Any], what: str) -> None:
    encoded = [canonical_bytes(entry) for entry in entries]
    if any(a >= b for a, b in pairwise(encoded)):
        raise _corrupt(f"the {what} table is not sorted by canonical bytes without duplicates")


def _check_table_use(size: int, used: set[int], what: str) -> None:
    if len(used) != size:
        raise _corrupt(f"the {what} table holds rows no record uses")


def _checked_object(value: Any, where: Callable[[], str]) -> dict[str, Any]:
    """A free-form JSON object, refused when it holds an absolute path under a file key."""
    if type(value) is not dict:
        raise _corrupt(f"{where()} must be a JSON object")
    if value:
        found = absolute_path_fields(value, where())
        if found:
            raise _corrupt(f"the artifact holds an absolute path at {found[0]}")
    return value


def _free_object(value: Any, where: Callable[[], str]) -> Any:
    return freeze(_checked_object(value, where))


def _free_items(
    value: Any,
    what: str,
    *,
    objects: bool = True,
    freeze_item: Callable[[Any], Any] = freeze,
) -> tuple[Any, ...]:
    """A set-like array of free-form values, frozen (absolute paths: ``check_record_rules``)."""
    if type(value) is not list or (objects and set(map(type, value)) - {dict}):
        raise _corrupt(f"{what} must be an array{' of objects' if objects else ''}")
    return tuple(map(freeze_item, value))


def _strings(value: Any, what: str) -> tuple[str, ...]:
    if type(value) is not list or set(map(type, value)) - {str}:
        raise _corrupt(f"{what} must be an array of strings")
    return tuple(value)


# ------------------------------------------------------------------ build
_SETTERS: dict[type, tuple[Callable[[Any, Any], None], ...]] = {}


def _assemble(cls: type[Any], columns: Sequence[Iterable[Any]], count: int) -> list[Any]:
    """``list(map(cls, *columns))`` for a slotted dataclass, without running ``__init__``.

    Only for records whose ``__init__`` validates nothing (no ``__post_init__``), or
    whose checks the caller has already made in bulk: each field is filled by one
    C-level pass of its slot descriptor over its column, instead of one frozen
    ``__init__`` call (a Python frame and ``object.__setattr__`` per field) per record.
    """
    setters = _SETTERS.get(cls)
    if setters is None:
        setters = tuple(getattr(cls, item.name).__set__ for item in fields(cls))
        _SETTERS[cls] = setters
    if len(columns) != len(setters):  # pragma: no cover - a programming error
        raise TypeError(f"{cls.__name__} takes {len(setters)} columns, got {len(columns)}")
    records = list(map(object.__new__, repeat(cls, count)))
    for setter, column in zip(setters, columns, strict=True):
        cells = column if type(column) is list else list(column)
        if len(cells) != count:
            raise _corrupt(f"a {cls.__name__} column has {len(cells)} cells, not {count}")
        deque(map(setter, records, cells), maxlen=0)
    return records


def _freeze_canonical(value: Any) -> Any:
    """``freeze(value)`` for a value of a body proven canonical and NFC (fast mode).

    Keys are then already sorted and every string normalised, so objects without
    nested containers are wrapped as they are (the parsed dict is owned by nobody else
    once the load returns) and only nested arrays and objects are copied.
    """
    kind = type(value)
    if kind is dict:
        if any(type(item) in _CONTAINERS for item in value.values()):
            return MappingProxyType({key: _freeze_canonical(item) for key, item in value.items()})
        return MappingProxyType(value)
    if kind is list:
        return tuple(map(_freeze_canonical, value))
    return value


def _freeze_objects(cells: list[dict[str, Any]]) -> list[Any]:
    """``[_freeze_canonical(cell) if cell else _EMPTY_MAPPING for cell in cells]``.

    When no cell is empty and no value is an array or object, every cell is wrapped as
    it is, which is what ``_freeze_canonical`` does to each: one C-level pass.
    """
    if all(cells) and _CONTAINER_SET.isdisjoint(
        map(type, chain.from_iterable(map(dict.values, cells)))
    ):
        return list(map(MappingProxyType, cells))
    return [_freeze_canonical(item) if item else _EMPTY_MAPPING for item in cells]


class _Builder:
    """Turns validated payload columns into graph records (the main-process half)."""

    def __init__(
        self, payload: dict[str, Any], registry: RelationRegistry, *, fast: bool = False
    ) -> None:
        self.payload = payload
        self.registry = registry
        # Fast: the body is NFC text whose canonical form the worker proves (see
        # ``verify``), so strings need no normalising and object keys no sorting.
        self.fast = fast
        self._freeze: Callable[[Any], Any] = _freeze_canonical if fast else freeze
        self.identities = self._identity_table()
        self.discriminators = self._discriminator_table()
        self.owners = self._owner_table()
        self._observations: dict[tuple[Any, ...], ConfidenceObservation] = {}
        self._known_ranges: dict[tuple[Any, ...], SourceRange] = {}

    # ---------------------------------------------------------- tables
    def _table(self, name: str) -> list[Any]:
        entries = self.payload[name]
        if type(entries) is not list or set(map(type, entries)) - {dict}:
            raise _corrupt(f"{name} must be an array of objects")
        _check_table_order(entries, name)
        return entries

    def _identity_table(self) -> list[EndpointIdentity]:
        entries = self._table("endpoint_identities")
        for entry in entries:
            if set(entry) != {"status", "reasons"} or type(entry["reasons"]) is not list:
                raise _corrupt(f"malformed endpoint identity {entry!r}")
        identities = [EndpointIdentity.from_json(entry) for entry in entries]
        for entry, identity in zip(entries, identities, strict=True):
            if entry != identity.to_json():
                raise _corrupt(f"endpoint identity {entry!r} is not in normal form")
        return identities

    def _discriminator_table(self) -> list[Discriminator]:
        entries = self._table("discriminators")
        table: list[Discriminator] = []
        keys = {"registry", "policy_version", "completeness", "value", "reasons"}
        for entry in entries:
            if set(entry) != keys or type(entry["value"]) is not dict:
                raise _corrupt(f"malformed discriminator {entry!r}")
            if type(entry["registry"]) is not str or type(entry["completeness"]) is not str:
                raise _corrupt(f"malformed discriminator {entry!r}")
            if type(entry["policy_version"]) is not int:
                raise _corrupt(f"malformed discriminator {entry!r}")
            disc = Discriminator(
                entry["registry"],
                entry["policy_version"],
                entry["completeness"],
                entry["value"],
                _strings(entry["reasons"], "discriminator reasons"),
            )
            if disc.to_json() != entry:
                raise _corrupt(f"discriminator {entry!r} is not in normal form")
            table.append(disc)
        return table

    def _owner_table(self) -> list[OccurrenceOwner]:
        entries = self._table("occurrence_owners")
        owners: list[OccurrenceOwner] = []
        for entry in entries:
            if set(entry) != {"adapter_id", "strategy", "adapter_version"}:
                raise _corrupt(f"malformed occurrence owner {entry!r}")
            version = entry["adapter_version"]
            if version is not None and type(version) is not str:
                raise _corrupt(f"malformed occurrence owner {entry!r}")
            owners.append(OccurrenceOwner(entry["adapter_id"], entry["strategy"], version))
        return owners

    # --------------------------------------------------------- records
    def nodes(self) -> list[Node]:
        ids, kinds, identity_rows, attributes = _columns(self.payload, "nodes", NODE_COLUMNS)
        _indexes(identity_rows, len(self.identities), "node identity")
        if set(map(type, attributes)) - {dict}:
            raise _corrupt("node attributes must be objects")
        self.used_identities = set(identity_rows)
        identities = self.identities
        node_identities = map(identities.__getitem__, identity_rows)
        if not self.fast:
            return list(map(Node, ids, kinds, node_identities, attributes))
        # Node.__post_init__'s checks, in bulk; NFC and key order are proven by the worker.
        if set(map(type, ids)) - {str} or not all(map(str.strip, ids)):
            raise _corrupt("every node ID must be a non-blank string")
        for kind in set(kinds):
            if type(kind) is not str or not kind.strip():
                raise _corrupt(f"node kind {kind!r} is not a non-blank string")
        return _assemble(Node, [ids, kinds, node_identities, _freeze_objects(attributes)], len(ids))

    def _fact_kind(self, relation: Any, row: int, direction: Any) -> Direction:
        """Check one (relation, discriminator, direction) against the registry."""
        spec = self.registry.get(relation) if type(relation) is str else None
        if spec is None:
            raise _corrupt(f"relation {relation!r} is not registered in {self.registry.identifier}")
        disc = self.discriminators[row]
        if spec.discriminator(disc.value) != disc:
            raise _corrupt(f"a {relation!r} discriminator does not follow the registry")
        if _DIRECTIONS.get(direction) is not spec.direction:
            raise _corrupt(f"relation {relation!r} facts must be {spec.direction.value}")
        return spec.direction

    def facts(self) -> list[SemanticFact]:
        columns = _columns(self.payload, "facts", FACT_COLUMNS)
        ids, directions, sources, targets, relations, disc_rows = columns[:6]
        source_rows, target_rows, occurrence_ids, annotations = columns[6:]
        _indexes(disc_rows, len(self.discriminators), "fact discriminator")
        _indexes(source_rows, len(self.identities), "fact source identity")
        _indexes(target_rows, len(self.identities), "fact target identity")
        _check_table_use(len(self.discriminators), set(disc_rows), "discriminators")
        self.used_identities.update(source_rows, target_rows)
        _check_table_use(len(self.identities), self.used_identities, "endpoint_identities")
        if set(map(type, occurrence_ids)) - {list}:
            raise _corrupt("occurrence_ids must be arrays")
        # Distinct values are checked once; the per-fact work is C-level map() calls.
        kinds_of = list(zip(relations, disc_rows, directions, strict=True))
        kind = {key: self._fact_kind(*key) for key in set(kinds_of)}
        pair_keys = list(zip(source_rows, target_rows, strict=True))
        self.pair_counts = Counter(pair_keys)
        identities = self.identities
        pair = {
            key: FactEndpointIdentity(identities[key[0]], identities[key[1]])
            for key in self.pair_counts
        }
        self.relations = {key[0] for key in kind}
        freeze_item = self._freeze
        fields_in_order: list[Iterable[Any]] = [
            ids,
            map(kind.__getitem__, kinds_of),
            sources,
            targets,
            relations,
            map(self.discriminators.__getitem__, disc_rows),
            map(pair.__getitem__, pair_keys),
            map(tuple, occurrence_ids),
            [
                _free_items(item, "annotation_variants", freeze_item=freeze_item)
                if item
                else _EMPTY
                for item in annotations
            ],
        ]
        # SemanticFact.__init__ validates nothing: assembling skips no check.
        return _assemble(SemanticFact, fields_in_order, len(ids))

    def _ranges(self, column: list[Any]) -> list[Any]:
        """Ranges from ``[l1, c1, l2, c2]`` cells (or null), validated by the worker.

        ``check_record_rules`` proves every range well formed before the load returns,
        so each distinct range is assembled once without repeating
        ``SourceRange.__post_init__``, and equal ranges share one (immutable) record.
        """
        nones = column.count(None)
        if nones == len(column):
            return column
        present = column if not nones else [cell for cell in column if cell is not None]
        if set(map(type, present)) - {list} or set(map(len, present)) - {4}:
            raise _corrupt("a source range must be an array of four numbers or null")
        keys = list(map(tuple, present))
        known = self._known_ranges
        for key in set(keys) - known.keys():
            known[key] = _assemble(SourceRange, [[item] for item in key], 1)[0]
        built = list(map(known.__getitem__, keys))
        if not nones:
            return built
        records = iter(built)
        return [None if cell is None else next(records) for cell in column]

    def _confidence(self, value: Any) -> tuple[ConfidenceObservation, ...]:
        if type(value) is not list:
            raise _corrupt("confidence_observations must be an array")
        observations: list[ConfidenceObservation] = []
        for item in value:
            if type(item) is not dict or set(item) != {"value", "method", "observer"}:
                raise _corrupt(f"malformed confidence observation {item!r}")
            observer = item["observer"]
            if observer is not None and type(observer) is not str:
                raise _corrupt(f"malformed confidence observation {item!r}")
            key = (type(item["value"]), item["value"], item["method"], observer)
            known = self._observations.get(key)
            if known is None:
                known = ConfidenceObservation(item["value"], item["method"], observer)
                self._observations[key] = known
            observations.append(known)
        return tuple(observations)

    def occurrences(self) -> list[EvidenceOccurrence]:
        columns = _columns(self.payload, "occurrences", OCCURRENCE_COLUMNS)
        ids, fact_ids, owner_rows, source_files, source_ranges = columns[:5]
        target_files, target_ranges, site_kinds, evidence_keys = columns[5:9]
        provenance, confidence, metadata, diagnostics = columns[9:]
        _indexes(owner_rows, len(self.owners), "occurrence owner")
        _check_table_use(len(self.owners), set(owner_rows), "occurrence_owners")
        for column, what in ((site_kinds, "site_kind"), (evidence_keys, "adapter_evidence_key")):
            if set(map(type, column)) - {str, type(None)}:
                raise _corrupt(f"every {what} must be a string or null")
        if set(map(type, diagnostics)) - {list}:
            raise _corrupt("diagnostics must be arrays")
        freeze_item = self._freeze
        fields_in_order: list[Iterable[Any]] = [
            ids,
            fact_ids,
            map(self.owners.__getitem__, owner_rows),
            source_files,
            self._ranges(source_ranges),
            target_files,
            self._ranges(target_ranges),
            site_kinds,
            evidence_keys,
            [
                _free_items(item, "provenance", objects=False, freeze_item=freeze_item)
                if item
                else _EMPTY
                for item in provenance
            ],
            [self._confidence(item) if item else _EMPTY for item in confidence],
            [
                _free_items(item, "metadata_variants", freeze_item=freeze_item) if item else _EMPTY
                for item in metadata
            ],
            map(tuple, diagnostics),
        ]
        # EvidenceOccurrence.__init__ validates nothing: assembling skips no check.
        return _assemble(EvidenceOccurrence, fields_in_order, len(ids))

    def hyperedges(self) -> list[Hyperedge]:
        items = self.payload["hyperedges"]
        if type(items) is not list:
            raise _corrupt("hyperedges must be an array")
        hyperedges: list[Hyperedge] = []
        for item in items:
            if type(item) is not dict or set(item) != set(HYPEREDGE_KEYS):
                raise _corrupt(f"malformed hyperedge {item!r}")
            members = _strings(item["members"], "hyperedge members")
            attributes = _free_object(item["attributes"], lambda: "hyperedges.attributes")
            hyperedges.append(Hyperedge(item["id"], item["relation"], members, attributes))
        ids = [hyperedge.id for hyperedge in hyperedges]
        _strictly_sorted_strings(ids, "hyperedge ID")
        for hyperedge, item in zip(hyperedges, items, strict=True):
            if list(hyperedge.members) != item["members"]:
                raise _corrupt(f"hyperedge {hyperedge.id!r} members must be sorted and unique")
        return hyperedges


def _counters(value: Any, what: str, keys: Sequence[str] | None) -> dict[str, int]:
    if type(value) is not dict:
        raise _corrupt(f"{what} must be an object")
    for key, count in value.items():
        if type(count) is not int or not 0 <= count <= MAX_SAFE_INTEGER:
            raise _corrupt(f"{what}[{key!r}] must be a non-negative integer")
    if keys is not None and set(value) != set(keys):
        raise _corrupt(f"{what} must name exactly {sorted(keys)}")
    if list(value) != sorted(value):
        raise _corrupt(f"{what} keys must be sorted")
    return value


def _metadata(payload: dict[str, Any]) -> None:
    revision = payload["repository_revision"]
    if revision is not None and (type(revision) is not str or not revision.strip()):
        raise _corrupt("repository_revision must be a non-blank string or null")
    for key in ("generation_mode", "generated_at"):
        if type(payload[key]) is not str or not payload[key].strip():
            raise _corrupt(f"{key} must be a non-blank string")
    if type(payload["directed"]) is not bool:
        raise _corrupt("directed must be a boolean")
    if type(payload[DIGEST_KEY]) is not str:
        raise _corrupt(f"{DIGEST_KEY} must be a string")
    labels = payload["community_labels"]
    if type(labels) is not dict or set(map(type, labels.values())) - {str}:
        raise _corrupt("community_labels must map community IDs to strings")


def _build(payload: dict[str, Any], versions: dict[str, Any], *, fast: bool) -> LoadedArtifact:
    _metadata(payload)
    provenance = _free_object(payload["provenance"], lambda: "provenance")
    admission = payload["admission"]
    if type(admission) is not dict or set(admission) != {
        "admission_counts",
        "unregistered_relation_admissions",
    }:
        raise _corrupt("admission must hold admission_counts and unregistered_relation_admissions")
    admissions = _counters(
        admission["admission_counts"],
        "admission_counts",
        [outcome.value for outcome in AdmissionOutcome],
    )
    unregistered = _counters(
        admission["unregistered_relation_admissions"], "unregistered_relation_admissions", None
    )
    builder = _Builder(payload, REGISTRY, fast=fast)
    nodes = builder.nodes()
    facts = builder.facts()
    occurrences = builder.occurrences()
    graph = SemanticGraph.from_records(
        nodes=nodes,
        facts=facts,
        occurrences=occurrences,
        hyperedges=builder.hyperedges(),
        community_labels=payload["community_labels"],
        admission_counts=admissions,
        unregistered_relation_admissions=unregistered,
        registry=REGISTRY,
    )
    if graph.counts().to_json() != payload["counts"]:
        raise _corrupt("the stored counts disagree with the records")
    receipt = receipt_from_pairs(builder.pair_counts, builder.identities, unregistered)
    stored = payload["integrity_receipt"]
    if type(stored) is not dict or stored.get("status") == "valid":
        raise _corrupt("a storage-only receipt must be an object that never claims 'valid'")
    if stored != receipt:
        raise _corrupt("the integrity receipt disagrees with the re-derived receipt")
    degraded = LEGACY_RELATION in builder.relations or any(
        identity.status is IdentityStatus.LEGACY for identity in builder.identities
    )
    return LoadedArtifact(
        graph=graph,
        source_format=FORMAT_V2,
        versions=freeze(versions),
        repository_revision=payload["repository_revision"],
        generation_mode=payload["generation_mode"],
        generated_at=payload["generated_at"],
        directed=payload["directed"],
        provenance=provenance,
        integrity_receipt=freeze(stored),
        degraded=degraded,
        warnings=(WARNING_LEGACY_PARALLEL_FACTS,) if degraded else (),
        recommendation=REGENERATE_RECOMMENDATION if degraded else None,
        payload_sha256=payload[DIGEST_KEY],
    )
