"""The code-search doors' defaults (fusion k, vector weight, text fields): one constant
each, on the CLI and over MCP."""

from __future__ import annotations

from pathlib import Path

import typer
from search_helpers import run
from typer.testing import CliRunner

import cairn
from cairn.cli import app
from cairn.search.present import (
    CODE_FUSION_K,
    CODE_VECTOR_WEIGHT,
    build_cli_request,
    code_text_field,
)
from cairn.server.mcp_tools import _search_arguments
from cairn.store import ConfigureCollection
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


def test_the_code_doors_weigh_the_vector_branch_by_one_constant(tmp_path: Path) -> None:
    assert CODE_VECTOR_WEIGHT == 0.5
    assert _request().search.vector_weight == CODE_VECTOR_WEIGHT
    assert _request().search.text_weight == 1.0
    with cairn.open(tmp_path / "cairn.db") as db:
        given, _, _ = _search_arguments(db, None, {"text": "load user"})
        assert given["vector_weight"] == CODE_VECTOR_WEIGHT
        given, _, _ = _search_arguments(db, None, {"text": "load user", "vector_weight": 2.0})
        assert given["vector_weight"] == 2.0


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
