"""The demo job runs end to end on the bundled fixture."""

from cairn.demo import build_demo_graph, demo_summary


def test_demo_graph_counts_match_fixture() -> None:
    summary = demo_summary(build_demo_graph())
    # The fixture declares 7 nodes, 8 facts and 9 evidence sites (one call has two sites).
    assert summary["counts"]["node_count"] == 7
    assert summary["counts"]["fact_count"] == 8
    assert summary["counts"]["occurrence_count"] == 9


def test_cli_prints_its_version() -> None:
    from typer.testing import CliRunner

    import cairn
    from cairn.cli import app

    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"cairn {cairn.__version__}"
