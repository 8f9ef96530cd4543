"""MCP over stdio with the official client: lazy start, tools, parity with the embedded API."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from server_helpers import MCP_INITIALIZE, flask_checkout

import cairn
from cairn.search.contracts import (
    EntityRef,
    GraphExpansion,
    GraphRetriever,
    GraphSearchRequest,
    GraphWalkSpec,
    QueryRequest,
    SearchRequest,
    SqlGraphSearchRequest,
)
from cairn.search.impact import ImpactRequest
from cairn.search.impact import impact as impact_of
from cairn.search.present import CODE_FUSION_K, CODE_PRIOR, CODE_VECTOR_WEIGHT
from cairn.search.wire import to_json, to_wire
from cairn.store import (
    CommandRequest,
    ConfigureCollection,
    ConfigureGraph,
    PutDocument,
    PutFact,
)
from cairn.store.load import SEARCH_FIELDS


def build_db(path: Path) -> None:
    with cairn.open(path) as db:
        mutations = [
            ConfigureCollection("symbols", ("/text",)),
            ConfigureCollection("files", ("/text",)),
            ConfigureGraph("code"),
            PutDocument("files", "file:app.py", {"text": "app", "path": "app.py"}),
            PutDocument("symbols", "f", {"text": "load user", "name": "load_user"}),
            PutDocument("symbols", "g", {"text": "save user", "name": "save_user"}),
            PutDocument("symbols", "h", {"text": "other", "name": "other"}),
            PutFact(
                "code", EntityRef("files", "file:app.py"), EntityRef("symbols", "f"), "contains"
            ),
            PutFact("code", EntityRef("symbols", "f"), EntityRef("symbols", "g"), "calls"),
        ]
        db.command(CommandRequest(uuid.uuid4(), db.name, tuple(mutations)))


async def session_calls(db_path: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "cairn.cli", "mcp", "--db", str(db_path)]
    )
    results: list[Any] = []
    async with stdio_client(params) as streams, ClientSession(streams[0], streams[1]) as session:
        hello = await session.initialize()
        tools = await session.list_tools()
        results.append(sorted(tool.name for tool in tools.tools))
        results.append({tool.name: tool.input_schema for tool in tools.tools})
        SESSION_FACTS["version"] = hello.server_info.version
        SESSION_FACTS["read_only"] = {
            tool.name: bool(tool.annotations and tool.annotations.read_only_hint)
            for tool in tools.tools
        }
        for name, arguments in calls:
            results.append(await session.call_tool(name, arguments))
    return results


SESSION_FACTS: dict[str, Any] = {}
"""What the last session's handshake and listing said (version, read-only hints)."""


