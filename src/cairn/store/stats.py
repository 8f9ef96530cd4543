"""Counts of a database as one principal may see them, read in one read cut (issue 8).

``database_stats(db, principal)`` reports the database name, incarnation, commit
position and schema version, the live documents of every collection the principal may
read, and the live facts of every graph it may read. Counts never leak what the
principal could not read: a collection without ``query``/``documents_read`` (or a graph
without ``graph_read``) is left out, rows hidden by row policy are not counted, and a
fact counts only when both its endpoints are visible. A principal without any read
grant on the database is refused (``PermissionDeniedError``). Every row counted is
verified against its checksum first, so damage reads as ``CorruptionError``, never as a
smaller number.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cairn.errors import PermissionDeniedError, ValidationError
from cairn.store.checksums import (
    FACT_ROW,
    damaged,
    fact_row_checksum,
    stored_bytes,
    verify_document,
)
from cairn.store.policy import Capability, Principal, pattern_matches, row_visible
from cairn.store.reads import ReadCut
from cairn.store.schema import schema_version

if TYPE_CHECKING:
    from datetime import datetime

    from cairn.store.database import Database, PrincipalLike

__all__ = [
    "CollectionStats",
    "DatabaseStats",
    "GraphStats",
    "database_stats",
    "stats_from_json",
]

_READ = (Capability.DOCUMENTS_READ, Capability.QUERY)
_ANY_READ = frozenset({*_READ, Capability.GRAPH_READ, Capability.ADMIN})


@dataclass(frozen=True, slots=True)
class CollectionStats:
    """Live documents of one collection that the principal may see."""

    name: str
    documents: int


@dataclass(frozen=True, slots=True)
class GraphStats:
    """Live facts of one graph whose endpoints the principal may both see."""

    name: str
    facts: int


@dataclass(frozen=True, slots=True)
class DatabaseStats:
    """One consistent view of a database's identity and counts, at one position."""

    database: str
    incarnation: str
    position: int
    schema_version: int
    collections: tuple[CollectionStats, ...]
    graphs: tuple[GraphStats, ...]

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {
            "database": self.database,
            "incarnation": self.incarnation,
            "position": self.position,
            "schema_version": self.schema_version,
            "collections": [
                {"name": item.name, "documents": item.documents} for item in self.collections
            ],
            "graphs": [{"name": item.name, "facts": item.facts} for item in self.graphs],
        }


def stats_from_json(data: Mapping[str, Any]) -> DatabaseStats:
    """Parse ``DatabaseStats.to_json`` output."""
    try:
        return DatabaseStats(
            str(data["database"]),
            str(data["incarnation"]),
            int(data["position"]),
            int(data["schema_version"]),
            tuple(CollectionStats(item["name"], item["documents"]) for item in data["collections"]),
            tuple(GraphStats(item["name"], item["facts"]) for item in data["graphs"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ValidationError(f"malformed stats: {exc}") from exc


def database_stats(
    db: Database, principal: PrincipalLike = None, *, now: datetime | None = None
) -> DatabaseStats:
    """Counts of ``db`` visible to ``principal``, read in exactly one read cut."""
    with db.read_cut(principal, now=now) as cut:
        actor = cut.principal
        if not _reads_database(actor, cut.database):
            raise PermissionDeniedError(
                f"principal {actor.id!r} holds no read grant on database {cut.database!r}",
                details={"principal": actor.id, "database": cut.database},
            )
        names = [row[0] for row in cut.conn.execute("SELECT name FROM collections ORDER BY name")]
        readable = [name for name in names if _can(actor, cut.database, name, *_READ)]
        visible = _visible_documents(cut, readable)
        collections = tuple(CollectionStats(name, len(visible[name])) for name in readable)
        graph_names = [
            name
            for (name,) in cut.conn.execute("SELECT name FROM graphs ORDER BY name").fetchall()
            if _can(actor, cut.database, name, Capability.GRAPH_READ)
        ]
        facts = _visible_facts(cut, graph_names, visible)
        graphs = tuple(GraphStats(name, facts[name]) for name in graph_names)
        return DatabaseStats(
            cut.database,
            str(db.incarnation),
            cut.position,
            schema_version(cut.conn),
            collections,
            graphs,
        )


def _reads_database(principal: Principal, database: str) -> bool:
    return any(
        pattern_matches(grant.database, database) and grant.capabilities & _ANY_READ
        for grant in principal.grants
    )


def _can(principal: Principal, database: str, resource: str, *any_of: Capability) -> bool:
    held = principal.capabilities(database, resource)
    return any(cap in held for cap in any_of)


def _visible_documents(cut: ReadCut, readable: list[str]) -> dict[str, set[str]]:
    """Collection -> IDs of its live documents the principal may see, every row verified.

    The whole table is read and each row checked against its checksum before it counts
    (``cairn.store.checksums``): a count filtered in SQL would silently drop a row whose
    collection, tombstone or owner byte was damaged (and a damaged index would answer for
    the table), so a damaged row raises ``CorruptionError`` instead of changing a number.
    """
    wanted = set(readable)
    visible: dict[str, set[str]] = {name: set() for name in readable}
    for collection, doc_id, revision, owner, project, deleted, body, checksum in cut.conn.execute(
        "SELECT collection, id, revision, owner, project, deleted, body, checksum "
        "FROM documents NOT INDEXED"
    ):
        verify_document(
            collection,
            doc_id,
            revision,
            owner,
            project,
            bool(deleted),
            stored_bytes(body),
            checksum,
        )
        if (
            not deleted
            and collection in wanted
            and row_visible(cut.principal, cut.database, collection, owner, project)
        ):
            visible[collection].add(doc_id)
    return visible


def _visible_facts(cut: ReadCut, graphs: list[str], visible: dict[str, set[str]]) -> dict[str, int]:
    """Graph -> its live facts whose two endpoints are visible, every row verified."""
    counts = dict.fromkeys(graphs, 0)
    for *row, checksum in cut.conn.execute(f"SELECT {FACT_ROW}, checksum FROM facts NOT INDEXED"):
        graph, fact_id, deleted = row[0], row[1], row[-1]
        if checksum != fact_row_checksum(tuple(row)):
            raise damaged("facts", graph, fact_id, what=f"fact {fact_id} of graph {graph!r}")
        if deleted or graph not in counts:
            continue
        source, target = visible.get(row[2]), visible.get(row[4])
        if source is not None and target is not None and row[3] in source and row[5] in target:
            counts[graph] += 1
    return counts
