"""Column snapshots: a cold open maps persisted arrays and answers exactly like a rebuild.

The oracle is a handle whose columns were built from the rows (the snapshot removed),
over the same file at the same position: every text, vector and hybrid answer must be
identical, before and after later writes, deletes and re-indexing. A damaged, foreign
or stale snapshot must be detected and ignored.
"""

from __future__ import annotations

import random
import sqlite3
from contextlib import closing, suppress
from pathlib import Path

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from store_helpers import SPACE, cmd, put, rows

import cairn
from cairn.errors import NotFoundError
from cairn.index import Database
from cairn.search.contracts import SearchRequest
from cairn.store import ConfigureCollection, DeleteDocument, PutVector, VectorField

WORDS = [f"w{i}" for i in range(40)] + ["getUserName", "parse_args", "alpha", "beta"]


def text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 15)))


def vector(rng: random.Random) -> tuple[float, float]:
    return (rng.uniform(-1, 1), rng.uniform(-1, 1))


def history(db: Database, seed: int, commands: int) -> None:
    """Seeded puts, vectors, rewrites and deletes over two collections."""
    rng = random.Random(seed)
    for _ in range(commands):
        mutations: list[object] = []
        for _ in range(rng.randint(1, 6)):
            collection = rng.choice(["docs", "notes"])
            doc_id = f"d{rng.randint(0, 40)}"
            mutations.append(put(collection, doc_id, text(rng)))
            if rng.random() < 0.7:
                mutations.append(PutVector(collection, doc_id, "embedding", vector(rng)))
        db.command(cmd(*mutations))  # type: ignore[arg-type]
        if rng.random() < 0.3:
            victim = f"d{rng.randint(0, 40)}"
            with suppress(NotFoundError):
                db.command(cmd(DeleteDocument("docs", victim)))


def configure(db: Database) -> None:
    vectors = (VectorField("embedding", SPACE),)
    db.command(
        cmd(
            ConfigureCollection("docs", ("/text",), vectors),
            ConfigureCollection("notes", ("/text",), vectors),
        )
    )


QUERIES = ["w1 w2", "alpha", "user name", "parse", "w3 beta w7", "nothing here"]


def answers(db: Database) -> list[object]:
    """Every kind of answer the columns feed, for a fixed set of queries."""
    found: list[object] = []
    rng = random.Random(99)
    for collection in ("docs", "notes"):
        for query in QUERIES:
            found.append(db.text_search(collection, "/text", query, limit=50))
            probe = vector(rng)
            found.append(db.vector_search(collection, "embedding", probe, SPACE, limit=50))
            request = SearchRequest(
                "main",
                collection,
                text_field="/text",
                text=query,
                vector_field="embedding",
                vector=probe,
                space=SPACE,
                limit=20,
                explain=True,
            )
            found.append(db.search(request))
    return found


def rebuilt_answers(path: Path) -> list[object]:
    """The oracle: answers of a handle built from rows (the snapshot rows hidden)."""
    copy = path.with_name("oracle.db")
    with closing(sqlite3.connect(path)) as source, closing(sqlite3.connect(copy)) as target:
        source.backup(target)
        target.execute("DROP TABLE IF EXISTS column_snapshot")
        target.commit()
    try:
        with cairn.open(copy) as db:
            assert db.columns_snapshot_position is None
            return answers(db)
    finally:
        for suffix in ("", "-wal", "-shm"):
            Path(str(copy) + suffix).unlink(missing_ok=True)


@pytest.fixture
def filled(db_path: Path) -> Path:
    with cairn.open(db_path) as db:
        configure(db)
        history(db, seed=1, commands=40)
        db.command(
            cmd(
                ConfigureCollection(
                    "notes", ("/text", "/title"), (VectorField("embedding", SPACE),)
                )
            )
        )
        history(db, seed=2, commands=10)
    return db_path


def test_a_snapshot_open_answers_like_a_rebuild(filled: Path) -> None:
    with cairn.open(filled) as db:
        position = db.checkpoint_columns()
        assert position == db.position
    with cairn.open(filled) as db:
        mapped = answers(db)
        assert db.columns_snapshot_position == position
    assert mapped == rebuilt_answers(filled)
    assert any(mapped)


