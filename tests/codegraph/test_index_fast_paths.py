"""The indexing fast paths change nothing: batched admission and compact pickling."""

from __future__ import annotations

import dataclasses
import pickle
from pathlib import Path
from typing import Any

import pytest
from codegraph_expect import FIXTURES

from cairn.codegraph import build, extract_file, index_repository, write_index
from cairn.codegraph.emit import GraphEmitter, ShareEmitter
from cairn.codegraph.scan import scan_repository
from cairn.codegraph.wire import register_reducers

FIXED_TIME = "2024-01-01T00:00:00Z"


class OneByOneEmitter(GraphEmitter):
    """The pre-batching behaviour: every fact admitted by ``add_fact`` when it is emitted."""

    def fact(self, *args: Any, **kwargs: Any) -> None:
        super().fact(*args, **kwargs)
        pending, self._pending = self._pending, []
        for source, target, relation, disc, occurrence in pending:
            self._graph.add_fact(source, target, relation, disc, occurrence=occurrence)


def test_batched_admission_writes_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    batched = index_repository(FIXTURES, workers=1)
    monkeypatch.setattr(build, "GraphEmitter", OneByOneEmitter)
    one_by_one = index_repository(FIXTURES, workers=1)
    assert batched.graph == one_by_one.graph
    first = write_index(batched, tmp_path / "batched", generated_at=FIXED_TIME)
    second = write_index(one_by_one, tmp_path / "one", generated_at=FIXED_TIME)
    assert first.graph_path.read_bytes() == second.graph_path.read_bytes()


def _emit_part(emitter: Any, number: int) -> None:
    """One part's calls: a node every part makes (with its own attributes: the first
    made wins), an external, and facts some parts share."""
    shared = emitter.node("function:a.py#f", "function", {"name": "f", "part": number})
    own = emitter.node(f"function:p{number}.py#g", "function", {"name": "g"})
    ext = emitter.external("python", "os.path.join")
    site = {"adapter": "python", "strategy": "ast", "site_kind": "call"}
    emitter.fact(own, shared, "calls", None, path=f"p{number}.py", rng=(1, 1, 1, 5), **site)
    emitter.fact(shared, ext, "calls", None, path="a.py", rng=(2, 1, 2, 9), **site)
    emitter.fact(shared, ext, "calls", None, path="a.py", rng=(3, 1, 3, 9), **site)
    emitter.fact(own, ext, "no_such_relation", None, path="a.py", rng=None, **site)


def test_parts_emitted_apart_merge_to_what_the_emitter_admits() -> None:
    """``ShareEmitter`` parts merged by ``add_shares`` in order give the graph the same
    calls made on one ``GraphEmitter`` give: first node of an ID, merged occurrences,
    admission counts."""
    direct = GraphEmitter()
    direct.node("file:a.py", "file", {"name": "a.py"})
    for number in range(3):
        _emit_part(direct, number)
    merged = GraphEmitter()
    merged.node("file:a.py", "file", {"name": "a.py"})
    parts = []
    for number in range(3):
        part = ShareEmitter()
        _emit_part(part, number)
        parts.append(part.share())
    merged.add_shares(parts)
    assert merged.graph == direct.graph
    assert merged.graph.node("function:a.py#f").attributes["part"] == 0
    assert dict(merged.graph.admission_counts) == dict(direct.graph.admission_counts)


def test_compact_pickling_round_trips_every_extract() -> None:
    register_reducers()
    scan = scan_repository(FIXTURES)
    assert scan.files
    for scanned in scan.files:
        data = (FIXTURES / scanned.path).read_bytes()
        extract = extract_file(scanned.path, scanned.language, data)
        copy = pickle.loads(pickle.dumps(extract, protocol=pickle.HIGHEST_PROTOCOL))
        assert copy == extract
        assert dataclasses.astuple(copy) == dataclasses.astuple(extract)
        outcome = pickle.loads(pickle.dumps(scanned))
        assert outcome == scanned


def test_the_python_visitor_dispatch_extracts_what_ast_nodevisitor_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The cached dispatch and direct field walk against the standard library's own
    ``ast.NodeVisitor`` walk, over every module of Cairn's source (real code)."""
    import ast

    from cairn.codegraph import python as adapter

    sources = sorted(Path(adapter.__file__).resolve().parents[1].rglob("*.py"))
    assert len(sources) > 50
    fast = [extract_file(str(path), "python", path.read_bytes()) for path in sources]
    monkeypatch.setattr(adapter._Extractor, "visit", ast.NodeVisitor.visit)
    monkeypatch.setattr(adapter._Extractor, "generic_visit", ast.NodeVisitor.generic_visit)
    monkeypatch.setattr(adapter._Extractor, "visit_Constant", ast.NodeVisitor.visit_Constant)
    plain = [extract_file(str(path), "python", path.read_bytes()) for path in sources]
    assert fast == plain
    assert sum(len(extract.calls) for extract in fast) > 1000  # the walk reached the calls
