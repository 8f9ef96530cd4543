"""Writing ``graph.cairn`` v2 (spec §11): header line, canonical payload, trailing newline.

The payload (layout in ``cairn.artifact.schema``) is built straight from the graph's
records, column by column. Free-form JSON (attributes, annotations, provenance,
metadata, table entries) is canonicalised once per value and embedded as an
``orjson.Fragment``; schema fields are plain strings, enums and small integers. One
``orjson.dumps`` with sorted keys prints the body, and one NFC check over the whole text
(window by window, cut where no normalisation can reach across) proves every schema
string is normalised (JSON escapes only replace non-combining
starters, so a normalised text implies normalised strings; the converse can fail, which
only costs the slow path). When the check fails the body is printed by
``cairn.canonical.canonical_bytes`` instead. Either way the bytes equal the reference
canonical form of ``artifact_payload``; a property test proves it.
"""

from __future__ import annotations

import os
import re
import time
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import chain, repeat
from operator import attrgetter, methodcaller
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import orjson

from cairn.artifact.atomic import atomic_write_pieces
from cairn.artifact.limits import (
    ARTIFACT_HEADER,
    GENERATION_MODE_FULL,
    NFC_WINDOW_BYTES,
    PARALLEL_MIN_WRITE_OBJECTS,
    PARALLEL_WORKERS,
    WRITE_CHUNKS,
)
from cairn.artifact.paths import PATH_FIELD_NAMES, absolute_path_fields, is_absolute_path
from cairn.artifact.runtime import gc_paused
from cairn.artifact.schema import OCCURRENCE_COLUMNS, expected_versions
from cairn.artifact.seal import (
    DIGEST_KEY,
    DIGEST_PLACEHOLDER,
    Piece,
    digest_tail,
    expanded,
    sealed_pieces,
    sealing,
)
from cairn.artifact.tally import receipt_from_pairs
from cairn.artifact.workers import SharedWork, Spool
from cairn.canonical import MAX_SAFE_INTEGER, canonical_bytes, format_number
from cairn.errors import CanonicalizationError, ValidationError
from cairn.graph.model import (
    ConfidenceObservation,
    Discriminator,
    EndpointIdentity,
    EvidenceOccurrence,
    Hyperedge,
    OccurrenceOwner,
    SourceRange,
    thaw,
)
from cairn.graph.multigraph import SemanticGraph

if TYPE_CHECKING:
    from cairn.artifact.segments import PrintedSegments

__all__ = [
    "DEFAULT_PROVENANCE",
    "artifact_payload",
    "encode_artifact",
    "resolve_generated_at",
    "write_artifact",
]

DEFAULT_PROVENANCE: Mapping[str, Any] = {"producer": "cairn"}
"""Artifact-level provenance written when the caller supplies none."""

_TIMESTAMP_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
# Non-integral floats inside this band print identically in orjson and the reference
# (the band ``cairn.canonical`` proves for its fast path); others become fragments.
_PLAIN_FLOAT_MIN = 1e-4
_PLAIN_FLOAT_MAX = 1e16

_SOURCE = attrgetter("source")
_TARGET = attrgetter("target")


def resolve_generated_at(
    value: str | datetime | None, *, environ: Mapping[str, str] | None = None
) -> str:
    """The ``generated_at`` string: as given, from a datetime, ``SOURCE_DATE_EPOCH``, or now.

    Deterministic callers inject a fixed value; ``SOURCE_DATE_EPOCH`` (reproducible
    builds) is honoured when nothing is injected, read from ``environ`` (this process's
    environment by default; a ``cairn watch`` indexing for a ``cairn index`` reads the
    caller's).
    """
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValidationError("generated_at must be timezone-aware")
        return value.astimezone(UTC).strftime(_TIMESTAMP_FORMAT)
    if value is not None:
        if not isinstance(value, str) or not value.strip():
            raise ValidationError(f"generated_at must be a non-blank string, got {value!r}")
        return value
    epoch = (os.environ if environ is None else environ).get("SOURCE_DATE_EPOCH", "").strip()
    if epoch.isdigit():
        return datetime.fromtimestamp(int(epoch), UTC).strftime(_TIMESTAMP_FORMAT)
    return time.strftime(_TIMESTAMP_FORMAT, time.gmtime())


