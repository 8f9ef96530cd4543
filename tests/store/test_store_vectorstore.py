"""Vector blocks: every vector stored once, compressed, checksummed, read back exactly."""

from __future__ import annotations

import sqlite3
import zlib
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest
from store_helpers import SPACE, cmd, current_vectors, put, rows, setup_docs, vector_values

import cairn.store as store
from cairn.embed import HashingEmbedder
from cairn.errors import CorruptionError
from cairn.index import open as open_indexed
from cairn.store import PutVector
from cairn.store.schema import migrate
from cairn.store.vectorstore import (
    CODEC_RAW,
    CODEC_ZLIB,
    VECTOR_BLOCK_ROWS,
    decode_block,
    encode_block,
    write_vectors,
)


def test_sparse_rows_are_compressed_and_dense_ones_kept_raw() -> None:
    sparse = HashingEmbedder().embed(["alpha beta", "gamma", "get_user_name"])
    codec, checksum, data = encode_block(sparse)
    assert codec == CODEC_ZLIB and len(data) < sparse.nbytes / 4
    assert checksum == zlib.crc32(sparse.astype("<f4").tobytes())
    decoded = decode_block(1, codec, checksum, data, 3, sparse.shape[1])
    assert decoded.tobytes() == sparse.astype("<f4").tobytes()
    dense = np.random.default_rng(7).standard_normal((4, 64)).astype(np.float32)
    codec, checksum, data = encode_block(dense)
    assert codec == CODEC_RAW and data == dense.tobytes()
    assert decode_block(1, codec, checksum, data, 4, 64).tolist() == dense.tolist()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"checksum": 1}, "fails its checksum"),
        ({"rows": 3}, "holds 16 bytes, not 3 rows"),
        ({"codec": 9}, "unknown codec 9"),
        ({"codec": CODEC_ZLIB}, "does not decompress"),
    ],
)
def test_a_damaged_block_is_refused_with_corruption(change: dict[str, int], message: str) -> None:
    values = np.asarray([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)
    stored = {"codec": CODEC_RAW, "checksum": zlib.crc32(values.tobytes()), "rows": 2}
    stored.update(change)
    with pytest.raises(CorruptionError, match=message):
        decode_block(5, stored["codec"], stored["checksum"], values.tobytes(), stored["rows"], 2)


def test_blocks_split_at_gaps_and_at_the_block_size(tmp_path: Path) -> None:
    with closing(sqlite3.connect(tmp_path / "v.db", isolation_level=None)) as conn:
        migrate(conn)
        conn.execute("BEGIN")
        count = VECTOR_BLOCK_ROWS + 3
        numbers = [*range(1, VECTOR_BLOCK_ROWS + 2), 2000, 2001]
        matrix = np.arange(count * 2, dtype=np.float32).reshape(count, 2)
        conn.execute(
            "INSERT INTO vector_spaces (collection, field, space, dimension) "
            "VALUES ('c', 'f', x'00', 2)"
        )
        write_vectors(conn, 1, numbers, [7] * count, 3, matrix)
        blocks = conn.execute("SELECT first_row, rows FROM vector_blocks ORDER BY 1").fetchall()
        assert blocks == [(1, VECTOR_BLOCK_ROWS), (VECTOR_BLOCK_ROWS + 1, 1), (2000, 2)]
        stored = vector_values(conn)
        assert [row for row, _, _ in stored] == numbers
        assert b"".join(data for _, _, data in stored) == matrix.tobytes()
        conn.execute("ROLLBACK")


def test_a_database_keeps_one_copy_of_each_vector(db_path: Path) -> None:
    with store.open(db_path) as db:
        setup_docs(db)
        db.command(cmd(put("docs", "a"), put("docs", "b")))
        db.command(cmd(PutVector("docs", "a", "embedding", (0.6, 0.8))))
        db.command(cmd(PutVector("docs", "b", "embedding", (1.0, 0.0))))
    assert rows(db_path, "SELECT count(*) FROM vector_blocks") == [(2,)]
    assert rows(db_path, "SELECT count(*) FROM vector_spaces") == [(1,)]
    found = {
        item[1]: np.frombuffer(item[6], dtype="<f4").tolist() for item in current_vectors(db_path)
    }
    assert found == {"a": pytest.approx([0.6, 0.8]), "b": [1.0, 0.0]}


def test_a_damaged_vector_block_is_reported_not_searched(db_path: Path) -> None:
    with open_indexed(db_path) as db:
        setup_docs(db)
        db.command(cmd(put("docs", "a")))
        db.command(cmd(PutVector("docs", "a", "embedding", (0.6, 0.8))))
    with closing(sqlite3.connect(db_path)) as conn:
        (data,) = conn.execute("SELECT data FROM vector_blocks").fetchone()
        damaged = bytearray(data)
        damaged[0] ^= 0x01
        conn.execute("UPDATE vector_blocks SET data = ?", (bytes(damaged),))
        conn.commit()
    with open_indexed(db_path) as db, pytest.raises(CorruptionError, match="vector block 1"):
        db.vector_search("docs", "embedding", (1.0, 1.0), SPACE)


def test_a_vector_row_without_values_is_reported(db_path: Path) -> None:
    with open_indexed(db_path) as db:
        setup_docs(db)
        db.command(cmd(put("docs", "a")))
        db.command(cmd(PutVector("docs", "a", "embedding", (0.6, 0.8))))
    with closing(sqlite3.connect(db_path)) as conn:
        conn.execute("DELETE FROM vector_blocks")
        conn.commit()
    with open_indexed(db_path) as db, pytest.raises(CorruptionError, match="no stored values"):
        db.vector_search("docs", "embedding", (1.0, 1.0), SPACE)