def run_calls(db_path: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    return anyio.run(session_calls, db_path, calls)


GRAPH_REQUEST = GraphSearchRequest(
    1,
    SearchRequest("main", "symbols", text_field="/text", text="user", explain=True),
    retriever=GraphRetriever(GraphWalkSpec("code", (EntityRef("files", "file:app.py"),), 2)),
    expansion=GraphExpansion("code"),
)


SQL = 'SEARCH FROM symbols TEXT "/text" MATCH @q EXPAND GRAPH code DEPTH 1 VERTICES 10 EDGES 10'


@pytest.fixture(scope="module")
def db_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("mcp") / "cairn.db"
    build_db(path)
    return path


@pytest.fixture(scope="module")
def replies(db_path: Path) -> list[Any]:
    graph_args = {k: v for k, v in to_wire(GRAPH_REQUEST).items() if k != "type"}
    return run_calls(
        db_path,
        [
            ("cairn_search_graph", graph_args),
            ("cairn_search", {"collection": "symbols", "text_field": "/text", "text": "user"}),
            ("cairn_search_graph", {"sql": SQL, "parameters": {"q": "user"}}),
            ("cairn_show", {"refs": [{"collection": "symbols", "id": "f"}]}),
            ("cairn_search_graph", {"search": {"collection": "symbols"}}),
            ("cairn_show", {"refs": [{"collection": "symbols", "id": "ghost"}]}),
            ("no_such_tool", {}),
            (
                "cairn_traverse",
                {
                    "graph": "code",
                    "seeds": [{"collection": "files", "id": "file:app.py"}],
                    "max_depth": 2,
                },
            ),
            ("cairn_impact", {"collection": "symbols", "id": "g"}),
            ("cairn_callers", {"name": "g"}),
            ("cairn_impact", {"name": "g", "max_edges": 1}),
            ("cairn_callers", {"name": "g", "max_chars": 5}),
            ("cairn_show", {"name": "f"}),
            ("cairn_show", {"name": "user"}),
            ("cairn_search_graph", {"sql": SQL, "search": {"collection": "symbols"}}),
            ("cairn_show", {"name": "f", "refs": [{"collection": "symbols", "id": "f"}]}),
            (
                "cairn_traverse",
                {
                    "graph": "code",
                    "seeds": [{"collection": "files", "id": "file:app.py"}],
                    "include_documents": True,
                },
            ),
        ],
    )


def test_the_server_names_its_version_and_marks_every_tool_read_only(
    replies: list[Any],
) -> None:
    assert SESSION_FACTS["version"] == cairn.__version__  # it was empty
    assert set(SESSION_FACTS["read_only"]) == set(replies[0])
    assert all(SESSION_FACTS["read_only"].values())


def test_tools_are_listed_with_contract_schemas(replies: list[Any]) -> None:
    names, schemas = replies[0], replies[1]
    assert names == [  # at most six, one per job (issue 19)
        "cairn_callers",
        "cairn_impact",
        "cairn_search",
        "cairn_search_graph",
        "cairn_show",
        "cairn_traverse",
    ]
    assert all(
        schema["properties"]["max_chars"]["default"] == 25_000 for schema in schemas.values()
    )
    search_schema = schemas["cairn_search"]
    assert search_schema["required"] == []  # collection defaults to symbols (issue 19)
    assert search_schema["properties"]["hybrid"]["default"] is True
    assert search_schema["properties"]["limit"] == {  # the bounds admission checks (item 12)
        "type": "integer",
        "default": 10,
        "minimum": 1,
        "maximum": 1000,
    }
    graph_schema = schemas["cairn_search_graph"]
    assert set(graph_schema["properties"]) == {
        "version",
        "search",
        "scope",
        "retriever",
        "expansion",
        "sql",  # or the whole search as one SQL SEARCH statement
        "parameters",
        "max_chars",  # the reply budget every tool takes
    }
    assert graph_schema["required"] == []  # search, or sql
    assert set(schemas["cairn_show"]["properties"]) == {
        "database",
        "name",
        "max_bytes",
        "refs",
        "source",
        "max_chars",
    }
    assert schemas["cairn_callers"]["properties"]["direction"]["enum"] == ["callers", "callees"]


def test_graph_search_matches_the_embedded_api(db_path: Path, replies: list[Any]) -> None:
    reply = replies[2]
    assert reply.is_error is False
    with cairn.open(db_path) as db:
        embedded = to_wire(db.graph_search(GRAPH_REQUEST))
    assert reply.structured_content == json.loads(json.dumps(embedded))
    compact = json.loads(reply.content[0].text)
    assert [(h["collection"], h["id"]) for h in compact["hits"]] == [
        ("symbols", "f"),
        ("symbols", "g"),
    ]
    assert list(compact["hits"][0])[:2] == ["collection", "id"]  # exact IDs first
    assert compact["hits"][0]["hops"] == 1


def test_plain_sql_and_document_tools(db_path: Path, replies: list[Any]) -> None:
    plain, sql, documents = replies[3], replies[4], replies[5]
    with cairn.open(db_path) as db:
        # The tool's request: the code-search fusion k and prior unless the agent names one.
        request = SearchRequest(
            "main",
            "symbols",
            text_field="/text",
            text="user",
            fusion_k=CODE_FUSION_K,
            prior=CODE_PRIOR,
        )
        hits = db.search(request)
        document = db.get_document("symbols", "f")
        embedded_sql = db.search_sql(SqlGraphSearchRequest(QueryRequest(SQL, {"q": "user"})))
    assert plain.structured_content == json.loads(json.dumps({"hits": [to_wire(h) for h in hits]}))
    # "load user" and "save user" tie on BM25: the ordinal ref breaks the tie.
    assert [h["document"]["ref"]["id"] for h in sql.structured_content["hits"]] == ["f", "g"]
    assert sql.structured_content == json.loads(json.dumps(to_wire(embedded_sql)))
    assert sql.structured_content["expansion"]["completeness"] == "selected_hits"
    assert documents.structured_content["documents"] == json.loads(json.dumps([to_wire(document)]))
    # Source lines ride along; this document names no file, and the answer says so.
    assert documents.structured_content["sources"] == [
        {"lines": None, "stale": None, "reason": "the node has no file"}
    ]


def test_errors_are_problem_documents(replies: list[Any]) -> None:
    invalid, missing, unknown = replies[6], replies[7], replies[8]
    assert invalid.is_error and invalid.structured_content["code"] == "validation"
    assert missing.is_error and missing.structured_content["code"] == "not_found"
    assert missing.structured_content["type"] == "urn:cairn:error:not_found"
    assert unknown.is_error and unknown.structured_content["code"] == "validation"


def test_the_database_opens_lazily(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-folder" / "cairn.db"
    names, _, reply = run_calls(
        missing, [("cairn_search", {"collection": "x", "text_field": "/t", "text": "y"})]
    )
    assert "cairn_search" in names  # the handshake and listing never touched the file
    assert reply.is_error and reply.structured_content["code"] == "not_found"
    assert "run `cairn index PATH`" in reply.structured_content["detail"]  # what to do
    assert "`cairn mcp --watch PATH`" in reply.structured_content["detail"]
    assert not missing.parent.exists()


def test_mcp_starts_before_anything_is_indexed(tmp_path: Path) -> None:
    async def handshake() -> tuple[list[str], Any]:
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "cairn.cli", "mcp"], cwd=str(tmp_path)
        )
        async with stdio_client(params) as streams, ClientSession(*streams) as session:
            await session.initialize()
            listed = await session.list_tools()
            reply = await session.call_tool("cairn_callers", {"name": "main"})
            return [tool.name for tool in listed.tools], reply

    names, reply = anyio.run(handshake)
    assert "cairn_search" in names  # it started: it used to exit with "no .cairn/cairn.db"
    assert reply.is_error and "cairn index" in reply.structured_content["detail"]
    assert not (tmp_path / ".cairn").exists()  # nothing created in the user's folder


