"""The lossy node-link export and the ``cairn graph`` commands."""

from __future__ import annotations

import json
from pathlib import Path

import networkx as nx
from artifact_support import FIXED_TIME, rich_graph
from test_artifact_legacy import networkx_v1
from typer.testing import CliRunner

from cairn.artifact import (
    EXPORT_DROPPED,
    TOMBSTONE,
    decode_legacy_v1,
    export_node_link,
    write_artifact,
    write_node_link_export,
)
from cairn.cli import app

RUNNER = CliRunner()


# ------------------------------------------------------------------ export
def test_export_is_labelled_lossy_and_keeps_parallel_facts_apart(tmp_path: Path) -> None:
    graph = rich_graph()
    document = export_node_link(graph)
    assert document["lossy"] is True and document["graph"]["lossy"] is True
    assert document["dropped"] == list(EXPORT_DROPPED)
    assert document["format"] == "cairn.node-link-export/1"
    assert len(document["links"]) == graph.fact_count
    exported = nx.node_link_graph(document, edges="links")
    main, helper = "function:src/app.py#main", "function:src/app.py#helper"
    # Two calls facts (call and construct) on one pair: two links, not one.
    assert exported.number_of_edges(main, helper) == len(
        graph.facts_between(main, helper, ["calls"])
    )
    assert exported.number_of_edges(main, helper) == 2
    assert exported.nodes[main]["identity_status"] == "stable"
    path = tmp_path / "graph.nodelink.json"
    size = write_node_link_export(path, graph)
    assert size == path.stat().st_size
    assert json.loads(path.read_text(encoding="utf-8"))["lossy"] is True


def test_export_read_back_is_legacy_never_equivalent() -> None:
    document = export_node_link(rich_graph())
    loaded = decode_legacy_v1(json.dumps(document).encode())
    assert loaded.degraded
    assert loaded.graph != rich_graph()
    assert {"dropped", "format", "lossy"} <= set(loaded.provenance["ignored_keys"])


# -------------------------------------------------------------------- CLI
def _artifact(tmp_path: Path) -> Path:
    path = tmp_path / "graph.cairn"
    write_artifact(path, rich_graph(), generated_at=FIXED_TIME)
    return path


def test_verify_a_good_artifact(tmp_path: Path) -> None:
    path = _artifact(tmp_path)
    result = RUNNER.invoke(app, ["graph", "verify", str(path), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["verified"] is True
    assert report["counts"] == rich_graph().counts().to_json()
    assert report["folder_state"] == "current_v2"
    readable = RUNNER.invoke(app, ["graph", "verify", str(path)])
    assert readable.exit_code == 0 and "cairn.graph-artifact/2" in readable.stdout


def test_verify_reports_corruption_with_its_code(tmp_path: Path) -> None:
    path = _artifact(tmp_path)
    path.write_bytes(path.read_bytes().replace(b"Application core", b"Application cord"))
    result = RUNNER.invoke(app, ["graph", "verify", str(path)])
    assert result.exit_code == 1
    assert "artifact_corrupt" in result.stderr


def test_verify_refuses_v1_and_tombstones(tmp_path: Path) -> None:
    v1 = tmp_path / "graph.json"
    v1.write_bytes(networkx_v1())
    result = RUNNER.invoke(app, ["graph", "verify", str(v1), "--json"])
    assert result.exit_code == 1
    assert json.loads(result.stdout)["degraded"] is True
    assert "legacy_artifact" in result.stderr
    strict = RUNNER.invoke(app, ["graph", "verify", str(v1), "--strict"])
    assert strict.exit_code == 1 and "legacy_artifact" in strict.stderr
    v1.write_bytes(TOMBSTONE)
    moved = RUNNER.invoke(app, ["graph", "verify", str(v1)])
    assert moved.exit_code == 1 and "artifact_moved" in moved.stderr


def test_info_shows_versions_counts_receipt_and_folder_state(tmp_path: Path) -> None:
    path = _artifact(tmp_path)
    result = RUNNER.invoke(app, ["graph", "info", str(path), "--json"])
    assert result.exit_code == 0, result.output
    info = json.loads(result.stdout)
    assert info["versions"]["graph_artifact"] == 2
    assert info["versions"]["relation_registry"] == "cairn.relation-registry/1"
    assert info["counts"]["fact_count"] == rich_graph().fact_count
    assert info["receipt"]["accounting_scope"] == "storage_only"
    assert info["receipt"]["status"] == "degraded"
    assert info["folder"]["state"] == "current_v2"
    assert info["size_bytes"] == path.stat().st_size
    assert len(info["payload_sha256"]) == 64
    readable = RUNNER.invoke(app, ["graph", "info", str(tmp_path)])
    assert readable.exit_code == 0
    assert "fully_stable_facts" in readable.stdout and "current_v2" in readable.stdout
    missing = RUNNER.invoke(app, ["graph", "info", str(tmp_path / "nope.cairn")])
    assert missing.exit_code == 1 and "not_found" in missing.stderr


def test_import_v1_activates_the_output_folder(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    source = out / "graph.json"
    source.write_bytes(networkx_v1())
    result = RUNNER.invoke(
        app,
        [
            "graph",
            "import-v1",
            str(source),
            "--out",
            str(out),
            "--json",
            "--generated-at",
            FIXED_TIME,
        ],
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["activation"]["preserved_v1"] is True
    assert summary["graph"]["degraded"] is True
    assert summary["graph"]["generation_mode"] == "legacy_v1_import"
    assert summary["graph"]["warnings"] == ["legacy_parallel_facts_unrecoverable"]
    assert (out / "graph.v1.json").read_bytes() == networkx_v1()
    assert (out / "graph.json").read_bytes() == TOMBSTONE
    first = (out / "graph.cairn").read_bytes()
    verify = RUNNER.invoke(app, ["graph", "verify", str(out / "graph.cairn")])
    assert verify.exit_code == 0
    # Importing the preserved copy again reproduces the same bytes.
    again = RUNNER.invoke(
        app,
        [
            "graph",
            "import-v1",
            str(out / "graph.v1.json"),
            "--out",
            str(out),
            "--generated-at",
            FIXED_TIME,
        ],
    )
    assert again.exit_code == 0, again.output
    assert "current_v2" in again.stdout
    summary_provenance = json.loads(
        RUNNER.invoke(app, ["graph", "info", str(out), "--json"]).stdout
    )
    assert summary_provenance["folder"]["state"] == "current_v2"
    assert (out / "graph.cairn").read_bytes() != b""
    assert first.startswith(b"CAIRN_GRAPH_ARTIFACT/2\n")


def test_import_v1_errors_are_reported(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{", encoding="utf-8")
    result = RUNNER.invoke(app, ["graph", "import-v1", str(bad), "--out", str(tmp_path / "o")])
    assert result.exit_code == 1 and "artifact_corrupt" in result.stderr
