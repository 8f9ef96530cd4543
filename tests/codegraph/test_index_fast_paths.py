"""The indexing fast paths change nothing: batched admission and compact pickling."""

from __future__ import annotations

import dataclasses
import pickle
from pathlib import Path
from typing import Any

import pytest
from codegraph_expect import FIXTURES

from cairn.codegraph import build, extract_file, index_repository, write_index
from cairn.codegraph.emit import GraphEmitter
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
