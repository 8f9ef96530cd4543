"""The ``cairn`` command line: a thin adapter that parses, calls one core function, formats."""

from __future__ import annotations

import atexit
import contextlib
import json
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from cairn.errors import CairnError, ConflictError, NotFoundError
from cairn.orphans import exit_flushed, leave_at_once, running_children
from cairn.store.limits import DEFAULT_GRAPH

if TYPE_CHECKING:
    from cairn.codegraph.beside import WatchBeside

__all__ = ["app", "graph_app", "keys_app", "main"]

app = typer.Typer(
    name="cairn",
    help="Cairn: a semantic graph and document database for code and knowledge.",
    no_args_is_help=True,
    add_completion=False,
)
graph_app = typer.Typer(help="Inspect and convert graph artifacts.", no_args_is_help=True)
app.add_typer(graph_app, name="graph")
keys_app = typer.Typer(help="List, mint and revoke API keys of a database.", no_args_is_help=True)
app.add_typer(keys_app, name="keys")


def _print_version(value: bool) -> None:
    if value:
        from cairn import __version__

        typer.echo(f"cairn {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", help="Print the version and exit.", callback=_print_version, is_eager=True
        ),
    ] = False,
) -> None:
    """Cairn: a semantic graph and document database for code and knowledge."""


JsonFlag = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]


def emit_json(data: Any) -> None:
    """Print ``data`` as indented JSON on stdout."""
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False))


def fail(error: CairnError) -> None:
    """Report a Cairn error on stderr and exit with status 1."""
    # Escaped: "[validation]" would otherwise be read as rich markup and vanish.
    Console(stderr=True, soft_wrap=True).print(
        f"[bold red]error[/] {escape(f'[{error.code}] {error.message}')}"
    )
    raise typer.Exit(code=1)


