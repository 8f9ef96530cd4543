"""Verification tasks of a v2 load: canonical body and every re-derived fact/occurrence ID.

Each task reads the parsed payload (shared with forked workers, see ``workers``) and
returns a list of problems; an empty list means the checked part verifies. Tasks never
raise on malformed input: they report it, and the parent raises one
``ArtifactCorruptError`` after every task has finished.

Fast mode (``VerifyState.fast``) applies when the body text is NFC, which implies every
string in it is NFC; then an identity payload's canonical bytes are exactly
``orjson.dumps`` with sorted keys, because its numbers are checked to be safe integers
and the discriminator value is embedded as its own canonical bytes. Otherwise every
identity payload goes through ``cairn.canonical.canonical_bytes``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from itertools import chain, compress, repeat
from operator import eq, ge, is_, itemgetter, lt
from typing import Any

import orjson

from cairn.artifact.paths import absolute_path_fields, has_absolute_path
from cairn.artifact.seal import digest_tail, stored_digest, unsealed_digest
from cairn.canonical import MAX_SAFE_INTEGER, canonical_bytes, format_number
from cairn.errors import CairnError
from cairn.graph.identity import (
    FACT_ID_PREFIX,
    FACT_IDENTITY_SCHEMA_VERSION,
    OCCURRENCE_ID_PREFIX,
    OCCURRENCE_IDENTITY_SCHEMA_VERSION,
    check_repo_path,
)

__all__ = [
    "MAX_REPORTED_PROBLEMS",
    "VerifyState",
    "check_canonical_body",
    "check_fact_ids",
    "check_occurrence_ids",
    "check_payload_digest",
    "check_record_rules",
    "release_caches",
    "resolve",
]

MAX_REPORTED_PROBLEMS = 5
"""Problems one task reports before it stops looking (one is enough to refuse a load)."""

_PLAIN_FLOAT_MIN = 1e-4
_PLAIN_FLOAT_MAX = 1e16
_SORT = orjson.OPT_SORT_KEYS
_sha256 = hashlib.sha256
_NONE_TYPE = type(None)
_PLAIN_LEAVES = frozenset({str, int, float, bool, _NONE_TYPE})


@dataclass(frozen=True, slots=True)
class VerifyState:
    """What every verification task reads: file bytes, body view, parsed payload, mode.

    A forked worker receives the state before the parent has parsed anything
    (``payload`` is None) and parses its own copy once (``resolve``): sharing parsed
    objects copy-on-write would make both processes fault on every refcount change.
    """

    data: bytes
    body: bytes | memoryview
    fast: bool
    payload: dict[str, Any] | None = None


_RESOLVED: list[VerifyState] = []


def resolve(state: VerifyState) -> VerifyState:
    """``state`` with its payload parsed (once per process)."""
    if state.payload is not None:
        return state
    if _RESOLVED and _RESOLVED[0].body is state.body:
        return _RESOLVED[0]
    parsed = orjson.loads(state.body)
    if type(parsed) is not dict:
        raise TypeError("the payload is not an object")
    _RESOLVED[:] = [VerifyState(state.data, state.body, state.fast, parsed)]
    return _RESOLVED[0]


def _payload_of(state: VerifyState) -> dict[str, Any]:
    payload = resolve(state).payload
    assert payload is not None
    return payload


# ------------------------------------------------------------ canonical body
def _unsafe(value: Any) -> bool:
    """Whether orjson may print ``value`` differently from the reference canonicaliser."""
    kind = type(value)
    if kind is str or value is None or kind is bool:
        return False
    if kind is int:
        return not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER
    if kind is float:
        return not (_PLAIN_FLOAT_MIN <= abs(value) < _PLAIN_FLOAT_MAX and not value.is_integer())
    if kind is dict:
        return any(_unsafe(item) for item in value.values())
    if kind is list:
        return any(_unsafe(item) for item in value)
    return True


def _fragment(value: Any) -> Any:
    """``value`` itself when orjson prints it canonically, else its canonical bytes."""
    return orjson.Fragment(canonical_bytes(value)) if _unsafe(value) else value


def _leaves_safe(values: Iterable[Any]) -> bool:
    """Whether every value is a scalar orjson prints canonically (C-level passes).

    False also when unsure (a nested container): the caller then checks cell by cell.
    """
    values = list(values)
    kinds = set(map(type, values))
    if kinds - _PLAIN_LEAVES:
        return False
    for number_type in (int, float):
        if number_type in kinds:
            numbers = set(compress(values, map(is_, map(type, values), repeat(number_type))))
            if any(map(_unsafe, numbers)):
                return False
    return True


def _objects_safe(objects: Iterable[Any]) -> bool:
    """Whether every item is a JSON object of canonically printed scalars."""
    objects = list(objects)
    if set(map(type, objects)) - {dict}:
        return False
    return _leaves_safe(chain.from_iterable(map(dict.values, objects)))


def _items_safe(cells: list[Any]) -> bool:
    """``_objects_safe`` or ``_leaves_safe`` over the items of a column of arrays."""
    if set(map(type, cells)) - {list}:
        return False
    items = list(chain.from_iterable(cells))
    if set(map(type, items)) == {dict}:
        return _objects_safe(items)
    return _leaves_safe(items)


def _observations_safe(cells: list[Any]) -> bool:
    """Whether no confidence value of a column needs a fragment (see ``_patch_observations``)."""
    if set(map(type, cells)) - {list}:
        return False
    observations = list(chain.from_iterable(cells))
    if set(map(type, observations)) - {dict}:
        return False
    try:
        values = list(map(itemgetter("value"), observations))
    except KeyError:
        return False
    floats = set(compress(values, map(is_, map(type, values), repeat(float))))
    return not any(map(_unsafe, floats))


def _patched_column(
    column: Any, patch: Callable[[Any], Any], safe: Callable[[list[Any]], bool] | None = None
) -> Any:
    """A copy of ``column`` with ``patch`` applied to non-empty cells, or ``column`` itself.

    ``safe`` is a bulk test that ``patch`` would change no cell; when it says so the
    cell-by-cell pass is skipped.
    """
    if type(column) is not list:
        return column
    if safe is not None and safe(column):
        return column
    changed = False
    cells = list(column)
    for index, cell in enumerate(cells):
        if cell:
            patched = patch(cell)
            if patched is not cell:
                cells[index] = patched
                changed = True
    return cells if changed else column


def _patch_items(cell: Any) -> Any:
    if type(cell) is not list:
        return cell
    patched = [_fragment(item) for item in cell]
    return patched if any(new is not old for new, old in zip(patched, cell, strict=True)) else cell


def _patch_observations(cell: Any) -> Any:
    if type(cell) is not list:
        return cell
    patched: list[Any] = []
    changed = False
    for observation in cell:
        value = observation.get("value") if type(observation) is dict else None
        if type(value) is float and _unsafe(value):
            observation = {**observation, "value": orjson.Fragment(format_number(value).encode())}
            changed = True
        patched.append(observation)
    return patched if changed else cell


_Patch = tuple[Callable[[Any], Any], Callable[[list[Any]], bool]]


def _patch_section(section: Any, patches: Mapping[str, _Patch]) -> Any:
    if type(section) is not dict:
        return section
    return {
        name: _patched_column(column, *patches[name]) if name in patches else column
        for name, column in section.items()
    }


def _same_bytes(expected: bytes, body: bytes | memoryview) -> bool:
    """``expected == body`` as one memcmp (comparing a memoryview runs item by item)."""
    return len(expected) == len(body) and expected.startswith(body)


def check_canonical_body(state: VerifyState) -> list[str]:
    """The body must be exactly the canonical serialisation of the parsed payload."""
    try:
        payload = _payload_of(state)
        if not state.fast:
            same = _same_bytes(canonical_bytes(payload), state.body)
        else:
            expected = dict(payload)
            expected["nodes"] = _patch_section(
                payload.get("nodes"), {"attributes": (_fragment, _objects_safe)}
            )
            expected["facts"] = _patch_section(
                payload.get("facts"), {"annotation_variants": (_patch_items, _items_safe)}
            )
            expected["occurrences"] = _patch_section(
                payload.get("occurrences"),
                {
                    "provenance": (_patch_items, _items_safe),
                    "metadata_variants": (_patch_items, _items_safe),
                    "confidence_observations": (_patch_observations, _observations_safe),
                },
            )
            for key in ("endpoint_identities", "discriminators", "occurrence_owners"):
                expected[key] = _patch_items(payload.get(key))
            if type(payload.get("hyperedges")) is list:
                expected["hyperedges"] = [_fragment(item) for item in payload["hyperedges"]]
            expected["provenance"] = _fragment(payload.get("provenance"))
            same = _same_bytes(orjson.dumps(expected, option=_SORT), state.body)
    except (CairnError, TypeError, ValueError, orjson.JSONEncodeError) as exc:
        return [f"the body cannot be canonicalised: {exc}"]
    if not same:
        return ["the body is not the canonical serialisation of its payload"]
    return []


def check_payload_digest(state: VerifyState) -> list[str]:
    """The declared ``payload_sha256`` must be the digest of the body (see ``seal``)."""
    try:
        tail = digest_tail(_payload_of(state))
        declared = stored_digest(state.body, tail)
        actual = unsealed_digest(state.body, tail)
    except (CairnError, TypeError, ValueError) as exc:
        return [f"the payload digest cannot be checked: {exc}"]
    if declared != actual:
        return ["the payload digest does not match: the file was altered or damaged"]
    return []


# --------------------------------------------------------------------- IDs
def _safe_int(value: Any) -> bool:
    return type(value) is int and -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER


def _cached(state: VerifyState, name: str, compute: Callable[[VerifyState], Any]) -> Any:
    """Per-payload memo: every ID chunk needs the same table-derived parts."""
    payload = _payload_of(state)
    if not _MEMO or _MEMO[0] is not payload:
        _MEMO[:] = [payload, {}]
    parts: dict[str, Any] = _MEMO[1]
    if name not in parts:
        parts[name] = compute(state)
    return parts[name]


_MEMO: list[Any] = []


def release_caches() -> None:
    """Drop this process's parsed payload and memo (the loader calls it when done)."""
    _MEMO.clear()
    _RESOLVED.clear()


