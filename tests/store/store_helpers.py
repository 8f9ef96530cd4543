"""Builders shared by the store tests (imported by name; pytest puts this folder on the path)."""

from __future__ import annotations

import itertools
import json
import sqlite3
import uuid
import zlib
from contextlib import closing
from pathlib import Path
from typing import Any

from cairn.canonical import canonical_bytes
from cairn.store import (
    CommandRequest,
    ConfigureCollection,
    ConfigureGraph,
    Database,
    Metric,
    Mutation,
    PutDocument,
    VectorField,
    VectorSpace,
)

_IDS = itertools.count(1)

SPACE = VectorSpace("toy", 2, Metric.COSINE, "toy-model", "1")


def new_id() -> uuid.UUID:
    """A fresh, deterministic command ID."""
    return uuid.UUID(int=next(_IDS))


def cmd(
    *mutations: Mutation, database: str = "main", command_id: uuid.UUID | None = None
) -> CommandRequest:
    """A command over ``mutations`` with a fresh ID unless one is given."""
    return CommandRequest(command_id or new_id(), database, mutations)


def rows(path: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    """Rows of ``sql`` read through a private connection that is always closed."""
    with closing(sqlite3.connect(path)) as conn:
        return [tuple(row) for row in conn.execute(sql, args)]


def vector_values(conn: sqlite3.Connection) -> list[tuple[int, int, bytes]]:
    """``(row, space, float32 bytes)`` of every stored vector, read out of its block
    here (zlib or raw, row after row), independently of ``cairn.store.vectorstore``."""
    dimensions = dict(conn.execute("SELECT id, dimension FROM vector_spaces"))
    values: list[tuple[int, int, bytes]] = []
    for first, space, count, codec, data in conn.execute(
        "SELECT first_row, space, rows, codec, data FROM vector_blocks"
    ):
        raw = zlib.decompress(data) if codec == 1 else bytes(data)
        width = 4 * dimensions[space]
        assert len(raw) == width * count
        values.extend(
            (first + index, space, raw[index * width : (index + 1) * width])
            for index in range(count)
        )
    return sorted(values)


def current_vectors(path: Path) -> list[tuple[str, str, str, int, bytes, int, bytes]]:
    """``(collection, id, field, revision, space JSON, dimension, float32 bytes)`` of
    every live document's current vector, ordered by collection, id and field."""
    with closing(sqlite3.connect(path)) as conn:
        data = {row: raw for row, _, raw in vector_values(conn)}
        found = [
            (collection, doc_id, field, revision, bytes(space), dimension, data[row])
            for row, collection, doc_id, field, revision, space, dimension in conn.execute(
                "SELECT v.row, s.collection, s.id, p.field, s.revision, p.space, p.dimension "
                "FROM vector_rows AS v JOIN vector_spaces AS p ON p.id = v.space "
                "JOIN slots AS s ON s.slot = v.slot "
                "WHERE v.death IS NULL AND s.death IS NULL"
            )
        ]
    return sorted(found)


def _rebuilt(shape: bytes, **parts: object) -> bytes:
    data = json.loads(shape)
    data.update(parts)
    return canonical_bytes(data)


def occurrence_records(path: Path) -> list[tuple[str, str, bytes]]:
    """``(id, fact_id, record)`` of every stored occurrence, rebuilt here from its shape
    and parts (or stored whole), ordered by ID."""
    with closing(sqlite3.connect(path)) as conn:
        shapes = dict(conn.execute("SELECT id, data FROM occurrence_shapes"))
        found = []
        for occurrence_id, fact_id, shape, parts in conn.execute(
            "SELECT id, fact_id, shape, parts FROM occurrences"
        ):
            if shape is None:
                found.append((occurrence_id, fact_id, bytes(parts)))
                continue
            keys = ("site_kind", "source_file", "source_range", "target_file", "target_range")
            varying = dict(zip(keys, json.loads(parts), strict=True))
            record = _rebuilt(shapes[shape], id=occurrence_id, fact_id=fact_id, **varying)
            found.append((occurrence_id, fact_id, record))
    return sorted(found)


def fact_records(path: Path) -> list[tuple[str, str, str, str, str, bytes]]:
    """``(id, source_collection, source_id, target_collection, target_id, record)`` of
    every live fact, its record rebuilt here from its shape, columns and occurrence IDs
    (or stored whole), ordered by ID."""
    occurrences: dict[str, list[str]] = {}
    for occurrence_id, fact_id, _ in occurrence_records(path):
        occurrences.setdefault(fact_id, []).append(occurrence_id)
    with closing(sqlite3.connect(path)) as conn:
        shapes = dict(conn.execute("SELECT id, data FROM fact_shapes"))
        found = []
        for fact_id, sc, si, tc, ti, relation, shape, record in conn.execute(
            "SELECT id, source_collection, source_id, target_collection, target_id, "
            "relation, shape, record FROM facts WHERE deleted = 0"
        ):
            if shape is not None:
                record = _rebuilt(
                    shapes[shape],
                    id=fact_id,
                    relation=relation,
                    source=si,
                    target=ti,
                    occurrence_ids=sorted(occurrences.get(fact_id, [])),
                )
            found.append((fact_id, sc, si, tc, ti, bytes(record)))
    return sorted(found)


def setup_docs(db: Database, collection: str = "docs", graph: str | None = None) -> None:
    """Configure ``collection`` (text field ``/text``, vector field ``embedding``) and a graph."""
    mutations: list[Mutation] = [
        ConfigureCollection(collection, ("/text",), (VectorField("embedding", SPACE),))
    ]
    if graph is not None:
        mutations.append(ConfigureGraph(graph))
    db.command(cmd(*mutations))


def put(collection: str, doc_id: str, text: str = "", **extra: Any) -> PutDocument:
    """A put_document with body ``{"text": text}``."""
    return PutDocument(collection, doc_id, {"text": text}, **extra)
