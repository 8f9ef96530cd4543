"""The code-search doors' fusion default: one constant, on the CLI and over MCP."""

from __future__ import annotations

from pathlib import Path

import typer

import cairn
from cairn.cli import app
from cairn.search.present import CODE_FUSION_K, build_cli_request
from cairn.server.mcp_tools import _search_arguments


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
