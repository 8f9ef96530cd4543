"""The readable summary of ``cairn index``: tables and lines on a rich console.

Kept apart from the pipeline (``cairn.codegraph.console``) so that printing a summary a
running ``cairn watch`` sent (``cairn.codegraph.handoff``) imports nothing of the index.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

__all__ = ["print_repairs", "print_summary"]


def print_repairs(console: Console, repaired: Sequence[Mapping[str, str]]) -> None:
    """Name every damaged record a load rewrote (nothing when there were none)."""
    if not repaired:
        return
    console.print(
        f"[bold yellow]repaired {len(repaired)} damaged stored record(s)[/] "
        "(checksum failed; rewritten from the graph):"
    )
    for item in repaired:
        console.print(f"  {item['table']} {item['resource']}/{item['id']}")


def _table(title: str, header: str, rows: dict[str, Any]) -> Table:
    table = Table(title=title)
    table.add_column(header)
    table.add_column("count", justify="right")
    for name, value in rows.items():
        table.add_row(name, str(value))
    return table


def print_summary(console: Console, summary: dict[str, Any]) -> None:
    """Readable tables: files by language and outcome, nodes, facts, calls, totals."""
    files = Table(title="Files by language and outcome")
    files.add_column("language")
    files.add_column("outcome")
    files.add_column("files", justify="right")
    for language, outcomes in summary["files"].items():
        for outcome, value in outcomes.items():
            files.add_row(language, outcome, str(value))
    console.print(files)
    # A running watch's summary of a round that found nothing changed has no tallies.
    if "nodes_by_kind" in summary:
        console.print(_table("Nodes by kind", "kind", summary["nodes_by_kind"]))
        console.print(_table("Facts by relation", "relation", summary["facts_by_relation"]))
    console.print(_table("Call sites", "resolution", summary["calls"]))
    counts = summary["counts"]
    share = summary.get("stable_fact_share")
    stable = "" if share is None else f"stable x stable facts {share:.2%}; "
    console.print(
        f"[bold]{counts['node_count']}[/] nodes, [bold]{counts['fact_count']}[/] facts, "
        f"[bold]{counts['endpoint_pair_count']}[/] endpoint pairs, "
        f"[bold]{counts['occurrence_count']}[/] occurrences; {stable}"
        f"unresolved calls {summary['unresolved_calls']}; "
        f"{summary['seconds']:.2f} s with {summary['workers']} worker(s)"
    )
    problems = summary.get("problems", [])
    if problems:
        table = Table(title="Files not fully indexed")
        for column in ("path", "outcome", "error"):
            table.add_column(column)
        for row in problems:
            table.add_row(row["path"], row["outcome"], row["error"] or "")
        console.print(table)
    cache = summary.get("cache")
    if cache is not None:
        note = f"; emptied first: {cache['reset']}" if cache["reset"] else ""
        damaged = f", {cache['damaged']} damaged rows parsed again" if cache["damaged"] else ""
        console.print(
            f"extraction cache: {cache['hits']} files reused, {cache['misses']} parsed"
            f"{damaged}{note}"
        )
    watch = summary.get("watch")
    if watch is not None and watch.get("round") is not None:
        console.print(
            f"indexed by the running cairn watch (pid {watch['pid']}, its round {watch['round']})"
        )
    if summary.get("unchanged"):
        console.print(
            "nothing changed since the last index (the files, Cairn and the options are "
            f"as they were): kept {summary['graph_path']} and {summary['manifest_path']}"
        )
    else:
        console.print(f"wrote {summary['graph_path']} and {summary['manifest_path']}")
    spent = summary.get("phase_seconds")
    if spent:
        parts = (f"{name} {value:.2f} s" for name, value in spent.items())
        console.print("time: " + ", ".join(parts))
    if "load" in summary:
        load = summary["load"]
        state = f"{load['changes']} changes" if load["changes"] else "already up to date"
        console.print(
            f"loaded {load['db']}: {state} (position {load['position']}; "
            f"compared {load['compared']})"
        )
        print_repairs(console, load["repaired"])