def _discriminator_parts(state: VerifyState) -> list[dict[str, Any] | None]:
    """Per discriminator table row, the identity-payload members it contributes."""
    parts: list[dict[str, Any] | None] = []
    table = _payload_of(state).get("discriminators")
    for entry in table if type(table) is list else ():
        try:
            value = entry["value"]
            policy = entry["policy_version"]
            if type(value) is not dict or not _safe_int(policy):
                raise TypeError("malformed discriminator")
            parts.append(
                {
                    "discriminator_registry": entry["registry"],
                    "discriminator_policy_version": policy,
                    "discriminator_completeness": entry["completeness"],
                    "discriminator_value": (
                        orjson.Fragment(canonical_bytes(value)) if state.fast else value
                    ),
                }
            )
        except (CairnError, KeyError, TypeError):
            parts.append(None)
    return parts


def _column(section: Any, name: str, start: int, stop: int) -> list[Any]:
    if type(section) is not dict or type(section.get(name)) is not list:
        raise TypeError(f"column {name!r} is missing")
    return list(section[name][start:stop])


def _encoder(state: VerifyState) -> Callable[[dict[str, Any]], bytes]:
    if state.fast:
        return lambda payload: orjson.dumps(payload, option=_SORT)
    return canonical_bytes


def check_fact_ids(state: VerifyState, start: int, stop: int) -> list[str]:
    """Re-derive the IDs of facts ``start:stop`` and report any that differ."""
    encode = _encoder(state)
    problems: list[str] = []
    try:
        facts = _payload_of(state).get("facts")
        parts = _cached(state, "discriminators", _discriminator_parts)
        rows = zip(
            _column(facts, "id", start, stop),
            _column(facts, "direction", start, stop),
            _column(facts, "source", start, stop),
            _column(facts, "target", start, stop),
            _column(facts, "relation", start, stop),
            _column(facts, "discriminator", start, stop),
            strict=True,
        )
        for fact_id, direction, source, target, relation, row in rows:
            part = parts[row] if type(row) is int and 0 <= row < len(parts) else None
            if part is None:
                raise TypeError(f"fact {fact_id!r} names no valid discriminator")
            payload = {
                "identity_schema_version": FACT_IDENTITY_SCHEMA_VERSION,
                "direction": direction,
                "source": source,
                "target": target,
                "relation": relation,
                **part,
            }
            if fact_id != FACT_ID_PREFIX + _sha256(encode(payload)).hexdigest():
                problems.append(f"fact ID {fact_id!r} does not match its content")
                if len(problems) >= MAX_REPORTED_PROBLEMS:
                    break
    except (CairnError, TypeError, ValueError, orjson.JSONEncodeError) as exc:
        problems.append(f"facts {start}:{stop} are malformed: {exc}")
    return problems


