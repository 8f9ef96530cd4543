"""Embedders: the offline hashing default (deterministic, normalised) and the local-only backend."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cairn.embed import (
    HASHING_MODEL,
    Embedder,
    HashingEmbedder,
    SentenceTransformerEmbedder,
    load_embedder,
)
from cairn.errors import UnsupportedCapabilityError, ValidationError
from cairn.store import Metric
from cairn.store.text import analyze


def _oracle(text: str, dimension: int) -> np.ndarray:
    """Independent re-statement of the hashing rule, token by token in plain Python."""
    vector = [0.0] * dimension
    for token in analyze(text):
        value = int.from_bytes(hashlib.blake2b(token.encode(), digest_size=8).digest(), "little")
        vector[value % dimension] += -1.0 if value >= 2**63 else 1.0
    norm = sum(v * v for v in vector) ** 0.5
    return np.asarray([v / norm if norm else 0.0 for v in vector])


def test_hashing_matches_the_oracle_and_is_normalised() -> None:
    embedder = HashingEmbedder(64)
    texts = ["getUserName returns the user name", "load_user", "", "   "]
    matrix = embedder.embed(texts)
    assert matrix.dtype == np.float32
    assert matrix.shape == (4, 64)
    for row, text in zip(matrix, texts, strict=True):
        np.testing.assert_allclose(row, _oracle(text, 64), atol=1e-7)
    assert np.linalg.norm(matrix[0]) == pytest.approx(1.0, abs=1e-6)
    assert not matrix[2].any()
    assert not matrix[3].any()


def test_hashing_space_records_model_and_version() -> None:
    space = HashingEmbedder().space
    assert (space.dimension, space.metric, space.model) == (256, Metric.COSINE, HASHING_MODEL)
    assert space.id == "hashing-256"
    space.validate()
    assert HashingEmbedder(32).space != space
    assert isinstance(HashingEmbedder(), Embedder)


def test_similar_names_are_near() -> None:
    rows = HashingEmbedder().embed(["get user name", "getUserName", "parse config file"])
    assert float(rows[0] @ rows[1]) > 0.5
    assert float(rows[0] @ rows[1]) > float(rows[0] @ rows[2])


def test_hashing_is_independent_of_the_hash_seed() -> None:
    code = (
        "from cairn.embed import HashingEmbedder;"
        "print(HashingEmbedder(16).embed(['getUserName load_user']).tobytes().hex())"
    )
    outputs = set()
    for seed in ("0", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        outputs.add(done.stdout.strip())
    assert outputs == {HashingEmbedder(16).embed(["getUserName load_user"]).tobytes().hex()}


def test_bad_inputs_are_validation_errors() -> None:
    with pytest.raises(ValidationError):
        HashingEmbedder(0)
    with pytest.raises(ValidationError):
        HashingEmbedder().embed("one string")
    with pytest.raises(ValidationError):
        HashingEmbedder().embed([3])  # type: ignore[list-item]


def test_load_embedder_names() -> None:
    assert load_embedder().space.id == "hashing-256"
    assert load_embedder("hashing-32").space.dimension == 32
    with pytest.raises(UnsupportedCapabilityError) as caught:
        load_embedder("word2vec")
    assert caught.value.details["reason"] == "unknown embedder name"


def test_missing_library_is_unsupported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # import fails
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "0")
    with pytest.raises(UnsupportedCapabilityError) as caught:
        load_embedder("sentence-transformers:all-MiniLM-L6-v2")
    assert "not installed" in caught.value.details["reason"]


class _FakeModel:
    def __init__(self, path: str, local_files_only: bool = False) -> None:
        assert local_files_only
        self.path = path

    def get_sentence_embedding_dimension(self) -> int:
        return 3

    def encode(self, texts: list[str], normalize_embeddings: bool = False) -> Any:
        assert normalize_embeddings
        return [[1.0, 0.0, 0.0] for _ in texts]


def _fake_library(monkeypatch: pytest.MonkeyPatch) -> None:
    library = types.ModuleType("sentence_transformers")
    library.SentenceTransformer = _FakeModel  # type: ignore[attr-defined]
    library.__version__ = "9.9"  # type: ignore[attr-defined]
    hub = types.ModuleType("huggingface_hub")

    def snapshot_download(repo_id: str, local_files_only: bool = False) -> str:
        assert local_files_only  # the only mode the backend may use
        raise FileNotFoundError(repo_id)

    hub.snapshot_download = snapshot_download  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sentence_transformers", library)
    monkeypatch.setitem(sys.modules, "huggingface_hub", hub)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "0")


def test_local_model_directory_is_used_offline(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _fake_library(monkeypatch)
    embedder = load_embedder(f"sentence-transformers:{tmp_path}")
    assert isinstance(embedder, SentenceTransformerEmbedder)
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    assert embedder.space.dimension == 3
    assert embedder.space.version == "9.9+local"
    matrix = embedder.embed(["a", "b"])
    assert matrix.dtype == np.float32
    assert matrix.shape == (2, 3)


def test_model_not_present_locally_is_unsupported(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_library(monkeypatch)
    with pytest.raises(UnsupportedCapabilityError) as caught:
        load_embedder("sentence-transformers:some/remote-model")
    assert "not present locally" in caught.value.details["reason"]