def test_traverse_impact_and_callers_match_the_library(db_path: Path, replies: list[Any]) -> None:
    from cairn.search.calls import CallsRequest, calls
    from cairn.search.traverse import TraverseRequest, traverse

    traversed, impact, callers = replies[9], replies[10], replies[11]
    with cairn.open(db_path) as db:
        walk = traverse(
            db, TraverseRequest("main", "code", (EntityRef("files", "file:app.py"),), max_depth=2)
        )
        called = calls(db, CallsRequest("main", "g"))
    assert traversed.structured_content == json.loads(json.dumps(walk.to_json()))
    assert [v["id"] for v in json.loads(traversed.content[0].text)["vertices"]] == [
        "file:app.py",
        "f",
        "g",
    ]
    # g is called by f, which is contained in app.py (contains is not a dependency).
    compact = json.loads(impact.content[0].text)
    assert [(d["collection"], d["id"], d["hops"]) for d in compact["top"]] == [("symbols", "f", 1)]
    assert (compact["complete"], compact["dependents"], compact["symbol"]) == (True, 1, "g")
    with cairn.open(db_path) as db:
        embedded = impact_of(db, ImpactRequest("main", "g"))
    assert impact.structured_content == json.loads(json.dumps(to_json(embedded)))
    # Who calls g: f, the same JSON as HTTP's answer.
    assert callers.is_error is False
    assert callers.structured_content == json.loads(json.dumps(to_json(called)))
    compact_calls = json.loads(callers.content[0].text)
    assert (compact_calls["symbol"], compact_calls["direction"]) == ("g", "callers")
    assert [(e["id"], e["hops"]) for e in compact_calls["edges"]] == [("f", 1)]
    # By name, past a limit: a bounded answer labelled partial (it was budget_exceeded).
    partial = replies[12]
    assert partial.is_error is False
    assert partial.structured_content["complete"] is False
    assert partial.structured_content["stopped_by"] == "max_edges"
    # Every tool takes a reply budget, checked like any argument.
    refused = replies[13]
    assert refused.is_error and refused.structured_content["code"] == "validation"