def _owner_parts(state: VerifyState) -> list[tuple[Any, Any] | None]:
    table = _payload_of(state).get("occurrence_owners")
    parts: list[tuple[Any, Any] | None] = []
    for entry in table if type(table) is list else ():
        ok = type(entry) is dict and "adapter_id" in entry and "strategy" in entry
        parts.append((entry["adapter_id"], entry["strategy"]) if ok else None)
    return parts


def check_occurrence_ids(state: VerifyState, start: int, stop: int) -> list[str]:
    """Re-derive the IDs of occurrences ``start:stop`` and report any that differ."""
    encode = _encoder(state)
    problems: list[str] = []
    try:
        occurrences = _payload_of(state).get("occurrences")
        owners = _cached(state, "owners", _owner_parts)
        rows = zip(
            _column(occurrences, "id", start, stop),
            _column(occurrences, "fact_id", start, stop),
            _column(occurrences, "owner", start, stop),
            _column(occurrences, "source_file", start, stop),
            _column(occurrences, "source_range", start, stop),
            _column(occurrences, "target_file", start, stop),
            _column(occurrences, "target_range", start, stop),
            _column(occurrences, "site_kind", start, stop),
            _column(occurrences, "adapter_evidence_key", start, stop),
            strict=True,
        )
        for occurrence_id, fact_id, row, source_file, source_range, *rest in rows:
            target_file, target_range, site_kind, evidence_key = rest
            owner = owners[row] if type(row) is int and 0 <= row < len(owners) else None
            if owner is None:
                raise TypeError(f"occurrence {occurrence_id!r} names no valid owner")
            payload = {
                "occurrence_identity_schema_version": OCCURRENCE_IDENTITY_SCHEMA_VERSION,
                "fact_id": fact_id,
                "adapter_id": owner[0],
                "strategy": owner[1],
                "source_file": source_file,
                "source_range": source_range,
                "target_file": target_file,
                "target_range": target_range,
                "site_kind": site_kind,
                "adapter_evidence_key": evidence_key,
            }
            if occurrence_id != OCCURRENCE_ID_PREFIX + _sha256(encode(payload)).hexdigest():
                problems.append(f"occurrence ID {occurrence_id!r} does not match its content")
                if len(problems) >= MAX_REPORTED_PROBLEMS:
                    break
    except (CairnError, TypeError, ValueError, orjson.JSONEncodeError) as exc:
        problems.append(f"occurrences {start}:{stop} are malformed: {exc}")
    return problems


