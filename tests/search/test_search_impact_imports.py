"""What breaks if a module-level name changes: the files that import it by name depend on
it (``imports`` facts point at the defining file, with the imported name in their
discriminator, spec code-graph §4). Expected dependents are read by hand from the
import lines of the tree below."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from search_helpers import tree_db

import cairn
from cairn.errors import CorruptionError
from cairn.search.impact import ImpactRequest, impact

TREE = {
    "pkg/__init__.py": "",
    "pkg/limits.py": 'DEFAULT = "code"\nOTHER = 1\n',
    "pkg/reader.py": "from pkg.limits import DEFAULT\n\n\ndef graph_name():\n    return DEFAULT\n",
    "pkg/aliased.py": "from .limits import DEFAULT as D\n\nVALUE = D\n",
    "pkg/other.py": "from pkg.limits import OTHER\n",
    # A module import reads the name through an attribute: no fact names it.
    "pkg/whole.py": "import pkg.limits\n\nX = pkg.limits.DEFAULT\n",
    "pkg/user.py": "from pkg.reader import graph_name\n\n\ndef use():\n    return graph_name()\n",
}


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tree_db(tmp_path, TREE)


def _hops(path: Path, name: str, **options: int) -> tuple[dict[str, int], bool, str | None]:
    with cairn.open(path) as db:
        answer = impact(db, ImpactRequest(db.name, name, **options))
    return {d.ref.id: d.hops for d in answer.top}, answer.complete, answer.stopped_by


def test_the_files_importing_a_variable_by_name_depend_on_it(db_path: Path) -> None:
    found, complete, _ = _hops(db_path, "pkg.limits.DEFAULT")
    assert complete
    assert found == {
        "file:pkg/reader.py": 1,  # from pkg.limits import DEFAULT
        "file:pkg/aliased.py": 1,  # from .limits import DEFAULT as D
        "file:pkg/user.py": 2,  # imports reader.py
    }
    other, _, _ = _hops(db_path, "pkg.limits.OTHER")
    assert other == {"file:pkg/other.py": 1}


def test_importers_stay_within_the_limits(db_path: Path) -> None:
    one_hop, complete, _ = _hops(db_path, "pkg.limits.DEFAULT", max_depth=1)
    assert complete and one_hop == {"file:pkg/reader.py": 1, "file:pkg/aliased.py": 1}
    # The seed counts against the cap, as in a traversal: room for one importer.
    capped, complete, stopped = _hops(db_path, "pkg.limits.DEFAULT", max_vertices=2)
    assert (complete, stopped) == (False, "max_vertices")
    assert capped == {"file:pkg/aliased.py": 1}


def test_a_damaged_import_fact_is_named_not_skipped(db_path: Path) -> None:
    with sqlite3.connect(db_path) as conn:
        (shape,) = conn.execute(
            "SELECT shape FROM facts WHERE relation = 'imports' "
            "AND source_id = 'file:pkg/reader.py' AND target_id = 'file:pkg/limits.py'"
        ).fetchone()
        conn.execute(
            "UPDATE fact_shapes SET data = replace(data, 'DEFAULT', 'DEFAULX') WHERE id = ?",
            (shape,),
        )
    with pytest.raises(CorruptionError), cairn.open(db_path) as db:
        impact(db, ImpactRequest(db.name, "pkg.limits.DEFAULT"))


def test_every_partial_answer_lists_true_hop_counts(db_path: Path) -> None:
    # Through the importers the walk goes on from a whole first hop, so a cut-short
    # answer holds only vertices at the hops the complete answer gives them.
    truth, complete, _ = _hops(db_path, "pkg.limits.DEFAULT")
    assert complete
    for limit in range(1, 12):
        for options in ({"max_edges": limit}, {"max_vertices": limit}):
            found, complete, stopped = _hops(db_path, "pkg.limits.DEFAULT", **options)
            assert all(truth[ref] == hops for ref, hops in found.items()), (options, found)
            assert complete == (stopped is None)
            assert complete == (found == truth), (options, found)
