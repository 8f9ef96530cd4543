"""Property (issue 20): any sequence of edits, re-indexed step by step with the cache and
loaded into one database, leaves after every step exactly what a clean build of the
same tree gives: byte-identical ``graph.cairn`` and manifest (fixed time), and equal
store contents (live documents, facts, occurrences, vectors, and the answers of the
text columns) against a fresh database loaded from the clean build.

Most steps keep what they resolved for the next one, as ``cairn watch`` does
(``cairn.codegraph.incremental``). The repository mixes Python, TypeScript and Go
fixtures; the edits add and remove
files, rename them, add functions with calls across modules, move every definition of
a file down (a new import on top), and break and repair a file mid-edit.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from unittest import mock

from codegraph_expect import FIXTURES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "store"))

from store_helpers import current_vectors, fact_records, occurrence_records, rows

import cairn
from cairn.artifact import segments
from cairn.artifact.segments import PrintedSegments
from cairn.codegraph import index_repository, write_index
from cairn.codegraph.cache import CACHE_FILENAME
from cairn.store.load import load_semantic_graph
from cairn.store.loadkeys import KeyMemo

FIXED_TIME = "2024-01-01T00:00:00Z"
QUERIES = ("load user", "area circle", "write item", "added helper", "round value")

PY_CALLS = ("load_user(1)", "blueprint_name(None)", "len([])")
TS_CALLS = ("round(1)", "totalArea(2)", "Math.max(1, 2)")
GO_CALLS = ("health(w, r)", "version(w, r)")


def _python_files(repo: Path) -> list[Path]:
    return sorted(repo.rglob("*.py"))


def _add_python_function(repo: Path, number: int, pick: int) -> None:
    files = _python_files(repo)
    target = files[pick % len(files)]
    call = PY_CALLS[pick % len(PY_CALLS)]
    with target.open("a") as handle:
        handle.write(f"\n\ndef added_helper_{number}():\n    return {call}\n")


def _add_python_module(repo: Path, number: int, pick: int) -> None:
    (repo / "app" / f"extra_{number}.py").write_text(
        "from app.services import load_user\n\n\n"
        f"def extra_{number}():\n    return load_user({pick})\n"
    )


def _add_ts_function(repo: Path, number: int, pick: int) -> None:
    files = sorted((repo / "src").glob("*.ts"))
    target = files[pick % len(files)]
    call = TS_CALLS[pick % len(TS_CALLS)]
    with target.open("a") as handle:
        handle.write(f"\nexport function addedHelper{number}(): number {{\n  return {call};\n}}\n")


def _add_go_function(repo: Path, number: int, pick: int) -> None:
    target = repo / "server.go"
    if not target.exists():
        return
    call = GO_CALLS[pick % len(GO_CALLS)]
    with target.open("a") as handle:
        handle.write(
            f"\nfunc addedHelper{number}(w http.ResponseWriter, r *http.Request) {{\n\t{call}\n}}\n"
        )


def _move_definitions(repo: Path, number: int, pick: int) -> None:
    files = _python_files(repo)
    target = files[pick % len(files)]
    target.write_text(f"import os as _os_{number}\n" + target.read_text())


def _break(repo: Path, number: int, pick: int) -> None:
    files = _python_files(repo)
    target = files[pick % len(files)]
    lines = target.read_text().splitlines(keepends=True)
    at = pick % (len(lines) + 1)
    target.write_text("".join([*lines[:at], f"def typing_{number}(:\n", *lines[at:]]))


def _repair(repo: Path, number: int, pick: int) -> None:
    for path in _python_files(repo):
        text = path.read_text()
        if "(:\n" in text:
            kept = [line for line in text.splitlines(keepends=True) if not line.endswith("(:\n")]
            path.write_text("".join(kept))


def _delete(repo: Path, number: int, pick: int) -> None:
    candidates = [p for p in sorted(repo.rglob("*")) if p.is_file() and p.suffix in (".py", ".ts")]
    if len(candidates) > 3:
        candidates[pick % len(candidates)].unlink()


def _rename(repo: Path, number: int, pick: int) -> None:
    files = _python_files(repo)
    target = files[pick % len(files)]
    if target.name != "__init__.py":
        target.rename(target.with_name(f"renamed_{number}_{target.name}"))


EDITS: dict[str, Callable[[Path, int, int], None]] = {
    "add python function": _add_python_function,
    "add python module": _add_python_module,
    "add ts function": _add_ts_function,
    "add go function": _add_go_function,
    "move definitions": _move_definitions,
    "break a file": _break,
    "repair files": _repair,
    "delete a file": _delete,
    "rename a file": _rename,
}


def _repository(root: Path) -> Path:
    repo = root / "repo"
    shutil.copytree(FIXTURES / "flask_app", repo)
    shutil.copytree(FIXTURES / "ts_lib", repo, dirs_exist_ok=True)
    shutil.copytree(FIXTURES / "go_service", repo, dirs_exist_ok=True)
    return repo


def _state(db_path: Path) -> dict[str, object]:
    state: dict[str, object] = {
        "documents": rows(
            db_path, "SELECT collection, id, body FROM documents WHERE deleted = 0 ORDER BY 1, 2"
        ),
        "facts": fact_records(db_path),
        "occurrences": occurrence_records(db_path),
        "vectors": [(c, i, data) for c, i, _, _, _, _, data in current_vectors(db_path)],
    }
    with cairn.open(db_path) as db:
        state["text"] = {
            query: [
                (hit.ref.id, round(hit.score, 9))
                for hit in db.text_search("symbols", "/text", query)
            ]
            for query in QUERIES
        }
    return state


@settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    st.lists(
        st.tuples(st.sampled_from(sorted(EDITS)), st.integers(min_value=0, max_value=50)),
        min_size=1,
        max_size=6,
    )
)
def test_every_step_matches_a_clean_build(edits: list[tuple[str, int]]) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        repo = _repository(root)
        index_repository(repo, cache=root / CACHE_FILENAME, remember=True)  # fills the cache
        # graph.cairn as `cairn watch` writes it: from the segments printed in earlier
        # steps (small segments, so an edit leaves most of them to reuse).
        printed = PrintedSegments()
        with mock.patch.object(segments, "SEGMENT_RECORDS", 8):
            _steps(repo, root, edits, printed)


def _steps(repo: Path, root: Path, edits: list[tuple[str, int]], printed: PrintedSegments) -> None:
    """Apply ``edits`` in turn; after each, the remembering build equals a clean one."""
    cache = root / CACHE_FILENAME
    living = root / "living"
    memo = KeyMemo()  # the watching process's: one-shot steps are other processes
    for step, (name, pick) in enumerate(edits):
        EDITS[name](repo, step, pick)
        # Most steps remember, as `cairn watch` does (Python modules an edit cannot
        # reach are replayed from the round before); every third is a one-shot run,
        # so a remembering step may start from a round several edits old.
        remember = step % 3 != 2
        cached = index_repository(repo, workers=1 + step % 2, cache=cache, remember=remember)
        if step % 2:
            printed.update(cached.graph)  # prepared, then written: the same bytes
        ours = write_index(cached, living, generated_at=FIXED_TIME, printed=printed)
        with cairn.open(living / "cairn.db") as db:  # as `cairn index` loads: by keys
            load_semantic_graph(
                db, cached.graph, incremental=True, key_memo=memo if remember else None
            )
            memo.settle()
        clean = index_repository(repo)
        fresh = root / f"clean{step}"
        theirs = write_index(clean, fresh, generated_at=FIXED_TIME)
        assert ours.graph_path.read_bytes() == theirs.graph_path.read_bytes(), (step, name)
        assert ours.manifest_path.read_bytes() == theirs.manifest_path.read_bytes(), name
        with cairn.open(fresh / "cairn.db") as db:
            load_semantic_graph(db, clean.graph)
        assert _state(living / "cairn.db") == _state(fresh / "cairn.db"), (step, name)
