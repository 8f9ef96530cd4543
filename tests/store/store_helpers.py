"""Builders shared by the store tests (imported by name; pytest puts this folder on the path)."""

from __future__ import annotations

import itertools
import sqlite3
import time
import uuid
from collections.abc import Callable
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
from cairn.store.columns import VectorColumnView

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


def wait_for_column(
    db: Database,
    space: VectorSpace,
    ready: Callable[[VectorColumnView], bool],
    collection: str = "docs",
    field: str = "embedding",
    timeout: float = 30.0,
) -> None:
    """Poll fresh read cuts until ``ready`` holds for the vector column of ``space``
    (work a background thread finishes); fail after ``timeout`` seconds."""
    key = canonical_bytes(space.to_json())
    deadline = time.monotonic() + timeout
    while True:
        with db.read_cut() as cut:
            column = cut.columns.vector_column(collection, field, key)
            assert column is not None
            if ready(column):
                return
        assert time.monotonic() < deadline, "the column never became ready"
        time.sleep(0.01)