# ------------------------------------------------------------ record rules
_ENDS = itemgetter(slice(2, 4))
_STARTS = itemgetter(slice(0, 2))


def _sorted_unique(values: list[Any]) -> bool:
    """Unique strings in ascending order (C-level passes only)."""
    return (
        not set(map(type, values)) - {str}
        and values == sorted(values)
        and len(set(values)) == len(values)
    )


def _ranges_valid(column: list[Any]) -> bool:
    """Every cell null or ``[start_line, start_column, end_line, end_column]`` in order."""
    present = [cell for cell in column if cell is not None]
    if not present:
        return True
    if set(map(type, present)) - {list} or set(map(len, present)) - {4}:
        return False
    if set(map(type, chain.from_iterable(present))) - {int}:
        return False
    if min(map(min, present)) < 1 or max(map(max, present)) > MAX_SAFE_INTEGER:
        return False
    return all(map(ge, map(_ENDS, present), map(_STARTS, present)))


def _paths(value: Any, where: str, problems: list[str]) -> None:
    found = absolute_path_fields(value, where)
    if found:
        problems.append(f"the artifact holds an absolute path at {found[0]}")


def _column_paths(
    ids: list[Any], column: list[Any], where: Callable[[Any], str], problems: list[str]
) -> None:
    """``_paths`` over the non-empty cells of a column, naming only the cells that hit."""
    for record_id, value in compress(zip(ids, column, strict=True), column):
        if has_absolute_path(value):
            _paths(value, where(record_id), problems)