@app.command()
def demo(
    path: Annotated[str, typer.Argument(help="Repository to index (default: here).")] = ".",
    fixture: Annotated[
        bool, typer.Option("--fixture", help="Only build the small bundled fixture graph.")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Index a repository, load it, run example searches, and ask who calls its most called
    symbol and what depends on it."""
    if fixture:
        _fixture_demo(as_json)
        return
    from cairn.demo_repo import run_repository_demo
    from cairn.search.wire import to_json, to_wire

    console = Console(stderr=as_json)
    try:
        with console.status("Indexing and loading..."):
            run = run_repository_demo(path)
    except CairnError as error:
        fail(error)
        return
    if as_json:
        emit_json(
            {
                "index": run.index,
                "load": run.load,
                "searches": [
                    {"title": s.title, "request": s.request, "result": to_wire(s.result)}
                    for s in run.searches
                ],
                "callers": None if run.callers is None else to_json(run.callers),
                "impact": None if run.impact is None else to_json(run.impact),
            }
        )
        return
    counts = run.index["counts"]
    console.print(
        f"[bold]Indexed[/] {escape(path)}: {counts['node_count']} nodes, "
        f"{counts['fact_count']} facts, {counts['occurrence_count']} occurrences "
        f"in {run.index['seconds']} s"
    )
    console.print(
        f"[bold]Loaded[/] {run.load['changes']} changes at position {run.load['position']}"
    )
    for search in run.searches:
        console.print(f"\n[bold]{search.title}[/]  [dim]{escape(search.request)}[/]")
        _print_result(search.result, title=search.title)
    if run.callers is not None and run.callers.resolution.match is not None:
        symbol = run.callers.resolution.match.ref.id
        console.print(
            f"\n[bold]Who calls the most called symbol[/]  [dim]cairn callers {escape(symbol)}[/]"
        )
        _print_calls(run.callers, limit=DEMO_SHOWN)
    if run.impact is not None:
        symbol = run.impact.resolution.match.ref.id if run.impact.resolution.match else ""
        console.print(f"\n[bold]What depends on it[/]  [dim]cairn impact {escape(symbol)}[/]")
        _print_impact(run.impact)


DEMO_SHOWN = 10
"""Callers the demo prints (the JSON keeps every one)."""

NO_PRIOR = "none"
"""``cairn search --prior none``: fuse without a kind prior."""


def _fixture_demo(as_json: bool) -> None:
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


OutOption = Annotated[
    str | None, typer.Option("--out", help="Output folder (default PATH/.cairn).")
]
WorkersOption = Annotated[
    int | None,
    typer.Option(
        "--workers",
        help="Extraction processes (default: CPUs; batches under 512 KiB parse in-process).",
    ),
]
ExcludeOption = Annotated[
    list[str] | None, typer.Option("--exclude", help="Gitignore-style glob to skip.")
]
EmbedderOption = Annotated[
    str | None,
    typer.Option(
        "--embedder",
        help="Embedder of the symbol vectors: hashing (default), wordllama (pip install "
        "'cairn\\[static]'), minilm (pip install 'cairn\\[models]'), "
        "sentence-transformers:PATH. Default: the one the existing index was built with.",
    ),
]
NoLoadOption = Annotated[
    bool, typer.Option("--no-load", help="Only write graph.cairn; do not load cairn.db.")
]


@app.command("index")
def index_command(
    path: Annotated[str, typer.Argument(help="Repository to index.")] = ".",
    out: OutOption = None,
    workers: WorkersOption = None,
    exclude: ExcludeOption = None,
    generated_at: Annotated[
        str | None, typer.Option("--generated-at", help="Fixed timestamp for the artifact.")
    ] = None,
    no_load: NoLoadOption = False,
    embedder: EmbedderOption = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Index whole even when nothing changed since the last run (which is "
            "otherwise said and skipped); a load also rewrites damaged records.",
        ),
    ] = False,
    no_daemon: Annotated[
        bool,
        typer.Option(
            "--no-daemon",
            help="Leave no background cairn watch behind (also CAIRN_DAEMON=0; none is "
            "started where CI is set). It keeps the index fresh and answers the next "
            "cairn index in under a second; it exits after 30 min without one.",
        ),
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Build the semantic graph of PATH, write graph.cairn and load it into cairn.db."""
    from cairn.codegraph.handoff import (
        STOP_BACKGROUND,
        ask_to_index,
        ask_to_stop,
        folder_of,
        raise_problem,
    )

    try:
        # A `cairn watch` of this folder indexes for us (``cairn.codegraph.handoff``).
        reply = None
        if force:  # a background watch's memory would outlive what --force rewrites
            ask_to_stop(folder_of(path, out), STOP_BACKGROUND)
        else:
            with _watch_progress(not as_json) as shown:
                reply = ask_to_index(
                    path,
                    out,
                    excludes=exclude or (),
                    generated_at=generated_at,
                    load=not no_load,
                    embedder=embedder,
                    on_progress=shown,
                )
        refused = None
        if reply is not None:
            if isinstance(reply.get("error"), dict):
                raise_problem(reply["error"])
            if isinstance(reply.get("summary"), dict):
                watch = {"pid": reply.get("pid"), "round": reply.get("round")}
                _print_index_summary({**reply["summary"], "watch": watch}, as_json)
                return
            why = "unanswered" if "unanswered" in reply else "refused"
            refused = {"pid": reply.get("pid"), why: reply.get(why)}
            if not as_json:
                Console().print(escape(_refused_line(refused)))
            if reply.get("background") is True:  # the new options' watch replaces it
                ask_to_stop(folder_of(path, out), STOP_BACKGROUND)
        from cairn.codegraph.console import index_and_write

        summary = index_and_write(
            path,
            out=out,
            workers=workers,
            excludes=exclude or (),
            generated_at=generated_at,
            as_json=as_json,
            load=not no_load,
            embedder=embedder,
            force=force,
        )
        daemon = None
        if not no_daemon:
            from cairn.codegraph.daemon import IndexOptions, leave_daemon

            options = IndexOptions(path, out, workers, tuple(exclude or ()), not no_load, embedder)
            daemon = leave_daemon(options, generated_at=generated_at)
    except CairnError as error:
        fail(error)
        return
    if as_json:
        extra = {} if refused is None else {"watch": refused}
        emit_json({**summary, **extra, **({} if daemon is None else {"daemon": daemon})})
    elif daemon is not None and daemon.get("started"):
        Console().print(escape(_daemon_line(daemon)))


def _daemon_line(daemon: Mapping[str, Any]) -> str:
    """What ``cairn index`` says of the background watch it left."""
    minutes = float(daemon["idle_exit_seconds"]) / 60
    return (
        f"A background cairn watch (pid {daemon['pid']}) keeps this index fresh and "
        f"answers the next cairn index; it exits after {minutes:g} min without one "
        f"(log: {daemon['log']}; stop it with cairn watch --stop, or pass --no-daemon)."
    )


def _print_index_summary(summary: Mapping[str, Any], as_json: bool) -> None:
    """A summary ``cairn index`` did not print itself (a running watch's round)."""
    if as_json:
        emit_json(summary)
        return
    from cairn.codegraph.report import print_summary

    print_summary(Console(), dict(summary))


def _refused_line(watch: Mapping[str, Any]) -> str:
    """What ``cairn index`` says when the running watch would not (or did not) index
    for it."""
    if "unanswered" in watch:
        return (
            f"a cairn watch (pid {watch['pid']}) keeps this index, but did not answer "
            f"({watch['unanswered']}): indexing in this process"
        )
    return (
        f"a cairn watch (pid {watch['pid']}) keeps this index, but not with these options "
        f"({watch['refused']}): indexing in this process"
    )


@contextlib.contextmanager
def _watch_progress(wanted: bool) -> Iterator[Callable[[Mapping[str, Any]], None] | None]:
    """On a terminal, a status line on stderr while a running watch works for ``cairn
    index`` (``waiting for cairn watch (pid N): round R``), shown from its first progress
    line (a second in) and gone before the summary; else nothing."""
    console = Console(stderr=True)
    if not wanted or not console.is_terminal:
        yield None
        return
    status = console.status("waiting for cairn watch")
    shown = False

    def show(line: Mapping[str, Any]) -> None:
        nonlocal shown
        status.update(
            escape(f"waiting for cairn watch (pid {line.get('pid')}): {line.get('progress')}")
        )
        if not shown:
            status.start()
            shown = True

    try:
        yield show
    finally:
        if shown:
            status.stop()


@app.command("watch")
def watch_command(
    path: Annotated[str, typer.Argument(help="Repository to watch.")] = ".",
    out: OutOption = None,
    workers: WorkersOption = None,
    exclude: ExcludeOption = None,
    debounce: Annotated[
        int,
        typer.Option(
            "--debounce",
            help="Longest a batch of file events gathers, in ms (20 ms with no event end it).",
        ),
    ] = 100,
    no_load: NoLoadOption = False,
    embedder: EmbedderOption = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON record per round (JSON Lines).")
    ] = False,
    idle_exit: Annotated[
        float | None,
        typer.Option(
            "--idle-exit",
            help="End once no cairn index asked for a round for this many seconds, or once "
            "the index folder or PATH is removed (the background watch cairn index leaves).",
        ),
    ] = None,
    stop_running: Annotated[
        bool,
        typer.Option("--stop", help="Stop the cairn watch keeping PATH's index, and wait for it."),
    ] = False,
) -> None:
    """Index PATH, then re-index and load what changed after every batch of file edits."""
    if stop_running:
        _stop_watch(path, out, as_json)
        return
    from cairn.codegraph.watch import watch_repository

    console = Console()
    stop = threading.Event()

    def report(record: Mapping[str, Any]) -> None:
        if as_json:
            typer.echo(json.dumps(record, ensure_ascii=False, sort_keys=True))
        else:
            console.print(_watch_line(record))

    def left(reason: str) -> None:
        if as_json:
            typer.echo(json.dumps({"left": reason}, ensure_ascii=False))
        else:
            console.print(escape(f"watch ended: {reason}"))

    try:
        with _stopped_by_sigterm(stop):
            watch_repository(
                path,
                on_round=report,
                out=out,
                workers=workers,
                excludes=exclude or (),
                debounce_ms=debounce,
                load=not no_load,
                console=None if as_json else console,
                embedder=embedder,
                stop=stop,
                idle_exit=idle_exit,
                on_leave=left,
            )
    except CairnError as error:
        fail(error)


def _stop_watch(path: str, out: str | None, as_json: bool) -> None:
    """``cairn watch --stop``: ask the watch keeping the index folder to end, wait until
    it did; a clear error when none runs or it does not end."""
    from cairn.codegraph.handoff import STOP_ANY, ask_to_stop, folder_of

    folder = folder_of(path, out)
    reply = ask_to_stop(folder, STOP_ANY)
    if reply is None:
        fail(NotFoundError(f"no cairn watch keeps {folder}", details={"folder": str(folder)}))
        return
    if not reply.get("stopped"):
        why = reply.get("refused") or reply.get("unanswered") or "it did not answer"
        fail(ConflictError(f"the cairn watch (pid {reply.get('pid')}) did not stop: {why}"))
        return
    if as_json:
        emit_json({"stopped": True, "pid": reply.get("pid"), "folder": str(folder)})
    else:
        Console().print(escape(f"stopped the cairn watch (pid {reply.get('pid')}) of {folder}"))


@contextlib.contextmanager
def _stopped_by_sigterm(stop: threading.Event) -> Iterator[None]:
    """SIGTERM (a service manager, ``kill``) sets ``stop`` for the block: the watch ends
    after the round it is running, closes its socket and database, and exits 0, where
    the default action ended it mid-round and left its socket behind."""
    with _on_signal(signal.SIGTERM, lambda signum, frame: stop.set()):
        yield


@contextlib.contextmanager
def _on_signal(signum: int, handler: Callable[[int, Any], None]) -> Iterator[None]:
    """``handler`` answers ``signum`` for the block, in the main thread only (signal
    handlers belong to it; tests call the CLI on others, where nothing is installed)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signum, handler)
    try:
        yield
    finally:
        signal.signal(signum, previous)


def _watch_line(record: Mapping[str, Any]) -> str:
    """One readable line per round of ``cairn watch``."""
    error = record.get("error")
    if error is not None:
        return escape(
            f"round {record['round']} failed ({error['code']}): {error['message']}; "
            f"trying again in {error['retry_seconds']:.0f} s or at the next edit"
        )
    files = record["files"]
    if record["round"] == 0:
        counts = record["counts"] or {}
        head = f"indexed: {counts.get('node_count', 0)} nodes, {counts.get('fact_count', 0)} facts"
    else:
        parts = [
            f"{len(files[key])} {key}" + (f" ({', '.join(files[key][:3])})" if files[key] else "")
            for key in ("changed", "added", "removed")
        ]
        asked = record.get("asked_by")
        label = f" (for cairn index, pid {asked['pid']})" if asked else ""
        head = f"round {record['round']}{label}: " + ", ".join(parts)
    python = record.get("python_rounds")
    if record["round"] and python and python["modules"]:
        head += f"; python {python['emission']}/{python['modules']} modules re-resolved"
    load = record["load"]
    if load is not None:
        state = f"{load['changes']} changes" if load["changes"] else "up to date"
        head += f"; db {state}, position {load['position']}"
    problems = record["problems"]
    if problems:
        head += f"; not fully indexed: {', '.join(p['path'] for p in problems[:3])}"
    searchable = record.get("searchable_seconds")
    if searchable is not None:  # the commit comes before graph.cairn is written
        return escape(f"{head}; searchable in {searchable:.2f} s, {record['seconds']:.2f} s in all")
    return escape(f"{head}; {record['seconds']:.2f} s")


@app.command("load")
def load_command(
    file: Annotated[str, typer.Argument(help="The graph.cairn to load.")],
    db: Annotated[
        str | None,
        typer.Option("--db", help="Database file (default: .cairn/cairn.db here or above)."),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Load a graph.cairn into a database as one atomic diff (documents, vectors, facts)."""
    from cairn.artifact.reader import read_artifact
    from cairn.codegraph.console import print_repairs
    from cairn.index import open as open_database
    from cairn.store.load import load_semantic_graph, load_summary, repair_collector
    from cairn.store.locate import resolve_database

    repaired: list[dict[str, str]] = []
    try:
        target = resolve_database(db, artifact=file)
        loaded = read_artifact(file)
        with open_database(target) as database:
            before = database.position
            receipt = load_semantic_graph(
                database, loaded.graph, on_repair=repair_collector(repaired)
            )
    except CairnError as error:
        fail(error)
        return
    changes = load_summary(receipt, before=before)
    summary = {"file": file, "db": str(target), **changes, "repaired": repaired}
    if as_json:
        emit_json(summary)
        return
    print_repairs(Console(stderr=True), repaired)
    table = Table(title=f"Loaded {file} into {target}")
    table.add_column("change")
    table.add_column("count", justify="right")
    for kind, count in summary["mutations"].items():
        table.add_row(kind, str(count))
    console = Console()
    console.print(table if summary["changes"] else "[bold]Up to date[/]: nothing changed.")
    console.print(f"position {summary['position']}")


DbOption = Annotated[
    str | None,
    typer.Option("--db", help="Database file (default: .cairn/cairn.db here or above)."),
]


def _parse_seed(text: str) -> tuple[str, str]:
    """``COLLECTION:ID`` -> (collection, id); IDs may themselves contain colons."""
    collection, sep, doc_id = text.partition(":")
    if not sep or not collection or not doc_id:
        raise typer.BadParameter(f"expected COLLECTION:ID, got {text!r}")
    return collection, doc_id


def _parse_param(text: str) -> tuple[str, object]:
    """``name=JSON`` -> (name, value)."""
    name, sep, raw = text.partition("=")
    if not sep or not name:
        raise typer.BadParameter(f"expected NAME=JSON, got {text!r}")
    try:
        return name.lstrip("@"), json.loads(raw)
    except json.JSONDecodeError as exc:
        raise typer.BadParameter(f"parameter {name!r} is not JSON: {exc.msg}") from exc


def _no_hits(kinds: list[str] | None, paths: list[str] | None, exclude_tests: bool) -> str:
    """What to say for an empty answer: the filters that kept hits out, if any (a
    mistyped ``--kind fucntion`` otherwise reads as nothing matching the words)."""
    kept = [
        *([f"of kind {', '.join(map(repr, kinds))}"] if kinds else []),
        *([f"under {', '.join(map(repr, paths))}"] if paths else []),
        *(["outside test code"] if exclude_tests else []),
    ]
    said = f" among the nodes {' and '.join(kept)}" if kept else ""
    return f"No hits{said}."


def _print_result(result: Any, *, title: str, empty: str = "No hits.") -> None:
    """Render graph-search hits (and context) as rich tables; ``empty`` when none."""
    from cairn.search.present import context_table, hit_table

    console = Console()
    if not result.hits:
        console.print(f"[bold]{escape(empty)}[/]")
    else:
        _print_rows(console, title, *hit_table(result.hits), head=("#", "score", "name"))
    if result.expansion is not None and result.expansion.documents:
        columns, rows = context_table(result.expansion.documents)
        _print_rows(console, "Context (expansion)", columns, rows, head=("hops", "name"))


_UNBOUNDED_WIDTH = 1 << 16
"""A width no table reaches: what a table measures before the terminal folds it."""


def _print_rows(
    console: Console,
    title: str,
    columns: tuple[str, ...],
    rows: list[tuple[str, ...]],
    *,
    head: tuple[str, ...],
) -> None:
    """``rows`` as a table where it fits the terminal, else one block per row: the
    ``head`` columns on its first line, every other one on a line of its own.

    Folded into a narrow table, an ID and a path break across lines where no one can
    copy them (an ID is the next ``--seed``); a line of its own keeps each whole."""
    table = Table(title=title)
    for column in columns:
        table.add_column(
            column, justify="right" if column in ("#", "score") else "left", overflow="fold"
        )
    for row in rows:
        table.add_row(*row)
    unbounded = console.options.update_width(_UNBOUNDED_WIDTH)
    if console.measure(table, options=unbounded).maximum <= console.width:
        console.print(table)
        return
    console.print(f"[bold]{escape(title)}[/]")
    first = [index for index, column in enumerate(columns) if column in head]
    rest = [index for index, column in enumerate(columns) if column not in head]
    label = max((len(columns[index]) for index in rest), default=0)
    for row in rows:
        console.print("  ".join(escape(row[index]) for index in first), soft_wrap=True)
        for index in rest:
            if row[index]:
                name = columns[index].ljust(label)
                console.print(f"    [dim]{name}[/]  {escape(row[index])}", soft_wrap=True)


KindOption = Annotated[
    list[str] | None, typer.Option("--kind", help="Only nodes of this kind (repeatable).")
]
PathOption = Annotated[
    list[str] | None, typer.Option("--path", help="Only nodes whose path matches this glob.")
]
ExcludeTestsOption = Annotated[
    bool, typer.Option("--exclude-tests", help="Leave out test code (path conventions).")
]


def _tuple(values: list[str] | None) -> tuple[str, ...] | None:
    return None if not values else tuple(values)


def _search_defaults(database: Any, collection: str, hybrid: bool) -> tuple[str, float, str | None]:
    """The text field ``cairn search`` ranks ``collection`` by, the vector weight it
    fuses with, and (when ``hybrid``) why the database cannot embed a query of it here
    (None: it can), from one read cut."""
    from cairn.search.embedding import embedding_unavailable
    from cairn.search.present import code_text_field, code_vector_weight

    with database.read_cut() as cut:
        field: str = code_text_field(cut, collection)
        weight: float = code_vector_weight(cut, collection)
        reason: str | None = embedding_unavailable(cut, collection) if hybrid else None
    return field, weight, reason


@app.command("search")
def search_command(
    text: Annotated[str | None, typer.Argument(help="Words to search for (BM25).")] = None,
    seed: Annotated[
        list[str] | None,
        typer.Option("--seed", help="Rank by graph distance from COLLECTION:ID (repeatable)."),
    ] = None,
    scope_seed: Annotated[
        list[str] | None,
        typer.Option("--scope-seed", help="Only hits reachable from COLLECTION:ID (repeatable)."),
    ] = None,
    depth: Annotated[int, typer.Option("--depth", help="Walk depth for seeds.")] = 3,
    labels: Annotated[
        str | None, typer.Option("--labels", help="Relations to follow, comma separated.")
    ] = None,
    expand: Annotated[
        int | None, typer.Option("--expand", help="Add context N hops around the hits.")
    ] = None,
    collection: Annotated[str, typer.Option("--collection", help="Collection searched.")] = (
        "symbols"
    ),
    graph: Annotated[str, typer.Option("--graph", help="Graph walked.")] = DEFAULT_GRAPH,
    limit: Annotated[int, typer.Option("--limit", help="Hits to return.")] = 10,
    explain: Annotated[bool, typer.Option("--explain", help="Show why each hit ranks.")] = False,
    text_only: Annotated[
        bool, typer.Option("--text-only", help="BM25 only: skip the embedding branch.")
    ] = False,
    fusion_k: Annotated[
        int,
        typer.Option("--fusion-k", help="RRF k of the fusion (API requests default to 60)."),
    ] = 10,  # cairn.search.present.CODE_FUSION_K (a test holds them equal; imported lazily)
    prior: Annotated[
        str,
        typer.Option(
            "--prior",
            help="Kind prior of the fused scores: code_kinds_v1 (module variables and "
            "definitions local to a function weigh 0.6), or none.",
        ),
    ] = "code_kinds_v1",  # cairn.search.priors.CODE_PRIOR (a test holds them equal)
    kind: KindOption = None,
    path: PathOption = None,
    exclude_tests: ExcludeTestsOption = False,
    db: DbOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Hybrid search: text and embedding, plus graph retrieval (--seed), scope, expansion;
    --kind, --path and --exclude-tests keep only the hits that pass, before ranking.
    Each hit prints with its ID (a --seed), name and path:line: as a table, or one block
    per hit where the table would not fit the terminal."""
    from cairn.database import open as open_database
    from cairn.search.present import build_cli_request
    from cairn.search.wire import to_wire
    from cairn.store.locate import resolve_database

    try:
        target = resolve_database(db)
        with open_database(target) as database:
            # Hybrid unless asked not to; text only, said so, where no embedder fits.
            field, weight, reason = _search_defaults(
                database, collection, bool(text) and not text_only
            )
            embed = bool(text) and not text_only and reason is None
            request = build_cli_request(
                database=database.name,
                collection=collection,
                text=text,
                seeds=[_parse_seed(item) for item in seed or ()],
                scope_seeds=[_parse_seed(item) for item in scope_seed or ()],
                graph=graph,
                depth=depth,
                labels=None if labels is None else tuple(filter(None, labels.split(","))),
                expand=expand,
                limit=limit,
                explain=explain,
                embed=embed,
                kinds=_tuple(kind),
                paths=_tuple(path),
                exclude_tests=exclude_tests,
                fusion_k=fusion_k,
                text_field=field,
                vector_weight=weight,
                prior=None if prior == NO_PRIOR else prior,
            )
            if request.scope is None and request.retriever is None and request.expansion is None:
                hits = database.search(request.search)
                result: Any = _PlainResult(tuple(hits))
            else:
                result = database.graph_search(request)
    except CairnError as error:
        fail(error)
        return
    if as_json:
        body = to_wire(result) if not isinstance(result, _PlainResult) else result.to_json()
        emit_json(body if reason is None else {**body, "text_only": reason})
        return
    if reason is not None:
        Console(stderr=True).print(escape(f"text only: {reason}"))
    _print_result(result, title=f"Search {collection!r}", empty=_no_hits(kind, path, exclude_tests))


class _PlainResult:
    """Plain-search hits shaped like a graph-search result for printing."""

    def __init__(self, hits: tuple[Any, ...]) -> None:
        self.hits = hits
        self.expansion = None

    def to_json(self) -> dict[str, Any]:
        from cairn.search.wire import to_json

        return {"hits": [to_json(hit) for hit in self.hits]}


NEAR_NAMES_SHOWN = 5
"""Symbols named like a dotted name's last part that ``not_found`` lists."""


def _same_last_name(database: Any, name: str) -> str:
    """For a dotted name nothing answers to (``JobSlots.take``), the symbols its last part
    names (``; named 'take': cairn.sql.parser._Parser.take``), else ""."""
    from cairn.search.names import resolve_last_part

    with database.read_cut() as cut:
        found = resolve_last_part(cut, name)
    if found is None:
        return ""
    near = [found.match] if found.match is not None else list(found.candidates)
    shown = [item.qualified_name or item.ref.id for item in near[:NEAR_NAMES_SHOWN]]
    if not shown:
        return ""
    more = f" and {found.total - len(shown)} more" if found.total > len(shown) else ""
    return f"; named {found.query!r}: {', '.join(shown)}{more}"


def _named_answer(name: str, db: str | None, as_json: bool, run: Any, show_answer: Any) -> None:
    """Open the database, ``run(database)`` for an answer about ``name``, and print it
    (JSON, or ``show_answer(answer)``); an unknown name is ``not_found`` (exit 1)."""
    from cairn.database import open as open_database
    from cairn.errors import NotFoundError
    from cairn.search.wire import to_json
    from cairn.store.locate import resolve_database

    try:
        with open_database(resolve_database(db)) as database:
            answer = run(database)
            missing = answer.resolution.status == "not_found"
            near = _same_last_name(database, name) if missing else ""
        if missing:
            raise NotFoundError(f"no symbol named {name!r}{near}", details={"name": name})
    except CairnError as error:
        fail(error)
        return
    if as_json:
        emit_json(to_json(answer))
        return
    show_answer(answer)


def _calls_command(request: Any, db: str | None, as_json: bool) -> None:
    """``cairn callers`` / ``cairn callees``: resolve, walk ``calls``, print the sites."""
    from dataclasses import replace

    from cairn.search.calls import calls

    def run(database: Any) -> Any:
        return calls(database, replace(request, database=database.name))

    _named_answer(request.name, db, as_json, run, _print_calls)


def _print_calls_candidates(resolution: Any) -> None:
    """The candidates of an ambiguous name, one per line, best first."""
    console = Console(soft_wrap=True)
    console.print(
        escape(f"{resolution.query!r} is ambiguous: {resolution.total} symbols match; "
               "name one of them (a longer dotted name or its ID):")
    )  # fmt: skip
    for item in resolution.candidates:
        line = f"  {item.kind or '?':<8} {item.qualified_name}  {item.location}  [{item.ref.id}]"
        console.print(escape(line))


def _print_calls(answer: Any, limit: int | None = None) -> None:
    console = Console(soft_wrap=True)
    resolution = answer.resolution
    if resolution.match is None:
        _print_calls_candidates(resolution)
        return
    match = resolution.match
    console.print(
        escape(f"{answer.direction} of {match.qualified_name or match.ref.id} "
               f"({match.ref.id}; {match.tier} match): {len(answer.edges)}")
    )  # fmt: skip
    shown = answer.edges if limit is None else answer.edges[:limit]
    for edge in shown:
        other = edge.caller if answer.direction == "callers" else edge.callee
        label = edge.other_name or other.id
        sites = ", ".join(f"{site.file}:{site.line}" for site in edge.evidence.sites)
        more = edge.evidence.total - len(edge.evidence.sites)
        extra = f" (+{more} more)" if more > 0 else ""
        hops = f" [{edge.hops} hops]" if edge.hops > 1 else ""
        console.print(escape(f"  {label}{hops}  {sites}{extra}"))
    if len(shown) < len(answer.edges):
        console.print(escape(f"  ... and {len(answer.edges) - len(shown)} more"))


def _calls_cli(command: str, direction: Literal["callers", "callees"], doc: str) -> None:
    """Register ``cairn callers`` or ``cairn callees`` (the same options, one walk)."""

    def run(
        name: Annotated[str, typer.Argument(help="A symbol: name, dotted name or document ID.")],
        depth: Annotated[int, typer.Option("--depth", help="Calls away to walk.")] = 1,
        sites: Annotated[int, typer.Option("--sites", help="Call sites shown per edge.")] = 5,
        graph: Annotated[str, typer.Option("--graph", help="Graph walked.")] = DEFAULT_GRAPH,
        kind: KindOption = None,
        path: PathOption = None,
        exclude_tests: ExcludeTestsOption = False,
        db: DbOption = None,
        as_json: JsonFlag = False,
    ) -> None:
        from cairn.search.calls import CallsRequest

        request = CallsRequest(
            "", name, direction, depth, sites, graph, _tuple(kind), _tuple(path), exclude_tests
        )
        _calls_command(request, db, as_json)

    run.__doc__ = doc
    run.__name__ = f"{command}_command"
    app.command(command)(run)


_calls_cli(
    "callers", "callers", "Who calls NAME: each caller with the file:line of its call sites."
)
_calls_cli(
    "callees", "callees", "What NAME calls: each callee with the file:line of the call sites."
)


@app.command("show")
def show_command(
    name: Annotated[str, typer.Argument(help="A symbol: name, dotted name or document ID.")],
    root: Annotated[
        str | None, typer.Option("--root", help="Checkout the index was built from.")
    ] = None,
    max_bytes: Annotated[
        int, typer.Option("--max-bytes", help="Source bytes shown at most.")
    ] = 16_000,
    db: DbOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Show NAME: where it is, its signature, and its source lines (or why not: stale)."""
    from cairn.search.show import show

    def run(database: Any) -> Any:
        return show(database, name, root=root, max_bytes=max_bytes)

    _named_answer(name, db, as_json, run, lambda answer: _print_show(answer, max_bytes))


def _print_show(answer: Any, max_bytes: int) -> None:
    if answer.document is None:
        _print_calls_candidates(answer.resolution)
        return
    console = Console(soft_wrap=True)
    body = answer.document.body
    line = (body.get("range") or [None])[0]
    where = f"{body.get('path')}:{line}" if line is not None else f"{body.get('path')}"
    console.print(escape(f"{body.get('kind')} {body.get('qualified_name')}  {where}"))
    partial = body.get("partial_parse")
    if partial:  # the file parsed only in part: what is shown may miss what was broken
        detail = (
            f": line {partial.get('line')}: {partial.get('error')}"
            if isinstance(partial, Mapping)
            else ""
        )
        console.print(escape(f"parsed in part{detail}"))
    if answer.source is None:
        console.print(escape(f"no source shown: {answer.reason}"))
        return
    if answer.reason:
        console.print(escape(f"note: {answer.reason}"))
    source = answer.source
    for number, line in enumerate(source.lines, start=source.start):
        console.print(escape(f"{number:>6}  {line}"), highlight=False)
    if source.truncated:
        console.print(escape(f"... cut at {max_bytes} bytes (--max-bytes)"))


@app.command("impact")
def impact_command(
    name: Annotated[str, typer.Argument(help="A symbol: name, dotted name or document ID.")],
    depth: Annotated[int, typer.Option("--depth", help="Hops of dependents to walk.")] = 3,
    relations: Annotated[
        str | None, typer.Option("--relations", help="Relations followed, comma separated.")
    ] = None,
    max_vertices: Annotated[
        int, typer.Option("--max-vertices", help="Dependents examined at most.")
    ] = 2_000,
    max_edges: Annotated[int, typer.Option("--max-edges", help="Edges examined at most.")] = 20_000,
    top: Annotated[int, typer.Option("--top", help="Dependents listed.")] = 20,
    graph: Annotated[str, typer.Option("--graph", help="Graph walked.")] = DEFAULT_GRAPH,
    kind: KindOption = None,
    path: PathOption = None,
    exclude_tests: ExcludeTestsOption = False,
    db: DbOption = None,
    as_json: JsonFlag = False,
) -> None:
    """What breaks if NAME changes: its dependents by hops, files and kinds, tests apart."""
    from cairn.search.impact import IMPACT_RELATIONS, ImpactRequest, impact

    chosen = IMPACT_RELATIONS if relations is None else tuple(filter(None, relations.split(",")))

    def run(database: Any) -> Any:
        request = ImpactRequest(
            database.name,
            name,
            chosen,
            depth,
            max_vertices,
            max_edges,
            top,
            graph,
            _tuple(kind),
            _tuple(path),
            exclude_tests,
        )
        return impact(database, request)

    _named_answer(name, db, as_json, run, _print_impact)


def _print_impact(answer: Any) -> None:
    if answer.resolution.match is None:
        _print_calls_candidates(answer.resolution)
        return
    console = Console(soft_wrap=True)
    match = answer.resolution.match
    state = (
        "complete"
        if answer.complete
        else f"PARTIAL: stopped by {answer.stopped_by} after {answer.edges_examined} edges"
    )
    console.print(
        escape(f"impact of {match.qualified_name or match.ref.id}: {answer.dependents} "
               f"dependents ({answer.test_dependents} in test code); {state}")
    )  # fmt: skip
    hops = ", ".join(f"{hop} hop{'s' if hop > 1 else ''}: {n}" for hop, n in answer.per_hop)
    console.print(escape(f"  by distance: {hops or 'none'}"))
    kinds = ", ".join(f"{kind} {n}" for kind, n in answer.per_kind)
    console.print(escape(f"  by kind: {kinds or 'none'}"))
    if answer.filtered_out:
        console.print(escape(f"  left out by the filters: {answer.filtered_out}"))
    for item in answer.top:
        where = f"{item.path}" if item.path else item.ref.id
        test = " [test]" if item.test else ""
        label = item.qualified_name or item.ref.id
        console.print(escape(f"  {item.hops}  {label}  {where}{test}"))


@app.command("routes")
def routes_command(
    graph: Annotated[str, typer.Option("--graph", help="Graph read.")] = DEFAULT_GRAPH,
    db: DbOption = None,
    as_json: JsonFlag = False,
) -> None:
    """The HTTP routes of the indexed code: each handler and where the route is registered."""
    from cairn.database import open as open_database
    from cairn.search.routes import list_routes
    from cairn.search.wire import to_json
    from cairn.store.locate import resolve_database

    try:
        target = resolve_database(db)
        with open_database(target) as database:
            answer = list_routes(database, graph)
    except CairnError as error:
        fail(error)
        return
    if as_json:
        emit_json(to_json(answer))
        return
    console = Console(soft_wrap=True)
    console.print(escape(f"{answer.total} routes"))
    for route in answer.routes:
        handlers = ", ".join(ref.id for ref in route.handlers) or "(no handler resolved)"
        sites = ", ".join(f"{site.file}:{site.line}" for site in route.sites) or route.path
        console.print(escape(f"  {route.name}  -> {handlers}  {sites}"))


@keys_app.command("list")
def keys_list_command(db: DbOption = None, as_json: JsonFlag = False) -> None:
    """Every principal and the IDs of its keys (never a secret)."""
    from cairn.database import open as open_database
    from cairn.server.admin import list_principals
    from cairn.store.locate import resolve_database

    try:
        with open_database(resolve_database(db)) as database:
            records = list_principals(database, None)
    except CairnError as error:
        fail(error)
        return
    rows = [{"principal": r.principal.id, "key_ids": list(r.key_ids)} for r in records]
    if as_json:
        emit_json({"principals": rows})
        return
    console = Console(soft_wrap=True)
    if not rows:
        console.print("no principals stored (the built-in owner needs no key)")
    for row in rows:
        console.print(escape(f"{row['principal']}: {', '.join(row['key_ids']) or '(no keys)'}"))


@keys_app.command("add")
def keys_add_command(
    principal: Annotated[str, typer.Argument(help="The principal that gets the key.")],
    db: DbOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Mint a key for PRINCIPAL and print its token once (only a verifier is stored)."""
    from cairn.database import open as open_database
    from cairn.server.admin import add_api_key
    from cairn.store.locate import resolve_database
    from cairn.store.policy import issue_api_key

    issued = issue_api_key()
    try:
        with open_database(resolve_database(db)) as database:
            add_api_key(database, None, principal, issued.verifier)
    except CairnError as error:
        fail(error)
        return
    reply = {"principal": principal, "key_id": issued.verifier.key_id, "token": issued.token}
    if as_json:
        emit_json(reply)
        return
    Console(soft_wrap=True).print(
        escape(f"key {reply['key_id']} for {principal} (shown once): {issued.token}")
    )


@keys_app.command("revoke")
def keys_revoke_command(
    principal: Annotated[str, typer.Argument(help="The principal holding the key.")],
    key_id: Annotated[str, typer.Argument(help="The key's ID (from `cairn keys list`).")],
    db: DbOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Revoke one key of PRINCIPAL: requests with it are refused from the next read on."""
    from cairn.database import open as open_database
    from cairn.server.admin import revoke_api_key
    from cairn.store.locate import resolve_database

    try:
        with open_database(resolve_database(db)) as database:
            receipt = revoke_api_key(database, None, principal, key_id)
    except CairnError as error:
        fail(error)
        return
    reply = {"principal": principal, "key_id": key_id, "position": receipt.token.position}
    if as_json:
        emit_json(reply)
        return
    Console(soft_wrap=True).print(escape(f"revoked key {key_id} of {principal}"))


@app.command("sql")
def sql_command(
    statement: Annotated[str, typer.Argument(help="A SEARCH statement (see docs/sql.md).")],
    param: Annotated[
        list[str] | None,
        typer.Option("--param", help="Named parameter NAME=JSON (repeatable)."),
    ] = None,
    db: DbOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Run a SQL SEARCH statement: the same graph search, written as one statement."""
    from cairn.database import open as open_database
    from cairn.search.contracts import QueryRequest, SqlGraphSearchRequest
    from cairn.search.wire import to_wire
    from cairn.store.locate import resolve_database

    parameters = dict(_parse_param(item) for item in param or ())
    try:
        target = resolve_database(db)
        with open_database(target) as database:
            result = database.search_sql(SqlGraphSearchRequest(QueryRequest(statement, parameters)))
    except CairnError as error:
        fail(error)
        return
    if as_json:
        emit_json(to_wire(result))
        return
    _print_result(result, title="SEARCH")


@app.command("stats")
def stats_command(db: DbOption = None, as_json: JsonFlag = False) -> None:
    """Counts of what the database holds: documents per collection, facts per graph."""
    from cairn.store import open as open_database
    from cairn.store.locate import resolve_database
    from cairn.store.stats import database_stats

    try:
        target = resolve_database(db)
        with open_database(target) as database:
            stats = database_stats(database).to_json()
    except CairnError as error:
        fail(error)
        return
    if as_json:
        emit_json(stats)
        return
    console = Console()
    console.print(f"[bold]{escape(str(target))}[/]")
    for key, value in stats.items():
        if isinstance(value, list):
            table = Table(title=key)
            columns = sorted({k for row in value for k in row})
            for column in columns:
                table.add_column(column)
            for row in value:
                table.add_row(*(str(row.get(c, "")) for c in columns))
            console.print(table)
        else:
            console.print(f"{key}: {value}")


@app.command("check")
def check_command(
    db: DbOption = None,
    against: Annotated[
        str | None,
        typer.Option(
            "--against",
            help="A graph.cairn the database should hold: also report how they differ.",
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Verify a database record by record: SQLite's integrity check, then every checksum.

    With --against, also compare it with a graph.cairn (verified first): every document,
    vector and fact a load of that artifact would write, add or remove. Exits 1 when
    anything is damaged or differs, naming each record by table and key.
    """
    from cairn.artifact.reader import read_artifact
    from cairn.store.check import check_file
    from cairn.store.locate import resolve_database

    console = Console(stderr=True)
    try:
        target = resolve_database(db, artifact=against)
        graph = read_artifact(against).graph if against is not None else None
        with console.status("checking") as status:

            def progress(table: str, rows: int) -> None:
                status.update(f"checking {table}: {rows:,} rows")

            report = check_file(
                target, progress=progress if console.is_terminal else _silent, against=graph
            )
    except CairnError as error:
        fail(error)
        return
    if as_json:
        emit_json(report.to_json())
    else:
        _print_check(report)
    if not report.ok:
        raise typer.Exit(code=1)


def _silent(table: str, rows: int) -> None:
    """No progress off a terminal."""


def _print_check(report: Any) -> None:
    console = Console()
    table = Table(title=f"cairn check {report.path}")
    for column in ("table", "rows", "damaged", "first damaged"):
        table.add_column(column, justify="right" if column in ("rows", "damaged") else "left")
    for name, found in report.tables.items():
        first = ", ".join(found.examples[:3])
        table.add_row(name, f"{found.rows:,}", str(found.damaged), escape(first))
    console.print(table)
    console.print(f"SQLite integrity_check: {escape('; '.join(report.integrity))}")
    if report.against is not None:
        _print_agreement(console, report.against)
    if report.ok:
        console.print("[bold green]ok[/]: every record verifies")
        return
    console.print(
        "[bold red]damaged or different[/]: re-run the load or `cairn index --force` that "
        "wrote the database (it rewrites damaged records and names them), or restore a backup"
    )


def _print_agreement(console: Console, agreement: Any) -> None:
    if agreement.agrees:
        console.print("against the graph: [bold green]agrees[/] (a load would change nothing)")
        return
    table = Table(title="differences from the graph")
    for column in ("difference", "count", "first"):
        table.add_column(column, justify="right" if column == "count" else "left")
    for kind, count in agreement.counts.items():
        if count:
            first = ", ".join(agreement.examples.get(kind, [])[:3])
            table.add_row(kind.replace("_", " "), f"{count:,}", escape(first))
    console.print(table)


ServedWatchOption = Annotated[
    str | None,
    typer.Option(
        "--watch",
        help="Serve PATH's index and keep it fresh in this process, as `cairn watch PATH` "
        "does (round lines go to stderr).",
    ),
]
ServedExcludeOption = Annotated[
    list[str] | None,
    typer.Option("--exclude", help="With --watch: gitignore-style glob the watch skips."),
]


@app.command("mcp")
def mcp_command(
    db: DbOption = None,
    api_key: Annotated[
        str | None,
        typer.Option("--api-key", help="Run calls as this key's principal (or CAIRN_API_KEY)."),
    ] = None,
    watch: ServedWatchOption = None,
    exclude: ServedExcludeOption = None,
) -> None:
    """Serve Cairn's tools to an AI agent over MCP (stdio); the database opens lazily."""
    from pathlib import Path

    from cairn.server.mcp import run_stdio
    from cairn.store.locate import database_path, resolve_database

    try:
        beside = _watch_beside(watch, db, exclude)
        if beside is not None:
            target = beside.database
        else:
            try:
                target = resolve_database(db)
            except CairnError:
                # Nothing indexed yet: serve anyway (the handshake and the tool list need
                # no database); each tool call says how to create one until `cairn index`
                # has run.
                target = database_path(Path.cwd())
    except CairnError as error:
        fail(error)
    with _interrupt_leaves():
        if beside is None:
            run_stdio(target, api_key=api_key)
            return
        # The handshake does not wait for the first index: a call made before it is
        # done hears that it runs.
        beside.start()
        try:
            run_stdio(target, api_key=api_key, pending=beside.indexing)
        finally:
            _end_watch(beside)


@contextlib.contextmanager
def _interrupt_leaves() -> Iterator[None]:
    """SIGINT (Ctrl-C where ``cairn mcp`` runs by hand) ends the process at once, with
    status 130, for the block. The stdio server reads stdin on a thread that nothing
    can interrupt, so the event loop's own handling of SIGINT waited for a line or the
    end of the input that never came (the MCP SDK's issue #3551). A client ends the
    server by closing its input, as before; a round of ``--watch`` cut short is not
    written (its writes are atomic)."""
    with _on_signal(signal.SIGINT, lambda signum, frame: leave_at_once(130)):
        yield


@app.command("serve")
def serve_command(
    db: Annotated[
        str | None,
        typer.Option("--db", help="Database file (default: .cairn/cairn.db here or above)."),
    ] = None,
    host: Annotated[
        str | None, typer.Option("--host", help="Address to bind (default: 127.0.0.1).")
    ] = None,
    port: Annotated[
        int | None, typer.Option("--port", help="TCP port (default: 8765; 0 picks a free one).")
    ] = None,
    log_level: Annotated[
        str, typer.Option("--log-level", help="uvicorn log level (info, warning, ...).")
    ] = "info",
    as_json: JsonFlag = False,
    watch: ServedWatchOption = None,
    exclude: ServedExcludeOption = None,
) -> None:
    """Serve a database over HTTP; the first start prints a one-time admin API key."""
    from cairn.server.limits import DEFAULT_HOST, DEFAULT_PORT
    from cairn.server.serve import serve
    from cairn.store.locate import resolve_database

    beside = None
    try:
        beside = _watch_beside(watch, db, exclude)
        if beside is not None:
            beside.start()
            if not beside.database.exists():
                # The HTTP server opens the database at its start: the first one is
                # built before it binds.
                Console(stderr=True, soft_wrap=True).print(
                    escape(f"--watch: indexing {beside.root} first")
                )
                beside.wait_first()
                if isinstance(beside.error, CairnError) and not beside.database.exists():
                    raise beside.error
        # uvicorn raises the SIGTERM it shut down on again once done: the default action
        # would then end the process before the watch stops, leaving its socket behind.
        with _stopped_by_sigterm(threading.Event()) if beside else contextlib.nullcontext():
            serve(
                resolve_database(db) if beside is None else beside.database,
                host=DEFAULT_HOST if host is None else host,
                port=DEFAULT_PORT if port is None else port,
                as_json=as_json,
                log_level=log_level,
            )
    except CairnError as error:
        fail(error)
    finally:
        if beside is not None:
            _end_watch(beside)


def _end_watch(beside: WatchBeside) -> None:
    """Stop a server's watch; a round still running after ``STOP_GRACE_S`` (a first
    index of a large tree), or ``INTERRUPT_GRACE_S`` after Ctrl-C, is left unfinished
    and the process ends at once (``cairn.orphans.leave_at_once``: the round's writes
    are atomic, the next start does it again)."""
    from cairn.codegraph.beside import INTERRUPT_GRACE_S

    ending = sys.exc_info()[1]
    interrupted = isinstance(ending, KeyboardInterrupt)
    if beside.stop(INTERRUPT_GRACE_S if interrupted else None):
        return
    Console(stderr=True, soft_wrap=True).print(
        "cairn watch: its round was still running when the server stopped: left "
        "unfinished (its writes are atomic; the next start indexes again)"
    )
    leave_at_once(130 if interrupted else 1 if ending is not None else 0)


def _watch_beside(
    path: str | None, db: str | None, exclude: list[str] | None = None
) -> WatchBeside | None:
    """The ``WatchBeside`` a server's ``--watch PATH`` asks for (not started; None
    without it), skipping ``exclude``, its rounds and its end written on stderr. A
    ``--db`` naming another database than ``PATH/.cairn/cairn.db`` is refused: the
    server would not serve what the watch keeps; so is ``--exclude`` without
    ``--watch``."""
    from cairn.errors import ValidationError

    if path is None:
        if exclude:
            raise ValidationError("--exclude applies to --watch: give --watch PATH too")
        return None
    from pathlib import Path

    from cairn.codegraph.beside import WatchBeside

    console = Console(stderr=True, soft_wrap=True)

    def report(record: Mapping[str, Any]) -> None:
        console.print("cairn watch: " + _watch_line(record))

    def ended(error: BaseException) -> None:
        said = f"[{error.code}] {error.message}" if isinstance(error, CairnError) else repr(error)
        console.print(
            escape(f"cairn watch stopped: {said}; serving the database as it is, not kept fresh")
        )

    beside = WatchBeside(path, on_round=report, on_end=ended, excludes=tuple(exclude or ()))
    if db is not None and Path(db).resolve() != beside.database.resolve():
        raise ValidationError(
            f"--db {db} is not the database --watch {path} keeps ({beside.database}): "
            "give one of them",
            details={"db": db, "watch": path},
        )
    return beside


StrictFlag = Annotated[bool, typer.Option("--strict", help="Refuse legacy (v1-derived) graphs.")]


def _print_graph_summary(title: str, info: dict[str, Any]) -> None:
    """Readable form of ``cairn graph info`` / ``verify`` output."""
    console = Console()
    table = Table(title=escape(title))
    table.add_column("field")
    table.add_column("value")
    for key in ("source_format", "verified", "degraded", "generation_mode", "generated_at"):
        if key in info:
            table.add_row(key, escape(str(info[key])))
    if "repository_revision" in info:
        table.add_row("repository_revision", escape(str(info["repository_revision"])))
    for key, value in info.get("versions", {}).items():
        table.add_row(f"versions.{key}", escape(str(value)))
    for key, value in info.get("counts", {}).items():
        table.add_row(key, str(value))
    receipt = info.get("receipt")
    if receipt:
        table.add_row("receipt", escape(f"{receipt['accounting_scope']} / {receipt['status']}"))
        table.add_row("fully_stable_facts", str(receipt["fully_stable_facts"]))
    folder = info.get("folder")
    if isinstance(folder, dict):
        table.add_row("folder_state", folder["state"])
    elif "folder_state" in info:
        table.add_row("folder_state", str(info["folder_state"]))
    console.print(table)
    for warning in info.get("warnings", []):
        console.print(f"[bold yellow]warning[/] {escape(warning)}")
    if info.get("recommendation"):
        console.print(f"recommendation: {escape(info['recommendation'])}")


@graph_app.command("verify")
def graph_verify_command(
    file: Annotated[str, typer.Argument(help="A graph.cairn, v1 graph.json or output folder.")],
    strict: StrictFlag = False,
    as_json: JsonFlag = False,
) -> None:
    """Fully verify a graph artifact; exits 1 unless it is a verified graph.cairn v2."""
    from cairn.artifact import verify_report
    from cairn.errors import LegacyArtifactError

    try:
        report = verify_report(file, strict=strict)
    except CairnError as error:
        fail(error)
        return
    if as_json:
        emit_json(report)
    else:
        _print_graph_summary(f"Verification of {file}", report)
    if not report["verified"]:
        fail(
            LegacyArtifactError(
                f"{file} is a legacy v1 graph: it loads degraded but cannot be verified; "
                "convert it with `cairn graph import-v1` or regenerate it"
            )
        )


@graph_app.command("info")
def graph_info_command(
    file: Annotated[str, typer.Argument(help="A graph.cairn, v1 graph.json or output folder.")],
    as_json: JsonFlag = False,
) -> None:
    """Show versions, counts, receipt summary, warnings and folder state of a graph."""
    from cairn.artifact import artifact_info

    try:
        info = artifact_info(file)
    except CairnError as error:
        fail(error)
        return
    if as_json:
        emit_json(info)
        return
    _print_graph_summary(f"Graph {file}", info)


@graph_app.command("import-v1")
def graph_import_v1_command(
    file: Annotated[str, typer.Argument(help="The v1 node-link JSON file to import.")],
    out: Annotated[str, typer.Option("--out", help="Output folder for graph.cairn.")],
    generated_at: Annotated[
        str | None, typer.Option("--generated-at", help="Fixed timestamp for the artifact.")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Convert a v1 graph into OUT/graph.cairn (degraded) and move OUT/graph.json aside."""
    from cairn.artifact import import_v1

    try:
        summary = import_v1(file, out, generated_at=generated_at)
    except CairnError as error:
        fail(error)
        return
    if as_json:
        emit_json(summary)
        return
    console = Console()
    folder = summary["activation"]["folder"]
    console.print(
        f"[bold]Imported[/] {escape(file)} -> {escape(out)}/{escape(str(folder['reader_file']))}"
        f" (folder state {folder['state']})"
    )
    _print_graph_summary("Imported graph", summary["graph"])


def main() -> None:
    """Console-script entry point: run the command, then end the process without
    tearing its heap down object by object."""
    try:
        app()
    except SystemExit as stop:
        _leave(stop.code)
    _leave(0)


def _leave(code: object) -> NoReturn:
    """Run the exit handlers, flush the standard streams, end the process with ``code``.

    An index leaves ~10^6 objects behind (the graph, the extraction cache); the
    interpreter's own shutdown collects and frees them one by one, 0.9 s after indexing
    the Django package, although nothing reads them again. Exit handlers still run
    (worker pools, temporary files, logging); only the teardown is skipped, as mypy does.
    """
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # ``sys.exit("message")``: the message goes to stderr, status 1
        print(code, file=sys.stderr)
        status = 1
    if running_children():
        # Ctrl-C (or an error) mid-index: multiprocessing's exit handler would wait
        # forever for the pool's queue threads; nothing reads the workers' results now.
        leave_at_once(status)
    atexit._run_exitfuncs()
    exit_flushed(status)


if __name__ == "__main__":
    main()
