"""The ``cairn`` command line: a thin adapter that parses, calls one core function, formats."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from cairn.errors import CairnError

__all__ = ["app", "graph_app", "main"]

app = typer.Typer(
    name="cairn",
    help="Cairn: a semantic graph and document database for code and knowledge.",
    no_args_is_help=True,
    add_completion=False,
)
graph_app = typer.Typer(help="Inspect and convert graph artifacts.", no_args_is_help=True)
app.add_typer(graph_app, name="graph")

JsonFlag = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]


def emit_json(data: Any) -> None:
    """Print ``data`` as indented JSON on stdout."""
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False))


def fail(error: CairnError) -> None:
    """Report a Cairn error on stderr and exit with status 1."""
    Console(stderr=True).print(f"[bold red]error[/] [{error.code}] {error.message}")
    raise typer.Exit(code=1)


@app.command()
def demo(as_json: JsonFlag = False) -> None:
    """Build the bundled demo graph and print its counts and integrity receipt."""
    from cairn.demo import build_demo_graph, demo_summary

    summary = demo_summary(build_demo_graph())
    if as_json:
        emit_json(summary)
        return
    console = Console()
    counts = Table(title="Semantic graph (demo fixture)")
    counts.add_column("count")
    counts.add_column("value", justify="right")
    for name, value in summary["counts"].items():
        counts.add_row(name, str(value))
    console.print(counts)
    relations = Table(title="Facts by relation")
    relations.add_column("relation")
    relations.add_column("facts", justify="right")
    for name, value in summary["facts_by_relation"].items():
        relations.add_row(name, str(value))
    console.print(relations)
    console.print("[bold]Integrity receipt[/] (storage only):")
    console.print_json(data=summary["receipt"])


def main() -> None:
    """Console-script entry point."""
    app()