def test_writes_and_deletes_after_the_snapshot_are_caught_up(filled: Path) -> None:
    with cairn.open(filled) as db:
        snapped = db.checkpoint_columns()
        history(db, seed=3, commands=25)
        db.command(
            cmd(
                ConfigureCollection("docs", ("/text", "/other"), (VectorField("embedding", SPACE),))
            )
        )
        history(db, seed=4, commands=5)
    with cairn.open(filled) as db:
        assert db.position > snapped
        assert answers(db) == rebuilt_answers(filled)
        assert db.columns_snapshot_position == snapped
        history(db, seed=5, commands=10)  # and writes after the open, through this handle
        assert answers(db) == rebuilt_answers(filled)


def test_the_snapshot_written_by_a_handle_with_columns_equals_a_fresh_one(filled: Path) -> None:
    with cairn.open(filled) as db:
        answers(db)  # the handle's own columns are built and at the position
        db.checkpoint_columns()
    own = rows(filled, "SELECT name, part, data FROM column_snapshot ORDER BY name, part")
    with cairn.open(filled) as db:
        db.command(cmd(ConfigureCollection("scratch", ("/text",))))
    with cairn.open(filled) as db:  # columns empty: a fresh build at the new position
        db.checkpoint_columns()
    fresh = rows(filled, "SELECT name, part, data FROM column_snapshot ORDER BY name, part")
    strip = [(n, p, d) for n, p, d in own if n != "header"]
    assert strip == [(n, p, d) for n, p, d in fresh if n != "header"]


def _corrupt(path: Path, sql: str, *args: object) -> None:
    with closing(sqlite3.connect(path)) as conn:
        conn.execute(sql, args)
        conn.commit()


def _header(path: Path) -> dict[str, object]:
    (data,) = rows(path, "SELECT data FROM column_snapshot WHERE name = 'header'")[0]
    header = orjson.loads(data)
    assert isinstance(header, dict)
    return header


def _set_header(path: Path, header: dict[str, object]) -> None:
    _corrupt(
        path, "UPDATE column_snapshot SET data = ? WHERE name = 'header'", orjson.dumps(header)
    )


