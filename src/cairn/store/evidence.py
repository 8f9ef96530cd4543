"""Evidence of facts: where each fact was seen, as the file and line range of its sites.

Every fact keeps its occurrences (one per evidence site: a call site, an import, a
definition). An answer about an edge ("who calls X") is only useful with them, so this
reads them for a set of facts inside a read cut: each row's checksum verified (damage is
a ``CorruptionError`` naming the row, never a silent gap), at most ``limit`` sites per
fact in (file, line) order, with the total count beside them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from cairn.errors import CorruptionError, ValidationError
from cairn.store.bulk import lookup_chunks
from cairn.store.checksums import damaged, occurrence_checksum, stored_bytes
from cairn.store.records import OCCURRENCE_PARTS

__all__ = [
    "DEFAULT_EVIDENCE_PER_FACT",
    "MAX_EVIDENCE_PER_FACT",
    "Evidence",
    "FactEvidence",
    "read_evidence",
]

DEFAULT_EVIDENCE_PER_FACT = 5
"""Sites returned per fact unless asked otherwise."""

MAX_EVIDENCE_PER_FACT = 100
"""Upper bound on the sites returned per fact (the total is always counted)."""

Range = tuple[int, int, int, int]


@dataclass(frozen=True, slots=True)
class Evidence:
    """One site of a fact: what kind of site, in which file, at which range."""

    site_kind: str | None
    file: str | None
    range: Range | None
    target_file: str | None = None
    target_range: Range | None = None

    @property
    def line(self) -> int | None:
        """The first line of the site (1-based), if it has a range."""
        return None if self.range is None else self.range[0]


@dataclass(frozen=True, slots=True)
class FactEvidence:
    """Up to ``limit`` sites of one fact, and how many it has in all."""

    fact_id: str
    sites: tuple[Evidence, ...]
    total: int


def _range(value: Any, what: str) -> Range | None:
    if value is None:
        return None
    if isinstance(value, list) and len(value) == 4 and all(type(item) is int for item in value):
        return (value[0], value[1], value[2], value[3])
    raise CorruptionError(f"{what} holds a malformed range {value!r}")


def _evidence(parts: bytes, what: str) -> Evidence:
    try:
        data = orjson.loads(parts)
    except orjson.JSONDecodeError as exc:
        raise CorruptionError(f"{what} is not JSON: {exc}") from exc
    if isinstance(data, dict):  # stored whole (no shape): the record itself
        values = [data.get(key) for key in OCCURRENCE_PARTS]
    elif isinstance(data, list) and len(data) == len(OCCURRENCE_PARTS):
        values = data
    else:
        raise CorruptionError(f"{what} has parts of the wrong shape")
    site_kind, source_file, source_range, target_file, target_range = values
    return Evidence(
        site_kind,
        source_file,
        _range(source_range, what),
        target_file,
        _range(target_range, what),
    )


def _order(site: Evidence) -> tuple[str, int, int]:
    return (site.file or "", *(site.range or (0, 0))[:2])


def read_evidence(
    conn: sqlite3.Connection,
    graph: str,
    fact_ids: Sequence[str],
    *,
    limit: int = DEFAULT_EVIDENCE_PER_FACT,
) -> dict[str, FactEvidence]:
    """The sites of each fact in ``fact_ids`` (of ``graph``), read through ``conn`` (in a
    read cut): ``limit`` per fact in (file, line, column) order and the total of each."""
    if type(limit) is not int or not 0 <= limit <= MAX_EVIDENCE_PER_FACT:
        raise ValidationError(
            f"evidence limit must be an integer in 0..{MAX_EVIDENCE_PER_FACT}, got {limit!r}"
        )
    found: dict[str, list[Evidence]] = {fact_id: [] for fact_id in fact_ids}
    for chunk in lookup_chunks(sorted(found)):
        marks = ", ".join("?" * len(chunk))
        for fact_id, occurrence_id, shape, parts, checksum in conn.execute(
            "SELECT fact_id, id, shape, parts, checksum FROM occurrences "
            f"WHERE graph = ? AND fact_id IN ({marks})",
            (graph, *chunk),
        ):
            data = stored_bytes(parts) or b""
            what = f"occurrence {occurrence_id} of fact {fact_id}"
            if checksum != occurrence_checksum(graph, fact_id, occurrence_id, shape, data):
                raise damaged("occurrences", graph, f"{fact_id}/{occurrence_id}", what=what)
            found[fact_id].append(_evidence(data, what))
    return {
        fact_id: FactEvidence(fact_id, tuple(sorted(sites, key=_order)[:limit]), len(sites))
        for fact_id, sites in found.items()
    }
