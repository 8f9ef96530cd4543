"""Builders for search tests: a real store with collections, a graph and principals."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import cairn
from cairn.search.contracts import EntityRef
from cairn.store import (
    Capability,
    CommandRequest,
    ConfigureCollection,
    ConfigureGraph,
    ConfigurePolicy,
    ConfigurePrincipal,
    Database,
    DocumentAccess,
    FieldPolicy,
    Grant,
    Metric,
    Mutation,
    PutDocument,
    PutFact,
    PutVector,
    VectorField,
    VectorSpace,
)

SPACE = VectorSpace("toy", 2, Metric.COSINE, "toy-model", "1")
TEXT = "/text"
VECTOR = "embedding"
GRAPH = "code"
_IDS = itertools.count(10_000)


def ref(collection: str, doc_id: str) -> EntityRef:
    return EntityRef(collection, doc_id)


def run(db: Database, *mutations: Mutation) -> None:
    """Apply ``mutations`` as one command of the owner."""
    db.command(CommandRequest(uuid.UUID(int=next(_IDS)), db.name, tuple(mutations)))


def open_db(tmp_path: Path, collections: Iterable[str] = ("docs", "seeds")) -> Database:
    """A fresh database with text+vector collections and the graph ``code``."""
    db = cairn.open(tmp_path / "cairn.db")
    fields = (VectorField(VECTOR, SPACE),)
    configure = [ConfigureCollection(name, (TEXT,), fields) for name in collections]
    run(db, *configure, ConfigureGraph(GRAPH))
    return db


def put_docs(
    db: Database,
    collection: str,
    texts: dict[str, str],
    vectors: dict[str, Sequence[float]] | None = None,
    access: dict[str, DocumentAccess] | None = None,
    extra: dict[str, dict[str, Any]] | None = None,
) -> None:
    mutations: list[Mutation] = []
    for doc_id, text in texts.items():
        body = {"text": text, **(extra or {}).get(doc_id, {})}
        mutations.append(PutDocument(collection, doc_id, body, access=(access or {}).get(doc_id)))
    for doc_id, vector in (vectors or {}).items():
        mutations.append(PutVector(collection, doc_id, VECTOR, tuple(vector)))
    run(db, *mutations)


def put_edges(db: Database, edges: Iterable[tuple[EntityRef, EntityRef, str]]) -> None:
    run(db, *(PutFact(GRAPH, source, target, relation) for source, target, relation in edges))


def grant(
    db: Database,
    principal_id: str,
    resources: dict[str, Iterable[str]],
    *,
    field_grants: Iterable[str] = (),
    restrict_rows: bool = False,
    owner_id: str | None = None,
    projects: Iterable[str] = (),
    revoked: bool = False,
) -> None:
    grants = tuple(
        Grant(db.name, resource, frozenset(Capability(c) for c in caps))
        for resource, caps in resources.items()
    )
    run(
        db,
        ConfigurePrincipal(
            principal_id,
            grants,
            frozenset(field_grants),
            owner_id,
            frozenset(projects),
            restrict_rows,
            revoked,
        ),
    )


def policy(db: Database, resource: str, *fields: FieldPolicy) -> None:
    run(db, ConfigurePolicy(resource, fields))


READER = {
    "docs": ("query", "documents_read", "vector_search"),
    "seeds": ("query", "documents_read"),
    GRAPH: ("graph_read",),
}


FLASK_FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "flask_app"
"""The Flask fixture repository the answers-by-name tests index."""


def flask_db(tmp_path: Path, extra: dict[str, str] | None = None) -> Path:
    """A database loaded from a copy of the Flask fixture (plus ``extra`` files)."""
    return tree_db(tmp_path, extra or {}, base=FLASK_FIXTURE)


def tree_db(tmp_path: Path, files: dict[str, str], *, base: Path | None = None) -> Path:
    """A database loaded from the code graph of ``files`` (path -> text), written over a
    copy of ``base`` when given, in ``tmp_path/repo``."""
    import shutil

    import cairn
    from cairn.codegraph import index_repository
    from cairn.store.load import load_semantic_graph

    repo = tmp_path / "repo"
    if base is not None:
        shutil.copytree(base, repo)
    for relative, text in files.items():
        (repo / relative).parent.mkdir(parents=True, exist_ok=True)
        (repo / relative).write_text(text)
    path = tmp_path / "cairn.db"
    with cairn.open(path) as db:
        load_semantic_graph(db, index_repository(repo).graph)
    return path