def test_show_by_name_and_the_argument_rules(db_path: Path, replies: list[Any]) -> None:
    from cairn.search.show import ShowRequest, show_request

    shown, ambiguous, both_forms, name_and_refs = replies[14:18]
    with cairn.open(db_path) as db:
        expected = show_request(db, ShowRequest("main", "f"))
    assert shown.structured_content == json.loads(json.dumps(to_json(expected)))
    compact = json.loads(shown.content[0].text)
    assert (compact["collection"], compact["id"], compact["name"]) == ("symbols", "f", "load_user")
    assert compact["source"] == {"stale": None, "reason": "the node has no file"}
    # No symbol is named "user" (this database has no code fields): no guess.
    missing = json.loads(ambiguous.content[0].text)
    assert missing == {"status": "not_found", "candidates": []}
    for refused in (both_forms, name_and_refs):
        assert refused.is_error and refused.structured_content["code"] == "validation"


def test_show_gives_numbered_source_lines_or_stale(tmp_path: Path) -> None:

    from typer.testing import CliRunner

    from cairn.cli import app

    repo = tmp_path / "repo"
    flask_checkout(repo)
    (repo / "tests").mkdir()
    (repo / "tests" / "test_services.py").write_text(
        "from app import services\n\n\ndef test_load():\n    services.load_user(1)\n"
    )
    assert CliRunner().invoke(app, ["index", str(repo), "--workers", "1"]).exit_code == 0
    ref = {"collection": "symbols", "id": "function:app/views.py#get_user"}
    db = repo / ".cairn" / "cairn.db"
    calls: list[tuple[str, dict[str, Any]]] = [
        ("cairn_show", {"refs": [ref]}),
        ("cairn_show", {"name": "views.get_user"}),
        ("cairn_callers", {"name": "services.load_user"}),
        ("cairn_show", {"name": "validate"}),
        ("cairn_callers", {"name": "services.load_user", "exclude_tests": True}),
        ("cairn_callers", {"name": "services.load_user", "paths": ["tests/*"]}),
    ]
    (_, _, fresh, named, callers, ambiguous, no_tests, only_tests) = run_calls(db, calls)
    lines = [
        "11  def get_user(user_id):",
        "12      user = services.load_user(user_id)",
        "13      return jsonify(user.name)",
    ]
    (entry,) = json.loads(fresh.content[0].text)
    assert entry["source"]["lines"] == lines
    by_name = json.loads(named.content[0].text)
    assert by_name["id"] == ref["id"] and by_name["source"]["lines"] == lines
    # Who calls load_user: get_user, at the line the fixture calls it.
    edges = {e["id"]: e for e in json.loads(callers.content[0].text)["edges"]}
    assert edges[ref["id"]]["sites"] == ["app/views.py:12"]
    assert edges[ref["id"]]["site_count"] == 1
    test_caller = "function:tests/test_services.py#test_load"
    assert set(edges) == {ref["id"], test_caller}
    # Filters narrow the other end: tests out, or only what a path glob matches.
    assert [e["id"] for e in json.loads(no_tests.content[0].text)["edges"]] == [ref["id"]]
    assert [e["id"] for e in json.loads(only_tests.content[0].text)["edges"]] == [test_caller]
    # Two functions are named validate: the candidates, each with its file:line.
    choices = json.loads(ambiguous.content[0].text)
    assert choices["status"] == "ambiguous" and "id" not in choices
    assert len(choices["candidates"]) == 2
    assert all(c["at"].endswith(".py:" + c["at"].rsplit(":", 1)[1]) for c in choices["candidates"])
    views = repo / "app" / "views.py"
    views.write_text(views.read_text() + "\n# edited\n")
    (_, _, stale, stale_named, *_) = run_calls(db, calls)
    (entry,) = json.loads(stale.content[0].text)
    reason = "app/views.py changed since it was indexed"
    assert entry["source"] == {"stale": True, "reason": reason}
    assert json.loads(stale_named.content[0].text)["source"] == {"stale": True, "reason": reason}


