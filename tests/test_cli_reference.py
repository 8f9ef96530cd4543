"""docs/cli.md is exactly what the commands say about themselves."""

import re
from pathlib import Path

from typer.testing import CliRunner

from cairn.cli import app
from cairn.cli_reference import render_cli_reference

DOC = Path(__file__).resolve().parents[1] / "docs" / "cli.md"


def test_cli_reference_is_up_to_date() -> None:
    assert DOC.read_text("utf-8") == render_cli_reference(), (
        "docs/cli.md is stale: run `python -m cairn.cli_reference > docs/cli.md`"
    )


def test_documented_commands_are_the_commands_in_help() -> None:
    result = CliRunner().invoke(app, ["--help"])
    assert result.exit_code == 0
    documented = set(re.findall(r"^## `cairn ([\w-]+)", DOC.read_text("utf-8"), re.MULTILINE))
    for command in documented:
        assert command in result.output, command
    for command in ("index", "search", "sql", "load", "mcp", "serve", "stats", "demo", "graph"):
        assert command in documented
