"""Fixtures for server tests: a corpus database, its admin key, an in-process app."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from server_helpers import open_corpus

from cairn.server.bootstrap import ensure_admin
from cairn.server.http import create_app
from cairn.store import Database


@dataclass
class Corpus:
    """An open corpus database and the API keys of its principals (``admin`` included)."""

    db: Database
    keys: dict[str, str]

    def auth(self, principal: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys[principal]}"}


@pytest.fixture
def corpus(tmp_path: Path) -> Iterator[Corpus]:
    db, keys = open_corpus(tmp_path / "cairn.db")
    try:
        boot = ensure_admin(db, {})
        assert boot.token is not None
        yield Corpus(db, {**keys, "admin": boot.token})
    finally:
        db.close()


@pytest.fixture
def http(corpus: Corpus) -> Iterator[TestClient]:
    """A synchronous in-process client of the app serving ``corpus``."""
    with TestClient(create_app(corpus.db)) as client:
        yield client