def _flip_a_byte(path: Path) -> None:
    name, data = rows(path, "SELECT name, data FROM column_snapshot WHERE name = 'slots.birth'")[0]
    damaged = bytearray(data)
    damaged[len(damaged) // 2] ^= 0xFF
    _corrupt(path, "UPDATE column_snapshot SET data = ? WHERE name = ?", bytes(damaged), name)


def _other_incarnation(path: Path) -> None:
    header = _header(path)
    header["incarnation"] = "00000000-0000-0000-0000-000000000000"
    _set_header(path, header)


def _ahead(path: Path) -> None:
    header = _header(path)
    scalars = header["scalars"]
    assert isinstance(scalars, dict)
    scalars["position"] = 10**6
    _set_header(path, header)


def _claims_fewer_slots(path: Path) -> None:
    header = _header(path)
    scalars = header["scalars"]
    assert isinstance(scalars, dict)
    scalars["last_slot"] = int(scalars["last_slot"]) - 1
    _set_header(path, header)


def _missing_part(path: Path) -> None:
    _corrupt(path, "DELETE FROM column_snapshot WHERE name = 'slots.death'")


def _other_format(path: Path) -> None:
    header = _header(path)
    header["format"] = "cairn.columns/0"
    _set_header(path, header)


def _garbage_header(path: Path) -> None:
    _corrupt(path, "UPDATE column_snapshot SET data = ? WHERE name = 'header'", b"{not json")


def _wrong_term(path: Path) -> None:
    _corrupt(path, "UPDATE terms SET term = 'zzz' WHERE id = (SELECT max(id) FROM terms)")


DAMAGE = {
    "flipped byte": _flip_a_byte,
    "other incarnation": _other_incarnation,
    "position ahead of the file": _ahead,
    "claims fewer slots": _claims_fewer_slots,
    "missing array": _missing_part,
    "other format": _other_format,
    "garbage header": _garbage_header,
    "terms differ": _wrong_term,
}


@pytest.mark.parametrize("name", sorted(DAMAGE))
def test_a_damaged_or_stale_snapshot_is_ignored(filled: Path, name: str) -> None:
    with cairn.open(filled) as db:
        db.checkpoint_columns()
    DAMAGE[name](filled)
    with cairn.open(filled) as db:
        found = answers(db)
        assert db.columns_snapshot_position is None
    assert found == rebuilt_answers(filled)


def test_a_snapshot_from_another_file_is_ignored(filled: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    with cairn.open(other) as db:
        configure(db)
        history(db, seed=1, commands=40)
        db.checkpoint_columns()
    with closing(sqlite3.connect(filled)) as conn:
        conn.execute("ATTACH DATABASE ? AS other", (str(other),))
        conn.execute("CREATE TABLE column_snapshot AS SELECT * FROM other.column_snapshot")
        conn.commit()
    with cairn.open(filled) as db:
        found = answers(db)
        assert db.columns_snapshot_position is None
    assert found == rebuilt_answers(filled)


def test_a_checkpoint_does_not_move_the_position_or_touch_the_truth(filled: Path) -> None:
    tables = ("documents", "slots", "doc_terms", "vector_rows", "changes", "commands", "meta")
    before = {name: rows(filled, f"SELECT * FROM {name}") for name in tables}
    snapshot = "SELECT count(*) FROM sqlite_master WHERE name = 'column_snapshot'"
    assert rows(filled, snapshot) == [(0,)]  # created by the first checkpoint, not at open
    with cairn.open(filled) as db:
        position = db.position
        assert db.checkpoint_columns() == position
        assert db.position == position
    assert {name: rows(filled, f"SELECT * FROM {name}") for name in tables} == before


@pytest.mark.parametrize(
    ("values", "kind"),
    [
        ([0.0, 3.0, 255.0], np.uint8),
        ([1.0, 256.0], np.uint16),
        ([7.0, 65536.0], np.uint32),
        ([1.0, 2.0**32], np.float64),  # too large: kept as it was
        ([1.0, 2.5], np.float64),  # not whole: kept
        ([-1.0, 2.0], np.float64),  # negative: kept
    ],
)
def test_snapshot_arrays_take_the_smallest_exact_unsigned_type(
    values: list[float], kind: type
) -> None:
    from cairn.index.columns import _compact

    found = _compact(np.asarray(values, dtype=np.float64))
    assert found.dtype == kind
    assert found.astype(np.float64).tolist() == values


def test_term_counts_are_stored_in_one_byte_and_answer_alike(filled: Path) -> None:
    with cairn.open(filled) as db:
        db.checkpoint_columns()
    kinds = rows(
        filled, "SELECT data FROM column_snapshot WHERE name = 'header'"
    )  # the manifest records each array's dtype
    manifest = orjson.loads(kinds[0][0])["arrays"]
    counts = [entry["dtype"] for name, entry in manifest.items() if name.endswith(".counts")]
    assert counts and set(counts) == {"|u1"}
    with cairn.open(filled) as db:
        found = answers(db)
        assert db.columns_snapshot_position is not None
    assert found == rebuilt_answers(filled)


def _numpy_owned(array: np.ndarray) -> bool:
    """Whether ``array``'s memory belongs to numpy (not to a ``bytes`` object)."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array.base is None


def test_vectors_are_not_in_the_snapshot_and_load_from_their_blocks(filled: Path) -> None:
    """Schema 4 stores each vector once: the snapshot holds no matrix, and the restored
    columns build numpy-owned matrices from the vector blocks."""
    from cairn.canonical import canonical_bytes

    with cairn.open(filled) as db:
        db.checkpoint_columns()
    assert not [name for name in _header(filled)["arrays"] if "vector" in name]  # type: ignore[union-attr]
    with cairn.open(filled) as db:
        found = answers(db)  # the first cut restores the snapshot
        assert db.columns_snapshot_position is not None
        with db.read_cut() as cut:
            column = cut.columns.vector_column(
                "docs", "embedding", canonical_bytes(SPACE.to_json())
            )
            assert column is not None and len(column.matrix) > 0
            assert _numpy_owned(column.matrix)
    assert found == rebuilt_answers(filled)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.lists(st.tuples(st.integers(1, 70_000), st.integers(1, 300)), max_size=6),
        min_size=1,
        max_size=30,
    ),
    st.integers(0, 3),
)
def test_exported_postings_are_grouped_by_term_then_slot(
    documents: list[list[tuple[int, int]]], later: int
) -> None:
    """A field's export, base alone or base plus later tails, against a dict oracle:
    terms ascending, each term's postings in the order their slots were added."""
    from cairn.index.columns import _TextField

    field = _TextField()
    expected: dict[int, list[tuple[int, int]]] = {}
    split = max(1, len(documents) - later)
    for batch in (documents[:split], documents[split:]):
        if not batch:
            continue
        first = 1 + sum(1 for _ in expected.get(-1, []))
        slots, terms, term_slots, counts = [], [], [], []
        for offset, postings in enumerate(batch):
            slot = first + offset
            expected.setdefault(-1, []).append((slot, 0))
            slots.append(slot)
            for term, count in dict(postings).items():  # a term once per document
                terms.append(term)
                term_slots.append(slot)
                counts.append(count)
                expected.setdefault(term, []).append((slot, count))
        field.add(
            np.asarray(slots, dtype=np.int64),
            np.ones(len(slots), dtype=np.float64),
            np.asarray(terms, dtype=np.uint32),
            np.asarray(term_slots, dtype=np.uint32),
            np.asarray(counts, dtype=np.uint32),
        )
    exported = field.export()
    oracle = {term: found for term, found in expected.items() if term != -1}
    assert exported["terms"].tolist() == sorted(oracle)
    bounds = exported["bounds"].tolist()
    for index, term in enumerate(sorted(oracle)):
        begin, end = bounds[index], bounds[index + 1]
        pairs = list(
            zip(
                exported["slots"][begin:end].tolist(),
                exported["counts"][begin:end].tolist(),
                strict=True,
            )
        )
        assert pairs == oracle[term]
    assert bounds[-1] == sum(len(found) for found in oracle.values())
    for name in ("slots", "counts"):  # the smallest exact unsigned type, either way
        values = exported[name]
        if len(values):
            top = int(values.max())
            wanted = np.uint8 if top < 2**8 else np.uint16 if top < 2**16 else np.uint32
            assert values.dtype == wanted


@pytest.mark.parametrize("rows_at_once", [1, 3, 16_384])
def test_a_first_load_groups_postings_like_the_sorting_path(
    filled: Path, rows_at_once: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The two-pass grouping of a first load (batches of any size) against the plain
    path: every row read at once, concatenated and sorted by term (``_TextField.add``)."""
    from cairn.index import postings
    from cairn.index.columns import Columns, _TextField, _unpack

    monkeypatch.setattr(postings, "TEXT_LOAD_ROWS", rows_at_once)
    with closing(sqlite3.connect(filled)) as conn:
        position = int(conn.execute("SELECT value FROM meta WHERE key = 'position'").fetchone()[0])
        fresh = Columns(vectors=False, text=True)
        fresh._snapshot_position = -1  # from the rows, not from a snapshot
        fresh.catch_up(conn, position)
        rows = conn.execute(
            "SELECT d.slot, s.collection, d.field, d.length, d.term_ids, d.counts, d.checksum "
            "FROM doc_terms AS d JOIN slots AS s ON s.slot = d.slot "
            "ORDER BY s.collection, d.field, d.slot"
        ).fetchall()
    keys = sorted({(row[1], row[2]) for row in rows})
    assert sorted(fresh._text) == keys and len(keys) >= 2  # docs /text, notes /text, /title
    for key in keys:
        plain = _TextField()
        plain.add(*_unpack(key, [row for row in rows if (row[1], row[2]) == key], 2**31))
        grouped, expected = fresh._text[key].export(), plain.export()
        assert grouped.keys() == expected.keys()
        for name, array in expected.items():
            assert grouped[name].dtype == array.dtype, (key, name)
            assert np.array_equal(grouped[name], array), (key, name)
