"""Counts of a database as one principal may see them, read in one read cut (issue 8).

``database_stats(db, principal)`` reports the database name, incarnation, commit
position and schema version, the live documents of every collection the principal may
read, and the live facts of every graph it may read. Counts never leak what the
principal could not read: a collection without ``query``/``documents_read`` (or a graph
without ``graph_read``) is left out, rows hidden by row policy are not counted, and a
fact counts only when both its endpoints are visible. A principal without any read
grant on the database is refused (``PermissionDeniedError``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cairn.errors import PermissionDeniedError, ValidationError
from cairn.store.policy import Capability, Principal, pattern_matches
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
        collections = tuple(CollectionStats(name, _documents(cut, name)) for name in readable)
        graphs = tuple(
            GraphStats(name, _facts(cut, name, readable))
            for (name,) in cut.conn.execute("SELECT name FROM graphs ORDER BY name").fetchall()
            if _can(actor, cut.database, name, Capability.GRAPH_READ)
        )
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


def _restricted(cut: ReadCut, collection: str) -> bool:
    principal = cut.principal
    return principal.restrict_rows and not principal.is_admin(cut.database, collection)


def _row_clause(cut: ReadCut, alias: str) -> tuple[str, list[Any]]:
    """SQL for the row policy of a restricted principal over the table ``alias``."""
    principal = cut.principal
    parts: list[str] = []
    params: list[Any] = []
    if principal.owner_id is not None:
        parts.append(f"{alias}.owner = ?")
        params.append(principal.owner_id)
    projects = sorted(principal.projects)
    if projects:
        parts.append(f"{alias}.project IN ({', '.join('?' * len(projects))})")
        params.extend(projects)
    return ("(" + " OR ".join(parts) + ")" if parts else "0"), params


def _documents(cut: ReadCut, collection: str) -> int:
    sql = "SELECT COUNT(*) FROM documents d WHERE d.collection = ? AND d.deleted = 0"
    params: list[Any] = [collection]
    if _restricted(cut, collection):
        clause, extra = _row_clause(cut, "d")
        sql += f" AND {clause}"
        params.extend(extra)
    return int(cut.conn.execute(sql, params).fetchone()[0])


def _visible_clause(cut: ReadCut, alias: str, readable: list[str]) -> tuple[str, list[Any]]:
    """SQL: the row ``alias`` is in a readable collection and passes row policy."""
    open_ = [name for name in readable if not _restricted(cut, name)]
    closed = [name for name in readable if _restricted(cut, name)]
    parts: list[str] = []
    params: list[Any] = []
    if open_:
        parts.append(f"{alias}.collection IN ({', '.join('?' * len(open_))})")
        params.extend(open_)
    if closed:
        clause, extra = _row_clause(cut, alias)
        parts.append(f"({alias}.collection IN ({', '.join('?' * len(closed))}) AND {clause})")
        params.extend([*closed, *extra])
    return ("(" + " OR ".join(parts) + ")" if parts else "0"), params


def _facts(cut: ReadCut, graph: str, readable: list[str]) -> int:
    source, source_params = _visible_clause(cut, "s", readable)
    target, target_params = _visible_clause(cut, "t", readable)
    sql = (
        "SELECT COUNT(*) FROM facts f "
        "JOIN documents s ON s.collection = f.source_collection AND s.id = f.source_id "
        "JOIN documents t ON t.collection = f.target_collection AND t.id = f.target_id "
        "WHERE f.graph = ? AND f.deleted = 0 AND s.deleted = 0 AND t.deleted = 0 "
        f"AND {source} AND {target}"
    )
    row = cut.conn.execute(sql, [graph, *source_params, *target_params]).fetchone()
    return int(row[0])
