"""Fixtures for index tests: a fresh database file per test, opened with its columns."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import cairn.index as index
from cairn.index import Database

# The builders of store tests (``store_helpers``) write the data these tests index.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "store"))


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """Where the test's database file lives."""
    return tmp_path / "cairn.db"


@pytest.fixture
def db(db_path: Path) -> Iterator[Database]:
    """An open, empty database named ``main``, with its in-memory columns."""
    database = index.open(db_path)
    try:
        yield database
    finally:
        database.close()
