"""Query embedding by the database (issue 19): ``SearchRequest.embed`` embeds the text with
the embedder the collection's vectors were loaded with; a query vector from another
space is a clear error, never an empty vector branch."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import cairn
from cairn.cli import app
from cairn.embed import HashingEmbedder
from cairn.errors import UnsupportedCapabilityError, ValidationError
from cairn.search.contracts import (
    GraphExpansion,
    GraphSearchRequest,
    SearchRequest,
)
from cairn.store import CommandRequest, ConfigureCollection, PutDocument, PutVector
from cairn.store.commands import Metric, VectorField, VectorSpace
from cairn.store.load import VECTOR_FIELD

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "flask_app"
TOY = VectorSpace("toy", 2, Metric.COSINE, "toy-model", "1")


@pytest.fixture(scope="module")
def code_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("embed") / "repo"
    shutil.copytree(FIXTURE, repo)
    assert CliRunner().invoke(app, ["index", str(repo), "--workers", "1"]).exit_code == 0
    return repo / ".cairn" / "cairn.db"


@pytest.fixture
def db(code_db: Path) -> Iterator[cairn.Database]:
    with cairn.open(code_db) as handle:
        yield handle


def _toy_collection(db: cairn.Database) -> None:
    mutations = (
        ConfigureCollection("notes", ("/text",), (VectorField("v", TOY),)),
        PutDocument("notes", "n1", {"text": "load the user"}),
        PutVector("notes", "n1", "v", (1.0, 0.0)),
    )
    db.command(CommandRequest(uuid.uuid4(), db.name, mutations))


def test_embed_is_the_search_with_the_loaded_embedders_vector(db: cairn.Database) -> None:
    embedder = HashingEmbedder()
    (row,) = embedder.embed(["load user"])
    vector = tuple(float(x) for x in row)
    brought = SearchRequest(
        db.name, "symbols", "/text", "load user", VECTOR_FIELD, vector, embedder.space, limit=5
    )
    asked = SearchRequest(db.name, "symbols", "/text", "load user", limit=5, embed=True)
    assert db.search(asked) == db.search(brought)
    graph = GraphSearchRequest(1, asked, expansion=GraphExpansion("code", 1))
    assert db.graph_search(graph) == db.graph_search(
        GraphSearchRequest(1, brought, expansion=GraphExpansion("code", 1))
    )


def test_a_query_vector_from_another_space_is_a_clear_error(db: cairn.Database) -> None:
    embedder = HashingEmbedder()
    (row,) = embedder.embed(["load user"])
    loaded = embedder.space
    other = VectorSpace(loaded.id, loaded.dimension, loaded.metric, "another-model", "7")
    request = SearchRequest(
        db.name, "symbols", "/text", "load user", VECTOR_FIELD, tuple(map(float, row)), other
    )
    with pytest.raises(ValidationError, match="another-model") as raised:
        db.search(request)
    assert loaded.model in raised.value.message  # it names the space the field holds


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"text": None, "text_field": None}, "embed needs text"),
        ({"vector": (1.0, 0.0), "space": TOY}, "exclude each other"),
        ({"vector_field": "nope"}, "no vector field 'nope'"),
    ],
)
def test_bad_embed_requests_are_refused(
    db: cairn.Database, changes: dict[str, object], message: str
) -> None:
    fields: dict[str, object] = {"text_field": "/text", "text": "load user", "embed": True}
    fields.update(changes)
    with pytest.raises(ValidationError, match=message):
        db.search(SearchRequest(db.name, "symbols", **fields))  # type: ignore[arg-type]


def test_embed_where_no_embedder_makes_the_space_is_refused(tmp_path: Path) -> None:
    with cairn.open(tmp_path / "toy.db") as db:
        _toy_collection(db)
        request = SearchRequest(db.name, "notes", "/text", "user", embed=True)
        with pytest.raises(UnsupportedCapabilityError, match="toy-model"):
            db.search(request)
    # The CLI searches text only there, and says why instead of failing.
    shown = CliRunner().invoke(
        app, ["search", "user", "--collection", "notes", "--db", str(tmp_path / "toy.db"), "--json"]
    )
    assert shown.exit_code == 0, shown.output
    assert '"text_only"' in shown.output and "toy-model" in shown.output