def _files_valid(column: list[Any], what: str) -> bool:
    for value in set(column) - {None}:
        try:
            check_repo_path(value, what)
        except CairnError:
            return False
    return True


def check_record_rules(state: VerifyState) -> list[str]:
    """Per-record rules the main process does not re-check while it builds records.

    IDs unique and ascending in every section, occurrence IDs of each fact sorted and
    unique, undirected facts stored with sorted endpoints, occurrence files
    repository-relative, ranges well formed, and no absolute path under a file key in
    any free-form value.
    """
    problems: list[str] = []
    try:
        payload = _payload_of(state)
        nodes, facts, occurrences = payload["nodes"], payload["facts"], payload["occurrences"]
        for name, section in (("node", nodes), ("fact", facts), ("occurrence", occurrences)):
            if not _sorted_unique(section["id"]):
                problems.append(f"{name} IDs must be unique strings in ascending order")
        _column_paths(
            nodes["id"], nodes["attributes"], lambda at: f"nodes[{at}].attributes", problems
        )
        _fact_rules(facts, problems)
        _occurrence_rules(occurrences, problems)
        for index, hyperedge in enumerate(payload["hyperedges"]):
            _paths(hyperedge, f"hyperedges[{index}]", problems)
        _paths(payload["provenance"], "provenance", problems)
    except (CairnError, KeyError, TypeError, ValueError) as exc:
        problems.append(f"the records are malformed: {exc}")
    return problems[:MAX_REPORTED_PROBLEMS]


def _fact_rules(facts: dict[str, Any], problems: list[str]) -> None:
    listed = facts["occurrence_ids"]
    if set(map(type, listed)) - {list}:
        problems.append("occurrence_ids must be arrays")
        return
    if set(map(type, chain.from_iterable(listed))) - {str}:
        problems.append("occurrence IDs must be strings")
    several = list(map(lt, repeat(1), map(len, listed)))
    for fact_id, ids in compress(zip(facts["id"], listed, strict=True), several):
        if not _sorted_unique(ids):
            problems.append(f"occurrence IDs of fact {fact_id} must be sorted and unique")
    undirected = list(map(eq, facts["direction"], repeat("undirected")))
    rows = zip(facts["id"], facts["source"], facts["target"], strict=True)
    for fact_id, source, target in compress(rows, undirected):
        if not source <= target:
            problems.append(f"undirected fact {fact_id} must store its endpoints sorted")
    _column_paths(
        facts["id"],
        facts["annotation_variants"],
        lambda at: f"facts[{at}].annotation_variants",
        problems,
    )


def _occurrence_rules(occurrences: dict[str, Any], problems: list[str]) -> None:
    for what in ("source_file", "target_file"):
        if not _files_valid(occurrences[what], what):
            problems.append(f"an occurrence {what} is not a repository-relative path")
    for what in ("source_range", "target_range"):
        if not _ranges_valid(occurrences[what]):
            problems.append(f"an occurrence {what} is malformed")
    for what in ("provenance", "metadata_variants"):
        _column_paths(occurrences["id"], occurrences[what], _occurrence_where(what), problems)


def _occurrence_where(what: str) -> Callable[[Any], str]:
    return lambda at: f"occurrences[{at}].{what}"