def encode_artifact(
    graph: SemanticGraph,
    *,
    repository_revision: str | None = None,
    generation_mode: str = GENERATION_MODE_FULL,
    generated_at: str | datetime | None = None,
    directed: bool = True,
    provenance: Mapping[str, Any] | None = None,
    parallel: bool = True,
) -> bytes:
    """The complete bytes of ``graph.cairn`` for ``graph`` (deterministic for fixed inputs).

    ``parallel`` lets a forked worker print most occurrences; the bytes are the same.
    """
    meta = _metadata(repository_revision, generation_mode, generated_at, directed, provenance)
    pieces, tail = _body_pieces(graph, meta, parallel=parallel)
    return b"".join([ARTIFACT_HEADER, *sealed_pieces(list(expanded(pieces)), tail), b"\n"])


def _body_pieces(
    graph: SemanticGraph,
    meta: dict[str, Any],
    *,
    parallel: bool,
    printed: PrintedSegments | None = None,
) -> tuple[list[Piece], bytes]:
    """The artifact's body as buffers to concatenate, not sealed yet, and its digest
    tail (the body joined from ``printed``'s segments when given: the same bytes); the
    artifact is the header, the sealed body and a newline."""
    with gc_paused():
        pieces: list[Piece]
        if printed is not None:
            pieces, ascii_only, tail = printed.body(graph, meta)
        else:
            fast, ascii_only, tail = _fast_body(graph, meta, parallel=parallel)
            pieces = list(fast)
        if not ascii_only and not _normalized(expanded(pieces)):
            plain = _payload(graph, meta, fast=False)
            pieces, tail = [canonical_bytes(plain)], digest_tail(plain)
        return pieces, tail


_ASCII_BYTE = re.compile(rb"[\x00-\x7f]")


def _normalized(pieces: Iterable[bytes | memoryview]) -> bool:
    """Whether the UTF-8 text of ``pieces`` joined is NFC, checked window by window.

    Windows of about ``NFC_WINDOW_BYTES`` end just before an ASCII byte: an ASCII
    character has combining class 0 and is never the second half of a composition, so
    no normalisation reaches across such a cut, and each window is whole UTF-8. The
    body is never joined or decoded whole (a 121 MB sdist body decoded to ~400 MB).
    Pieces themselves start with a JSON delimiter (ASCII), so they are cut points too.
    """
    for piece in pieces:
        view = memoryview(piece)
        start = 0
        while start < len(view):
            end = _window_end(view, start)
            window = bytes(view[start:end])
            if not window.isascii() and not unicodedata.is_normalized(
                "NFC", window.decode("utf-8")
            ):
                return False
            start = end
    return True


def _window_end(view: memoryview, start: int) -> int:
    """The end of the window from ``start``: the first ASCII byte past the window size."""
    end = start + NFC_WINDOW_BYTES
    while end < len(view):
        found = _ASCII_BYTE.search(view[end : end + NFC_WINDOW_BYTES])
        if found is not None:
            return end + found.start()
        end += NFC_WINDOW_BYTES  # a long run of non-ASCII text: widen the window
    return len(view)


