"""Fixtures for store tests: a fresh database file per test, always closed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import cairn.store as store
from cairn.index import Database as IndexedDatabase
from cairn.index import open as open_indexed
from cairn.store import Database


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """Where the test's database file lives."""
    return tmp_path / "cairn.db"


@pytest.fixture
def db(db_path: Path) -> Iterator[Database]:
    """An open, empty database named ``main``."""
    database = store.open(db_path)
    try:
        yield database
    finally:
        database.close()


@pytest.fixture
def indexed(db_path: Path) -> Iterator[IndexedDatabase]:
    """The same file opened with its in-memory columns (``cairn.index``), for tests that
    check the store's writes through the text and vector branches above it."""
    database = open_indexed(db_path)
    try:
        yield database
    finally:
        database.close()
