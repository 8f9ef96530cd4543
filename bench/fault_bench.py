"""Corruption suite, the long run: flip one byte (or truncate) a real database and a real
artifact at sampled positions and classify every answer (issue 18).

The corpus is ``cairn index`` of Cairn's own ``src/cairn`` package (in the repository,
nothing to download). A fixed set of questions (documents by ID, text and hybrid
search, a traverse, stats; for the artifact, reading and verifying it) is answered on
the intact files first. Then, for each sampled byte position, a copy of the file gets
that byte XORed with a seeded non-zero mask (or is truncated there) and the questions
are asked again in this process, on a fresh handle:

* ``same``: every answer is byte-identical to the intact one;
* ``named``: the damage is reported as a ``CorruptionError`` (or an artifact
  corruption error) and every other answer is identical;
* ``wrong``: an answer differs, or a non-corruption ``CairnError`` (``not_found`` for a
  document that exists, say) stands for an answer: a silent or false answer;
* ``traceback``: anything that is not a ``CairnError`` escaped.

The acceptance is zero ``wrong`` and zero ``traceback``.

    .venv/bin/python bench/fault_bench.py [--positions 1000] [--seed 1] [--json FILE]
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from cairn.errors import ArtifactError, CairnError, CorruptionError  # noqa: E402

NAMED = (CorruptionError, ArtifactError)
"""Errors that report damage as damage."""

OUTCOMES = ("same", "named", "wrong", "traceback")


def build_corpus(folder: Path, source: Path) -> tuple[Path, Path]:
    """Index ``source`` (copied into ``folder``); return (cairn.db, graph.cairn)."""
    from cairn.codegraph.console import index_and_write

    tree = folder / "tree"
    shutil.copytree(source, tree, ignore=shutil.ignore_patterns("__pycache__", ".cairn"))
    index_and_write(tree, workers=1, as_json=True, generated_at="2024-01-01T00:00:00Z")
    return tree / ".cairn" / "cairn.db", tree / ".cairn" / "graph.cairn"


SAMPLE_DOCUMENTS = 40
"""Documents read by ID in every round (the first of the intact file, by key)."""


def sample_documents(path: Path) -> list[tuple[str, str]]:
    """The (collection, id) pairs the rounds read, from the intact file."""
    import sqlite3
    from contextlib import closing

    with closing(sqlite3.connect(path)) as conn:
        return [
            (str(c), str(i))
            for c, i in conn.execute(
                "SELECT collection, id FROM documents WHERE deleted = 0 "
                f"ORDER BY collection, id LIMIT {SAMPLE_DOCUMENTS}"
            )
        ]


TEXT_QUERY = "graph fact"
"""The text search every round asks (words of Cairn's own code)."""
HYBRID_QUERY = "semantic graph admission"
"""The hybrid search every round asks."""


def walk_seed(path: Path) -> tuple[str, str]:
    """The traverse seed: the file with the most outgoing facts in the intact file."""
    import sqlite3
    from contextlib import closing

    with closing(sqlite3.connect(path)) as conn:
        row = conn.execute(
            "SELECT source_collection, source_id FROM facts WHERE deleted = 0 "
            "AND source_collection = 'files' GROUP BY source_collection, source_id "
            "ORDER BY count(*) DESC, source_id LIMIT 1"
        ).fetchone()
    return str(row[0]), str(row[1])


def _database_questions(
    refs: list[tuple[str, str]],
    seed_ref: tuple[str, str],
    text_query: str = TEXT_QUERY,
    hybrid_query: str = HYBRID_QUERY,
) -> dict[str, Callable[[Any], Any]]:
    from cairn.embed import HashingEmbedder
    from cairn.search.contracts import SearchRequest
    from cairn.search.traverse import TraverseRequest, traverse
    from cairn.search.wire import to_json
    from cairn.store.commands import EntityRef
    from cairn.store.stats import database_stats

    embedder = HashingEmbedder()
    vector = tuple(float(x) for x in embedder.embed([hybrid_query])[0])
    text = SearchRequest("main", "symbols", text_field="/text", text=text_query, limit=10)
    hybrid = SearchRequest(
        "main",
        "symbols",
        text_field="/text",
        text=hybrid_query,
        vector_field="embedding",
        vector=vector,
        space=embedder.space,
        limit=10,
    )
    walk = TraverseRequest("main", "code", (EntityRef(*seed_ref),), max_depth=2)
    return {
        "documents": lambda db: [to_json(db.get_document(c, i)) for c, i in refs],
        "text": lambda db: [to_json(hit) for hit in db.search(text)],
        "hybrid": lambda db: [to_json(hit) for hit in db.search(hybrid)],
        "traverse": lambda db: traverse(db, walk).to_json(),
        "stats": lambda db: database_stats(db).to_json(),
    }


def database_answers(path: Path, questions: dict[str, Callable[[Any], Any]]) -> dict[str, Any]:
    """Each question's answer on ``path`` (a CairnError is an answer too: its class)."""
    import cairn

    answers: dict[str, Any] = {}
    try:
        db = cairn.open(path)
    except CairnError as error:
        return {"open": error}
    with db:
        for name, ask in questions.items():
            try:
                answers[name] = orjson.dumps(ask(db), option=orjson.OPT_SORT_KEYS)
            except CairnError as error:
                answers[name] = error
    return answers


def artifact_answers(path: Path) -> dict[str, Any]:
    from cairn.artifact.reader import read_artifact

    try:
        graph = read_artifact(path).graph
    except CairnError as error:
        return {"read": error}
    dumped = orjson.dumps(
        {
            "nodes": sorted(node.id for node in graph.nodes()),
            "facts": sorted(fact.id for fact in graph.facts()),
        }
    )
    return {"read": dumped}


def classify(intact: dict[str, Any], found: dict[str, Any]) -> tuple[str, str]:
    """One damaged copy's outcome, judged against the intact answers, and why."""
    named = False
    for name, answer in found.items():
        if isinstance(answer, NAMED):
            named = True
        elif isinstance(answer, CairnError):
            # A typed answer that is not "this is damaged".
            return "wrong", f"{name}: {answer.code}: {answer.message[:120]}"
        elif answer != intact.get(name):
            return "wrong", f"{name}: a different answer"
    if set(found) != set(intact) and not named:
        return "wrong", "questions missing"
    return ("named" if named else "same"), ""


def damaged_copy(source: Path, target: Path, position: int, mask: int | None) -> None:
    """``source`` with the byte at ``position`` XORed with ``mask`` (None: truncated)."""
    data = bytearray(source.read_bytes())
    if mask is None:
        del data[position:]
    else:
        data[position] ^= mask
    target.write_bytes(bytes(data))


def page_owners(path: Path) -> tuple[int, dict[int, str]]:
    """``(page size, page number -> table or index)`` of a SQLite file (empty otherwise):
    where each damaged byte landed, for the report."""
    import sqlite3
    from contextlib import closing

    if path.suffix != ".db":
        return 1, {}
    with closing(sqlite3.connect(path)) as conn:
        size = int(conn.execute("PRAGMA page_size").fetchone()[0])
        return size, {
            int(page): str(name) for name, page in conn.execute("SELECT name, pageno FROM dbstat")
        }


def run_file(
    source: Path,
    answers: Callable[[Path], dict[str, Any]],
    positions: list[tuple[int, int | None]],
    scratch: Path,
) -> tuple[Counter[str], list[dict[str, Any]]]:
    """Damage ``source`` at each position; count outcomes and keep every bad case."""
    intact = answers(source)
    page_size, owners = page_owners(source)
    counts: Counter[str] = Counter()
    bad: list[dict[str, Any]] = []
    for index, (position, mask) in enumerate(positions):
        copy = scratch / f"{index}{source.suffix}"
        damaged_copy(source, copy, position, mask)
        try:
            outcome, why = classify(intact, answers(copy))
        except Exception as exc:  # the suite's point: anything uncaught is counted
            outcome = "traceback"
            why = repr(exc)[:300]
        if outcome in ("wrong", "traceback"):
            where = owners.get(position // page_size + 1, "")
            bad.append({"position": position, "mask": mask, "in": where, "why": why})
        counts[outcome] += 1
        for leftover in scratch.glob(f"{index}{source.suffix}*"):
            leftover.unlink()
    return counts, bad


def sample(size: int, count: int, rng: random.Random) -> list[tuple[int, int | None]]:
    """``count`` positions: nine flips for every truncation, positions uniform."""
    picks: list[tuple[int, int | None]] = []
    for index in range(count):
        position = rng.randrange(size)
        mask = None if index % 10 == 9 else rng.randrange(1, 256)
        picks.append((position, mask))
    return picks


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--positions", type=int, default=1000, help="per file")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    report: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as scratch_name:
        scratch = Path(scratch_name)
        started = time.perf_counter()
        database, artifact = build_corpus(scratch, REPO / "src" / "cairn")
        runs = scratch / "runs"
        runs.mkdir()
        questions = _database_questions(sample_documents(database), walk_seed(database))
        for label, path, answers in (
            ("cairn.db", database, lambda found: database_answers(found, questions)),
            ("graph.cairn", artifact, artifact_answers),
        ):
            positions = sample(path.stat().st_size, args.positions, rng)
            counts, bad = run_file(path, answers, positions, runs)
            report[label] = {
                "bytes": path.stat().st_size,
                "positions": len(positions),
                **{outcome: counts.get(outcome, 0) for outcome in OUTCOMES},
                "bad": bad[:50],
            }
        elapsed = time.perf_counter() - started
    print(f"fault bench: seed {args.seed}, {args.positions} positions per file, {elapsed:.0f} s")
    print(f"| file | bytes | positions | {' | '.join(OUTCOMES)} |")
    print("|---|---|---|" + "---|" * len(OUTCOMES))
    for label, found in report.items():
        cells = " | ".join(str(found[outcome]) for outcome in OUTCOMES)
        print(f"| {label} | {found['bytes']} | {found['positions']} | {cells} |")
    for label, found in report.items():
        for case in found["bad"][:10]:
            print(f"  {label}: {case}")
    if args.json:
        args.json.write_text(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode())
    failed = any(found["wrong"] or found["traceback"] for found in report.values())
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