def test_search_defaults_to_hybrid_over_symbols_on_a_code_index(tmp_path: Path) -> None:

    from typer.testing import CliRunner

    from cairn.cli import app
    from cairn.search.present import query_vector

    repo = tmp_path / "repo"
    flask_checkout(repo)
    assert CliRunner().invoke(app, ["index", str(repo), "--workers", "1"]).exit_code == 0
    db_path = repo / ".cairn" / "cairn.db"
    _, _, hybrid, plain = run_calls(
        db_path,
        [
            ("cairn_search", {"text": "load user"}),
            ("cairn_search", {"text": "load user", "hybrid": False}),
        ],
    )
    with cairn.open(db_path) as db:
        # The tool's requests: the code-search fusion k, vector weight and prior unless named.
        text_only = SearchRequest(
            db.name,
            "symbols",
            SEARCH_FIELDS,
            "load user",
            fusion_k=CODE_FUSION_K,
            vector_weight=CODE_VECTOR_WEIGHT,
            prior=CODE_PRIOR,
        )
        both = db.search(replace(text_only, **query_vector("load user")))
        text_only_hits = db.search(text_only)
    assert hybrid.structured_content == json.loads(json.dumps({"hits": [to_wire(h) for h in both]}))
    assert plain.structured_content == json.loads(
        json.dumps({"hits": [to_wire(h) for h in text_only_hits]})
    )
    assert json.loads(hybrid.content[0].text)["hybrid"] is True
    assert json.loads(plain.content[0].text)["hybrid"] is False


MCP_DOC = Path(__file__).resolve().parents[2] / "docs" / "mcp.md"
EXAMPLE = re.compile(r"^(cairn_\w+)\s+(\{.*\})$", re.MULTILINE)


def test_the_documented_examples_run(tmp_path: Path) -> None:

    from typer.testing import CliRunner

    from cairn.cli import app
    from cairn.server.mcp_tools import TOOLS

    examples = [(tool, json.loads(args)) for tool, args in EXAMPLE.findall(MCP_DOC.read_text())]
    assert {tool for tool, _ in examples} == {tool.name for tool in TOOLS}  # every tool shown
    repo = tmp_path / "repo"
    flask_checkout(repo)
    assert CliRunner().invoke(app, ["index", str(repo), "--workers", "1"]).exit_code == 0
    replies = run_calls(repo / ".cairn" / "cairn.db", examples)[2:]
    for (tool, arguments), reply in zip(examples, replies, strict=True):
        assert reply.is_error is False, (tool, arguments, reply.structured_content)
        content = reply.structured_content
        # Each answers something: hits, a document, edges or dependents, never nothing.
        found = (
            content.get("hits")
            or content.get("documents")
            or content.get("document")
            or content.get("edges")
            or content.get("top")
        )
        assert found, (tool, arguments, content)


def test_traverse_text_carries_the_documents_it_was_asked_for(replies: list[Any]) -> None:
    reply = replies[-1]
    assert reply.is_error is False
    vertices = json.loads(reply.content[0].text)["vertices"]
    # What the structured content holds, the text holds too (it used to drop them).
    assert [(v["id"], v.get("name")) for v in vertices] == [
        ("file:app.py", None),
        ("f", "load_user"),
    ]
    documents = [v["document"] for v in reply.structured_content["vertices"]]
    assert documents[1]["body"]["name"] == "load_user"


INTERRUPT_BOUND_S = 10.0
"""A Ctrl-C'd stdio server ends well within this (at once, in fact)."""


@pytest.mark.parametrize("whole_group", [True, False])
def test_ctrl_c_ends_the_stdio_server(tmp_path: Path, whole_group: bool) -> None:
    """SIGINT while the server waits for its client's next line ends it with status 130.
    Before, it waited for a line or the end of its input that never came: the stdio
    transport reads stdin on a thread nothing interrupts (the MCP SDK's issue #3551)."""
    db_path = tmp_path / "t.db"
    build_db(db_path)
    process = subprocess.Popen(
        [sys.executable, "-m", "cairn.cli", "mcp", "--db", str(db_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        # A shell's background job inherits SIGINT ignored; a terminal's does not.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write((json.dumps(MCP_INITIALIZE) + "\n").encode())
        process.stdin.flush()
        answer = json.loads(process.stdout.readline())
        assert answer["id"] == 1 and "result" in answer  # it serves, and waits for more
        if whole_group:
            os.killpg(process.pid, signal.SIGINT)
        else:
            process.send_signal(signal.SIGINT)
        assert process.wait(timeout=INTERRUPT_BOUND_S) == 130
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                stream.close()
