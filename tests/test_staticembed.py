"""The static embedder ``wordllama`` (``cairn.staticembed``): the wheel's own table and
tokenizer, offline, one vector per text whatever its batch, and its space on every door."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from cairn.codegraph.console import choose_embedder, index_once
from cairn.embed import embedder_for, load_embedder
from cairn.errors import UnsupportedCapabilityError
from cairn.staticembed import STATIC_MODELS, WORDLLAMA_EMBEDDER
from cairn.store.load import loaded_space

TEXTS = [
    "read the configuration file",
    "def parse_args(argv): parse command line options into a namespace of flags",
    "x",
]


def _wordllama_oracle(texts: list[str]) -> np.ndarray:
    """WordLlama's own inference over the same shipped files (its loader would download
    the tokenizer, so the files are opened here the way it opens them)."""
    import wordllama
    from safetensors import safe_open
    from wordllama import WordLlama
    from wordllama.inference import WordLlamaInference

    spec = STATIC_MODELS[WORDLLAMA_EMBEDDER]
    root = Path(wordllama.__file__).parent
    tokenizer = WordLlama.load_tokenizer(root / spec.tokenizer)
    with safe_open(str(root / spec.weights), framework="np", device="cpu") as tensors:
        table = tensors.get_tensor(spec.tensor)
    return np.asarray(WordLlamaInference(table, tokenizer).embed(texts, norm=True))


def test_vectors_match_wordllamas_own_inference() -> None:
    embedder = load_embedder(WORDLLAMA_EMBEDDER)
    ours = embedder.embed(TEXTS)
    assert ours.dtype == np.float32 and ours.shape == (3, 256)
    np.testing.assert_allclose(ours, _wordllama_oracle(TEXTS), atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-6)


def test_a_vector_does_not_depend_on_its_batch() -> None:
    embedder = load_embedder(WORDLLAMA_EMBEDDER)
    together = embedder.embed(TEXTS)
    for index, text in enumerate(TEXTS):
        assert embedder.embed([text])[0].tobytes() == together[index].tobytes()


def test_a_text_without_tokens_is_the_zero_vector() -> None:
    vectors = load_embedder(WORDLLAMA_EMBEDDER).embed(["", "x"])
    assert not vectors[0].any() and vectors[1].any()


def test_the_space_names_the_table_and_the_package_version() -> None:
    from importlib import metadata

    space = load_embedder(WORDLLAMA_EMBEDDER).space
    assert (space.dimension, space.model) == (256, "wordllama/l2_supercat_256")
    assert space.version == metadata.version("wordllama")
    assert embedder_for(space) is not None and embedder_for(space).space == space  # type: ignore[union-attr]
    assert embedder_for(replace(space, version="0.0.0")) is None  # another release's space


def test_without_the_package_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "wordllama", None)  # the import fails
    with pytest.raises(UnsupportedCapabilityError) as caught:
        load_embedder(WORDLLAMA_EMBEDDER)
    assert "cairn[static]" in caught.value.details["reason"]


def test_index_records_the_space_and_a_reindex_keeps_it(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "mod.py").write_text("def read_config(path):\n    return open(path).read()\n")
    console = Console(quiet=True)
    index_once(repo, console=console, workers=1, embedder=WORDLLAMA_EMBEDDER)
    db = repo / ".cairn" / "cairn.db"
    space = loaded_space(db)
    assert space is not None and space.model == "wordllama/l2_supercat_256"
    assert choose_embedder(None, db).space == space  # queries embed in the same space