def _sorted_dumps(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


_SECTION_MARK = orjson.Fragment(b"\x00")
"""Stands in for the occurrence section while the rest prints: orjson escapes every NUL
inside strings, so the body's only raw NUL is this one."""


def _fast_body(
    graph: SemanticGraph, meta: dict[str, Any], *, parallel: bool
) -> tuple[list[bytes | memoryview], bool, bytes]:
    """The body as pieces printed by orjson, whether all are ASCII, and the digest tail.

    The occurrence section is printed in row chunks: a forked worker takes them from
    the front while this process prints everything else, then this process takes the
    chunks nobody has started from the back (``SharedWork.drain(from_end=True)``), so
    both finish together. The chunks are joined column by column into the same bytes
    one ``orjson.dumps`` of the whole section prints, and the section is spliced into
    the rest without copying (chunks are mapped from the workers' spools).
    """
    occurrences = graph.occurrences()
    large = len(occurrences) >= PARALLEL_MIN_WRITE_OBJECTS
    use_worker = parallel and large
    # A large section is printed in chunks even without a worker: one chunk's columns
    # are alive at a time, not the whole section's (sdist: -~300 MiB at the peak).
    bounds = _chunk_bounds(len(occurrences), WRITE_CHUNKS if large else 1)
    spools = [Spool() for _ in bounds]
    try:
        with SharedWork(occurrences, PARALLEL_WORKERS, parallel=use_worker) as work:
            for (begin, end), spool in zip(bounds, spools, strict=True):
                work.submit(_spooled_occurrence_chunk, begin, end, spool)
            payload = _payload(graph, meta, fast=True, with_occurrences=False)
            chunks = work.drain(from_end=True)
        printed = [
            spool.view(sum(chunk.sizes)) for spool, chunk in zip(spools, chunks, strict=True)
        ]
    finally:
        for spool in spools:
            spool.close()
    owners, section = _joined_occurrence_chunks(chunks, printed)
    payload["occurrence_owners"] = [orjson.Fragment(entry) for entry in owners]
    payload["occurrences"] = _SECTION_MARK
    rest = _sorted_dumps(payload)
    mark = rest.index(b"\x00")
    view = memoryview(rest)
    pieces = [view[:mark], *section, view[mark + 1 :]]
    ascii_only = rest.isascii() and all(chunk.ascii for chunk in chunks)
    return pieces, ascii_only, digest_tail(payload, _sorted_dumps)


def _chunk_bounds(count: int, chunks: int) -> list[tuple[int, int]]:
    """``chunks`` contiguous ``[begin, end)`` ranges covering ``count`` rows (at least one)."""
    step = max(1, -(-count // max(1, chunks)))
    found = [(begin, min(count, begin + step)) for begin in range(0, count, step)]
    return found or [(0, 0)]


@dataclass(frozen=True, slots=True)
class ChunkResult:
    """A printed occurrence chunk: its owner table, each row's owner in it, the printed
    sizes of the other columns (``_OCCURRENCE_KEYS`` order), and whether all is ASCII."""

    owners: list[bytes]
    owner_rows: list[int]
    sizes: list[int]
    ascii: bool


def _occurrence_chunk(
    occurrences: Sequence[EvidenceOccurrence], begin: int, end: int
) -> tuple[list[bytes], list[int], list[bytes]]:
    """Rows ``[begin, end)``: a local owner table, rows into it, and every other
    column printed as a JSON array (in ``_OCCURRENCE_KEYS`` order)."""
    part = occurrences[begin:end]
    owners, owner_rows = _table(list(map(_OWNER, part)), _OWNER_KEY, OccurrenceOwner.to_json)
    columns = _Writer(fast=True).occurrence_columns(part, owner_rows)
    return owners, owner_rows, [_sorted_dumps(columns[key]) for key in _OCCURRENCE_KEYS]


def _spooled_occurrence_chunk(
    occurrences: Sequence[EvidenceOccurrence], begin: int, end: int, spool: Spool
) -> ChunkResult:
    """``_occurrence_chunk`` with the printed columns left in ``spool``."""
    owners, owner_rows, printed = _occurrence_chunk(occurrences, begin, end)
    spool.write(*printed)
    ascii_only = all(item.isascii() for item in printed)
    return ChunkResult(owners, owner_rows, [len(item) for item in printed], ascii_only)


def _joined_occurrence_chunks(
    chunks: Sequence[ChunkResult], printed: Sequence[bytes | memoryview]
) -> tuple[list[bytes], list[bytes | memoryview]]:
    """The owner table and the occurrence section (as pieces) from printed chunks.

    Each column's array is the chunks' arrays without their brackets, joined by commas:
    what one ``orjson.dumps`` of the whole column prints.
    """
    owners = sorted({entry for chunk in chunks for entry in chunk.owners})
    row_of = {entry: row for row, entry in enumerate(owners)}
    owner_column: list[int] = []
    for chunk in chunks:
        local = [row_of[entry] for entry in chunk.owners]
        owner_column.extend(map(local.__getitem__, chunk.owner_rows))
    members: dict[str, list[bytes | memoryview]] = {"owner": [_sorted_dumps(owner_column)]}
    offsets = [0] * len(chunks)
    for index, key in enumerate(_OCCURRENCE_KEYS):
        inner: list[bytes | memoryview] = []
        for number, (chunk, data) in enumerate(zip(chunks, printed, strict=True)):
            start, size = offsets[number], chunk.sizes[index]
            offsets[number] += size
            if size > 2:  # not "[]"
                inner.extend((b",", data[start + 1 : start + size - 1]))
        members[key] = [b"[", *inner[1:], b"]"]
    pieces: list[bytes | memoryview] = [b"{"]
    for key in sorted(members):
        pieces.extend((b'"%s":' % key.encode(), *members[key], b","))
    pieces[-1] = b"}"
    return owners, pieces


def write_artifact(
    path: str | os.PathLike[str],
    graph: SemanticGraph,
    *,
    repository_revision: str | None = None,
    generation_mode: str = GENERATION_MODE_FULL,
    generated_at: str | datetime | None = None,
    directed: bool = True,
    provenance: Mapping[str, Any] | None = None,
    parallel: bool = False,
    printed: PrintedSegments | None = None,
) -> int:
    """Write ``graph`` to ``path`` atomically (temp file, fsync, rename); returns the size.

    One process by default: a forked helper starts with a copy of this process's page
    tables, so the process tree's resident size doubles while it runs (whole Django
    sdist: 1.43 GiB against 1.23), for a gain within the noise of the same run.
    ``printed`` (``cairn.artifact.segments``) reuses the segments an earlier write of a
    graph with mostly the same records printed; the bytes are the same.
    """
    meta = _metadata(repository_revision, generation_mode, generated_at, directed, provenance)
    pieces, tail = _body_pieces(graph, meta, parallel=parallel, printed=printed)
    body = sealing(pieces, tail)  # the digest is hashed while the body is written
    atomic_write_pieces(path, chain((ARTIFACT_HEADER,), body, (b"\n",)))
    return len(ARTIFACT_HEADER) + sum(len(piece) for piece in pieces) + 1


def artifact_payload(
    graph: SemanticGraph,
    *,
    repository_revision: str | None = None,
    generation_mode: str = GENERATION_MODE_FULL,
    generated_at: str | datetime | None = None,
    directed: bool = True,
    provenance: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The payload as plain JSON (lists, dicts, str): what the artifact body serialises.

    ``payload_sha256`` holds the placeholder; the written body carries the digest.
    """
    meta = _metadata(repository_revision, generation_mode, generated_at, directed, provenance)
    with gc_paused():
        return _payload(graph, meta, fast=False)


def _metadata(
    repository_revision: str | None,
    generation_mode: str,
    generated_at: str | datetime | None,
    directed: bool,
    provenance: Mapping[str, Any] | None,
) -> dict[str, Any]:
    if repository_revision is not None and (
        not isinstance(repository_revision, str) or not repository_revision.strip()
    ):
        raise ValidationError("repository_revision must be a non-blank string or None")
    if not isinstance(generation_mode, str) or not generation_mode.strip():
        raise ValidationError("generation_mode must be a non-blank string")
    if type(directed) is not bool:
        raise ValidationError("directed must be a boolean")
    chosen = DEFAULT_PROVENANCE if provenance is None else provenance
    if not isinstance(chosen, Mapping):
        raise ValidationError("provenance must be a JSON object")
    plain = thaw(chosen)
    refuse_absolute_paths(plain, "provenance")
    return {
        "repository_revision": repository_revision,
        "generation_mode": generation_mode,
        "generated_at": resolve_generated_at(generated_at),
        "directed": directed,
        "provenance": plain,
    }


def refuse_absolute_paths(value: Any, where: str) -> None:
    """Raise ``ValidationError`` when ``value`` holds an absolute path under a file key."""
    found = absolute_path_fields(value, where)
    if found:
        raise ValidationError(
            f"refusing to write an absolute path into the artifact at {found[0]}",
            details={"fields": found},
        )


_IDENTITY_KEY = attrgetter("status", "reasons")
_OWNER_KEY = attrgetter("adapter_id", "strategy", "adapter_version")
_RANGE = attrgetter("start_line", "start_column", "end_line", "end_column")


def _discriminator_key(disc: Discriminator) -> Any:
    # Types are part of the key: True, 1 and 1.0 are equal but print differently.
    value = disc.value
    key = (
        disc.registry,
        disc.policy_version,
        disc.completeness,
        disc.reasons,
        tuple(value.items()),
        tuple(map(type, value.values())),
    )
    try:
        hash(key)
    except TypeError:  # a nested value: fall back to the canonical bytes
        return canonical_bytes(disc.to_json())
    return key


def _table(
    objects: Sequence[Any], key: Callable[[Any], Any], to_json: Callable[[Any], Any]
) -> tuple[list[bytes], list[int]]:
    """Distinct values of ``objects`` sorted by canonical bytes, and each object's row.

    ``key`` is a cheap hashable stand-in for the value, so the canonicaliser runs once
    per distinct value and the per-object work stays in C (``map`` over ``key``).
    """
    return _keyed_table(objects, list(map(key, objects)), to_json)


def _keyed_table(
    objects: Sequence[Any], keys: list[Any], to_json: Callable[[Any], Any]
) -> tuple[list[bytes], list[int]]:
    """``_table`` with the keys already computed (raises ``TypeError`` if one is unhashable)."""
    # Each key is hashed once: ``firsts`` maps it to its first position (in C).
    firsts: dict[Any, int] = {}
    positions = list(map(firsts.setdefault, keys, range(len(keys))))
    encoded = {at: canonical_bytes(to_json(objects[at])) for at in firsts.values()}
    entries = sorted(set(encoded.values()))
    row_of_entry = {entry: row for row, entry in enumerate(entries)}
    row_of_position = {at: row_of_entry[data] for at, data in encoded.items()}
    return entries, list(map(row_of_position.__getitem__, positions))


_SCALAR_LEAVES = frozenset({str, type(None), bool, int, float})
_NUMERIC_LEAVES = frozenset({bool, int, float})


def _discriminator_table(discriminators: Sequence[Discriminator]) -> tuple[list[bytes], list[int]]:
    """The discriminator table and rows, grouped exactly as ``_discriminator_key`` groups.

    When every value leaf is a scalar and at most one of ``bool``, ``int`` and ``float``
    occurs (``True == 1 == 1.0`` is the only equality across JSON types), equal values
    have equal types, so the key needs no type column; the keys are then built column
    by column in C. Otherwise (mixed numbers, nested values) every key is
    ``_discriminator_key``.
    """
    values = list(map(_VALUE, discriminators))
    leaves = set(map(type, chain.from_iterable(map(_VALUES, values))))
    if leaves <= _SCALAR_LEAVES and len(leaves & _NUMERIC_LEAVES) <= 1:
        keys = list(
            zip(
                map(_REGISTRY, discriminators),
                map(_POLICY_VERSION, discriminators),
                map(_COMPLETENESS, discriminators),
                map(_REASONS, discriminators),
                map(tuple, values),
                map(tuple, map(_VALUES, values)),
                strict=True,
            )
        )
    else:
        keys = list(map(_discriminator_key, discriminators))
    return _keyed_table(discriminators, keys, Discriminator.to_json)


def _walk_free(value: Any, where: Callable[[], str]) -> tuple[Any, bool]:
    """Thaw a free-form value, check file keys for absolute paths, flag unsafe numbers.

    Returns the plain value and whether orjson prints it exactly as the reference does
    (strings are covered by the whole-text NFC check).
    """
    kind = type(value)
    if kind is str or value is None or kind is bool:
        return value, True
    if kind is int:
        return value, -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER
    if kind is float:
        if abs(value) > MAX_SAFE_INTEGER and value.is_integer():
            # It would print as an integer literal that no reader can take back exactly.
            raise CanonicalizationError(
                f"{where()} holds {value!r}, which prints as an integer beyond ±2**53 "
                "and cannot round-trip; store it as a string"
            )
        return value, _PLAIN_FLOAT_MIN <= abs(value) < _PLAIN_FLOAT_MAX and not value.is_integer()
    if isinstance(value, Mapping):
        plain: dict[str, Any] = {}
        safe = True
        for key, item in value.items():
            if key in PATH_FIELD_NAMES and type(item) is str and is_absolute_path(item):
                location = f"{where()}.{key}"
                raise ValidationError(
                    f"refusing to write an absolute path into the artifact at {location}",
                    details={"field": location},
                )
            plain[key], item_safe = _walk_free(item, where)
            safe = safe and item_safe and type(key) is str
        return plain, safe
    if kind is tuple or kind is list:
        items: list[Any] = []
        safe = True
        for item in value:
            plain_item, item_safe = _walk_free(item, where)
            items.append(plain_item)
            safe = safe and item_safe
        return items, safe
    return value, False  # not JSON: the canonicaliser names the problem


_FLAT_SCALARS = frozenset({str, bool, int, type(None)})


def _flat_and_plain(mappings: Sequence[Any]) -> bool:
    """Whether ``_walk_free`` would pass every mapping unchanged as safe, proven in bulk.

    True only when each is a frozen mapping with string keys whose values are strings,
    booleans, nulls or integers within ±2**53, and no file key holds an absolute path;
    then orjson prints ``dict(mapping)`` as the reference does (strings are covered by
    the whole-text NFC check). False sends the caller down the value-by-value path,
    which also names the first offender of any error.
    """
    if not set(map(type, mappings)) <= {MappingProxyType}:
        return False
    keys = set(chain.from_iterable(mappings))
    if not set(map(type, keys)) <= {str}:
        return False
    values = list(chain.from_iterable(map(_VALUES, mappings)))
    if not set(map(type, values)) <= _FLAT_SCALARS:
        return False
    integers = [value for value in values if type(value) is int]
    if integers and (min(integers) < -MAX_SAFE_INTEGER or max(integers) > MAX_SAFE_INTEGER):
        return False
    for key in keys & PATH_FIELD_NAMES:
        found = set(map(methodcaller("get", key), mappings))
        if any(type(value) is str and is_absolute_path(value) for value in found):
            return False
    return True


_ROW_SCALARS = frozenset({str, bool, type(None)})


def _plain_mapping(mapping: Any) -> bool:
    """Whether ``_walk_free`` would pass this one mapping unchanged (tuples printing as
    its lists do) as safe: a frozen mapping with string keys whose values are strings,
    booleans, nulls, integers within ±2**53, or flat tuples of those; no file key with
    an absolute path. The per-record form of ``_flat_and_plain``: one odd record (a
    nested value, a float) sends only itself down the value-by-value path."""
    if type(mapping) is not MappingProxyType:
        return False
    for key, value in mapping.items():
        kind = type(value)
        if type(key) is not str:
            return False
        if kind is str:
            if key in PATH_FIELD_NAMES and is_absolute_path(value):
                return False
        elif kind is int:
            if not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
                return False
        elif kind is tuple:
            for item in value:
                if type(item) is int:
                    if not -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:
                        return False
                elif type(item) not in _ROW_SCALARS:
                    return False
        elif kind not in _ROW_SCALARS:
            return False
    return True


class _Writer:
    """Turns records into payload columns; ``fast`` emits fragments, tuples and enums."""

    def __init__(self, fast: bool) -> None:
        self.fast = fast
        self._numbers: dict[Any, Any] = {}

    def array(self, items: Sequence[Any]) -> Any:
        """A JSON array: tuples pass through orjson; the plain payload uses lists."""
        return items if self.fast else list(items)

    def arrays(self, column: Iterable[Sequence[Any]]) -> list[Any]:
        """A column of arrays (tuples pass through orjson unchanged in fast mode)."""
        return list(column) if self.fast else [list(items) for items in column]

    def table(self, entries: list[bytes]) -> list[Any]:
        """A table as fragments (fast) or plain JSON values."""
        if self.fast:
            return [orjson.Fragment(entry) for entry in entries]
        return [orjson.loads(entry) for entry in entries]

    def free(self, value: Any, where: Callable[[], str]) -> Any:
        """A free-form JSON value, after the absolute-path check."""
        plain, safe = _walk_free(value, where)
        if self.fast and not safe:
            return orjson.Fragment(canonical_bytes(plain))
        return plain

    def free_items(self, items: Sequence[Any], where: Callable[[], str]) -> Any:
        """A set-like array of free-form values."""
        return [self.free(item, where) for item in items]

    def free_items_column(
        self, ids: Sequence[str], cells: Sequence[Any], section: str, member: str
    ) -> list[Any]:
        """A column of set-like arrays of free-form values (``free_items`` per record).

        In fast mode a column of flat, plainly printable mappings is built in C.
        """
        if self.fast and _flat_and_plain(list(chain.from_iterable(cells))):
            return list(map(list, map(map, repeat(dict), cells)))
        empty = self.array(())
        return [
            self.free_items(cell, _where(section, record_id, member)) if cell else empty
            for record_id, cell in zip(ids, cells, strict=True)
        ]

    def number(self, value: int | float) -> Any:
        """A schema number printed exactly as the reference canonicaliser prints it."""
        if not isinstance(value, float):
            if abs(value) > MAX_SAFE_INTEGER:
                format_number(value)  # raises CanonicalizationError with the reason
            return value
        if not self.fast or (
            _PLAIN_FLOAT_MIN <= abs(value) < _PLAIN_FLOAT_MAX and not value.is_integer()
        ):
            return value
        cached = self._numbers.get(value)
        if cached is None:
            cached = orjson.Fragment(format_number(value).encode())
            self._numbers[value] = cached
        return cached

    def ranges(self, column: Iterable[SourceRange | None]) -> list[Any]:
        encoded = [None if item is None else _RANGE(item) for item in column]
        present = [item for item in encoded if item is not None]
        if present:
            self.number(max(map(max, present)))
        return encoded if self.fast else [None if item is None else list(item) for item in encoded]

    def observations(self, items: Sequence[ConfidenceObservation]) -> Any:
        return [
            {"value": self.number(obs.value), "method": obs.method, "observer": obs.observer}
            for obs in items
        ]

    # -------------------------------------------------------------- columns
    def node_columns(
        self, columns: Sequence[tuple[Any, ...]], identity_rows: list[int]
    ) -> dict[str, Any]:
        """The node section from the ``_NODE_FIELDS`` columns of the sorted nodes."""
        ids, kinds, _identities, mappings = columns
        empty: dict[str, Any] = {}
        if self.fast and _flat_and_plain(mappings):
            attributes = list(map(dict, mappings))
        else:
            fast = self.fast
            attributes = [
                dict(mapping)
                if fast and _plain_mapping(mapping)
                else self.free(mapping, _where("nodes", node_id, ".attributes"))
                if mapping
                else empty
                for node_id, mapping in zip(ids, mappings, strict=True)
            ]
        return {
            "id": list(ids),
            "kind": list(kinds),
            "identity": identity_rows,
            "attributes": attributes,
        }

    def fact_columns(
        self,
        columns: Sequence[tuple[Any, ...]],
        source_rows: list[int],
        target_rows: list[int],
        discriminator_rows: list[int],
    ) -> dict[str, Any]:
        """The fact section from the ``_FACT_FIELDS`` columns of the sorted facts."""
        ids, directions, sources, targets, relations, occurrence_ids, annotations = columns[:7]
        if not self.fast:
            directions = tuple(direction.value for direction in directions)
        return {
            "id": list(ids),
            "direction": list(directions),
            "source": list(sources),
            "target": list(targets),
            "relation": list(relations),
            "discriminator": discriminator_rows,
            "source_identity": source_rows,
            "target_identity": target_rows,
            "occurrence_ids": self.arrays(occurrence_ids),
            "annotation_variants": self.free_items_column(
                ids, annotations, "facts", ".annotation_variants"
            ),
        }

    def occurrence_columns(
        self, occurrences: Sequence[EvidenceOccurrence], owner_rows: list[int]
    ) -> dict[str, Any]:
        empty = self.array(())
        (
            ids,
            fact_ids,
            source_files,
            source_ranges,
            target_files,
            target_ranges,
            site_kinds,
            evidence_keys,
            provenance,
            confidence,
            metadata,
            diagnostics,
        ) = _columns_of(occurrences, _OCCURRENCE_FIELDS)
        return {
            "id": list(ids),
            "fact_id": list(fact_ids),
            "owner": owner_rows,
            "source_file": list(source_files),
            "source_range": self.ranges(source_ranges),
            "target_file": list(target_files),
            "target_range": self.ranges(target_ranges),
            "site_kind": list(site_kinds),
            "adapter_evidence_key": list(evidence_keys),
            "provenance": self.free_items_column(ids, provenance, "occurrences", ".provenance"),
            "confidence_observations": [
                self.observations(items) if items else empty for items in confidence
            ],
            "metadata_variants": self.free_items_column(
                ids, metadata, "occurrences", ".metadata_variants"
            ),
            "diagnostics": self.arrays(diagnostics),
        }

    def hyperedge(self, hyperedge: Hyperedge) -> dict[str, Any]:
        attributes = hyperedge.attributes
        return {
            "id": hyperedge.id,
            "relation": hyperedge.relation,
            "members": list(hyperedge.members),
            "attributes": self.free(attributes, _where("hyperedges", hyperedge.id, ".attributes"))
            if attributes
            else {},
        }


def _columns_of(records: Sequence[Any], names: Sequence[str]) -> list[tuple[Any, ...]]:
    """The ``names`` attributes of ``records`` as one tuple per attribute.

    One row-wise pass reads every field of a record while it is in cache, then ``zip``
    transposes the rows; a pass per attribute would fetch each record once per column,
    which costs most on a graph whose records are scattered over a large heap.
    """
    if not records:
        return [()] * len(names)
    return list(zip(*map(attrgetter(*names), records), strict=True))


_NODE_FIELDS = ("id", "kind", "identity", "attributes")
_FACT_FIELDS = (
    "id",
    "direction",
    "source",
    "target",
    "relation",
    "occurrence_ids",
    "annotation_variants",
    "endpoint_identity",
    "discriminator",
)
_OCCURRENCE_FIELDS = tuple(name for name in OCCURRENCE_COLUMNS if name != "owner")
"""The occurrence record attributes the section prints (its ``owner`` is a table row)."""

_OCCURRENCE_KEYS = tuple(sorted(_OCCURRENCE_FIELDS))
"""The same columns in the printed (sorted key) order."""


def _where(section: str, record_id: str, member: str) -> Callable[[], str]:
    """A lazily formatted location, built only when an error names it."""
    return lambda: f"{section}[{record_id}]{member}"


def _payload(
    graph: SemanticGraph, meta: dict[str, Any], *, fast: bool, with_occurrences: bool = True
) -> dict[str, Any]:
    writer = _Writer(fast)
    node_columns = _columns_of(graph.nodes(), _NODE_FIELDS)
    fact_columns = _columns_of(graph.facts(), _FACT_FIELDS)
    node_count, fact_count = len(node_columns[0]), len(fact_columns[0])
    endpoint_identities = fact_columns[7]
    identity_objects = [
        *node_columns[2],
        *map(_SOURCE, endpoint_identities),
        *map(_TARGET, endpoint_identities),
    ]
    identities, identity_rows = _table(identity_objects, _IDENTITY_KEY, EndpointIdentity.to_json)
    node_rows = identity_rows[:node_count]
    source_rows = identity_rows[node_count : node_count + fact_count]
    target_rows = identity_rows[node_count + fact_count :]
    discriminators, discriminator_rows = _discriminator_table(fact_columns[8])
    pairs = Counter(zip(source_rows, target_rows, strict=True))
    payload = _members(graph, meta, writer, identities, pairs)
    payload["discriminators"] = writer.table(discriminators)
    payload["nodes"] = writer.node_columns(node_columns, node_rows)
    payload["facts"] = writer.fact_columns(
        fact_columns, source_rows, target_rows, discriminator_rows
    )
    if with_occurrences:
        occurrences = graph.occurrences()
        owners, owner_rows = _table(
            list(map(_OWNER, occurrences)), _OWNER_KEY, OccurrenceOwner.to_json
        )
        payload["occurrence_owners"] = writer.table(owners)
        payload["occurrences"] = writer.occurrence_columns(occurrences, owner_rows)
    return payload


def _members(
    graph: SemanticGraph,
    meta: dict[str, Any],
    writer: _Writer,
    identities: list[bytes],
    pairs: Counter[tuple[int, int]],
) -> dict[str, Any]:
    """Every payload member but the record sections and the discriminator and owner
    tables: ``identities`` is the endpoint identity table, ``pairs`` counts the facts'
    (source, target) rows in it."""
    table_identities = [EndpointIdentity.from_json(orjson.loads(entry)) for entry in identities]
    provenance, provenance_safe = _walk_free(meta["provenance"], lambda: "provenance")
    return {
        "versions": expected_versions(graph.registry.identifier),
        "repository_revision": meta["repository_revision"],
        "generation_mode": meta["generation_mode"],
        "generated_at": meta["generated_at"],
        "directed": meta["directed"],
        "endpoint_identities": writer.table(identities),
        "hyperedges": [writer.hyperedge(item) for item in graph.hyperedges()],
        "community_labels": dict(graph.community_labels),
        "counts": graph.counts().to_json(),
        "admission": {
            "admission_counts": dict(graph.admission_counts),
            "unregistered_relation_admissions": dict(graph.unregistered_relation_admissions),
        },
        "integrity_receipt": receipt_from_pairs(
            pairs, table_identities, graph.unregistered_relation_admissions
        ),
        "provenance": (
            orjson.Fragment(canonical_bytes(provenance))
            if writer.fast and not provenance_safe
            else provenance
        ),
        DIGEST_KEY: DIGEST_PLACEHOLDER,
    }


_OWNER = attrgetter("owner")
_VALUE = attrgetter("value")
_REGISTRY = attrgetter("registry")
_POLICY_VERSION = attrgetter("policy_version")
_COMPLETENESS = attrgetter("completeness")
_REASONS = attrgetter("reasons")
_VALUES = methodcaller("values")
