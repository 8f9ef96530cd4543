"""Markdown adapter: sections, links into the fixture repositories, and symbol mentions."""

from __future__ import annotations

from pathlib import Path

from codegraph_expect import FIXTURES, fact_tuples

from cairn.codegraph import index_repository
from cairn.codegraph.markdown import extract_markdown, slugify

DOC_FACTS = {
    ("contains", "file:docs/api.md", "section:docs/api.md#API", ""),
    ("contains", "file:docs/guide.md", "section:docs/guide.md#Guide", ""),
    ("contains", "section:docs/api.md#API", "section:docs/api.md#API/Endpoints", ""),
    ("contains", "section:docs/guide.md#Guide", "section:docs/guide.md#Guide/Install", ""),
    ("contains", "section:docs/guide.md#Guide", "section:docs/guide.md#Guide/Usage", ""),
    ("contains", "section:docs/guide.md#Guide", "section:docs/guide.md#Guide/Usage~2", ""),
    (
        "contains",
        "section:docs/guide.md#Guide/Usage",
        "section:docs/guide.md#Guide/Usage/Routes",
        "",
    ),
    (
        "mentions",
        "section:docs/api.md#API/Endpoints",
        "function:express_app/src/services/users.js#findUser",
        "",
    ),
    (
        "mentions",
        "section:docs/api.md#API/Endpoints",
        "method:ts_lib/src/shapes.ts#Circle.area",
        "",
    ),
    (
        "mentions",
        "section:docs/guide.md#Guide/Install",
        "function:flask_app/app/services.py#load_user",
        "",
    ),
    (
        "mentions",
        "section:docs/guide.md#Guide/Usage/Routes",
        "function:flask_app/app/views.py#get_user",
        "",
    ),
    ("references", "section:docs/api.md#API/Endpoints", "file:express_app/src/app.js", "file"),
    ("references", "section:docs/guide.md#Guide", "file:flask_app/app/models.py", "file"),
    ("references", "section:docs/guide.md#Guide", "file:flask_app/app/views.py", "file"),
    (
        "references",
        "section:docs/guide.md#Guide/Usage/Routes",
        "section:docs/api.md#API/Endpoints",
        "file_section",
    ),
    (
        "references",
        "section:docs/guide.md#Guide/Usage/Routes",
        "section:docs/guide.md#Guide/Install",
        "section",
    ),
}


def test_doc_facts_are_exact() -> None:
    graph = index_repository(FIXTURES).graph
    found = {t for t in fact_tuples(graph) if t[1].startswith(("file:docs/", "section:docs/"))}
    assert found == DOC_FACTS


def test_duplicate_heading_paths_are_context_bound_and_the_rest_stable() -> None:
    graph = index_repository(FIXTURES).graph
    sections = {n.id: n.identity for n in graph.nodes() if n.kind == "section"}
    bound = {key for key, identity in sections.items() if identity.status.value != "stable"}
    assert bound == {"section:docs/guide.md#Guide/Usage", "section:docs/guide.md#Guide/Usage~2"}
    for key in bound:
        assert [r.value for r in sections[key].reasons] == ["collision_suffix_derived"]
    assert len(sections) == 7


def test_extraction_skips_fences_and_reads_setext_headings() -> None:
    data = (
        b"Title\n=====\n\nSee `load_user` and [g](guide.md#install).\n\n"
        b"```\n# not a heading\n[no](link.md) `nope`\n```\n\nSub\n---\n[ref]: other.md\n"
    )
    extract = extract_markdown("docs/x.md", data)
    assert [(s.heading_path, s.level, s.range) for s in extract.sections] == [
        (("Title",), 1, (1, 1, 13, 15)),
        (("Title", "Sub"), 2, (11, 1, 13, 15)),
    ]
    assert [(link.section, link.target, link.range) for link in extract.links] == [
        (0, "guide.md#install", (4, 21, 4, 41)),
        (1, "other.md", (13, 1, 13, 15)),
    ]
    assert [(m.section, m.text) for m in extract.mentions] == [(0, "load_user")]


def test_slugs_follow_github_anchors() -> None:
    assert slugify("Quick start: the API!") == "quick-start-the-api"


def test_a_document_that_is_not_utf8_is_indexed_partially_and_says_so(tmp_path: Path) -> None:
    """A README saved as Latin-1 (``é`` as the single byte 0xE9 on line 4) keeps its
    sections, with U+FFFD for the stray byte; its row says ``partial:UnicodeDecodeError``
    at line 4, its file node and sections carry ``partial_parse``. Before, the whole
    document failed (``failed:UnicodeDecodeError``) and none of it was indexed."""
    data = b"# Guide\n\nSome text.\n## Caf\xe9 notes\n\nmore\n"
    extract = extract_markdown("README.md", data)
    assert extract.parse_error is not None
    error, line = extract.parse_error
    assert error.startswith("UnicodeDecodeError") and line == 4
    assert [s.title for s in extract.sections] == ["Guide", "Caf\ufffd notes"]

    (tmp_path / "README.md").write_bytes(data)
    (tmp_path / "good.md").write_text("# Fine\n", encoding="utf-8")
    result = index_repository(tmp_path)
    rows = {row.path: (row.outcome, row.error) for row in result.manifest.entries}
    assert rows["README.md"] == ("partial:UnicodeDecodeError", f"line 4: {error}")
    assert rows["good.md"] == ("indexed", None)
    nodes = {node.id: node.attributes for node in result.graph.nodes()}
    assert nodes["file:README.md"]["partial_parse"] == {"error": error, "line": 4}
    assert nodes["section:README.md#Guide"]["partial_parse"] is True
    assert "partial_parse" not in nodes["file:good.md"]
    assert "partial_parse" not in nodes["section:good.md#Fine"]
