"""Static word embeddings shipped inside a PyPI wheel: a token table, averaged per text.

``wordllama`` (``pip install 'cairn[static]'``) ships WordLlama's ``l2_supercat`` table
(32,000 tokens x 256 float16, 16 MB) and its tokenizer inside the wheel. Embedding a
text is a lookup: tokenize (no special tokens, no truncation), average the token
vectors, L2-normalise. No model runs, so it embeds Django's symbols in well under a
second, and nothing is downloaded: the files are read from the installed package
(WordLlama's own loader fetches its tokenizer from the network, so it is not used).

Each text is averaged on its own, token by token in order, so a vector depends only on
its text, never on which texts share its batch (clean and incremental builds store the
same bytes).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import numpy.typing as npt

from cairn.errors import UnsupportedCapabilityError, ValidationError
from cairn.store.commands import Metric, VectorSpace

__all__ = [
    "STATIC_BATCH_TEXTS",
    "STATIC_MODELS",
    "WORDLLAMA_EMBEDDER",
    "StaticEmbedder",
    "StaticModel",
    "load_static",
    "static_model_named",
]

WORDLLAMA_EMBEDDER = "wordllama"
"""WordLlama's ``l2_supercat`` 256-dimension table, from the ``wordllama`` wheel."""

STATIC_BATCH_TEXTS = 512
"""Texts tokenized per call of the tokenizer (its batch runs in parallel threads)."""


@dataclass(frozen=True, slots=True)
class StaticModel:
    """Where an installed package keeps a static embedding table and its tokenizer."""

    package: str
    distribution: str
    weights: str
    tensor: str
    tokenizer: str

    @property
    def model(self) -> str:
        """The space's model name: the package and the table's file name."""
        return f"{self.package}/{Path(self.weights).stem}"


STATIC_MODELS: Mapping[str, StaticModel] = MappingProxyType(
    {
        WORDLLAMA_EMBEDDER: StaticModel(
            package="wordllama",
            distribution="wordllama",
            weights="weights/l2_supercat_256.safetensors",
            tensor="embedding.weight",
            tokenizer="tokenizers/l2_supercat_tokenizer_config.json",
        )
    }
)
"""Static embedders by name."""


class StaticEmbedder:
    """Averages a static token table over each text's tokens, L2-normalised."""

    def __init__(self, table: npt.NDArray[np.float32], tokenizer: Any, space: VectorSpace):
        self._table = table
        self._tokenizer = tokenizer
        self._space = space

    @property
    def space(self) -> VectorSpace:
        """Cosine space named by package and table, versioned by the package's version."""
        return self._space

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """One L2-normalised row per text (all zeros for a text with no tokens)."""
        if isinstance(texts, str):
            raise ValidationError("embed() takes a sequence of texts, not one string")
        out = np.zeros((len(texts), self._space.dimension), dtype=np.float32)
        table = self._table
        last = table.shape[0] - 1
        for start in range(0, len(texts), STATIC_BATCH_TEXTS):
            batch = list(texts[start : start + STATIC_BATCH_TEXTS])
            encoded = self._tokenizer.encode_batch(batch, add_special_tokens=False)
            for offset, encoding in enumerate(encoded):
                ids = np.asarray(encoding.ids, dtype=np.int64)
                if ids.size == 0:
                    continue
                np.clip(ids, 0, last, out=ids)
                # Summed row by row in token order (a reduction over axis 0), the same
                # bytes whatever else is in the batch.
                row = table[ids].sum(axis=0) / np.float32(ids.size)
                norm = np.float32(np.linalg.norm(row))
                if norm > 0:
                    out[start + offset] = row / norm
        return out


def static_model_named(model: str) -> str | None:
    """The embedder name whose space model is ``model``, if it is a static one."""
    return next((name for name, spec in STATIC_MODELS.items() if spec.model == model), None)


def _unavailable(name: str, reason: str) -> UnsupportedCapabilityError:
    return UnsupportedCapabilityError(
        f"embedder {name!r} is not available: {reason}",
        details={"embedder": name, "reason": reason},
    )


def load_static(name: str) -> StaticEmbedder:
    """The static embedder ``name`` from its installed package (never downloaded)."""
    spec = STATIC_MODELS[name]
    try:
        package = importlib.import_module(spec.package)
        tokenizers = importlib.import_module("tokenizers")
        safetensors = importlib.import_module("safetensors.numpy")
        version = metadata.version(spec.distribution)
    except (ImportError, metadata.PackageNotFoundError) as exc:
        raise _unavailable(
            name, f"{spec.package} is not installed (pip install 'cairn[static]')"
        ) from exc
    root = Path(package.__file__ or "").resolve().parent
    weights, tokenizer_file = root / spec.weights, root / spec.tokenizer
    if not weights.is_file() or not tokenizer_file.is_file():
        raise _unavailable(name, f"{spec.package} {version} does not ship {spec.weights}")
    try:
        tensors = safetensors.load_file(str(weights))
        table = np.ascontiguousarray(tensors[spec.tensor], dtype=np.float32)
        tokenizer = tokenizers.Tokenizer.from_file(str(tokenizer_file))
    except Exception as exc:  # a damaged or changed file in the package
        raise _unavailable(name, f"{spec.package}'s files could not be read: {exc}") from exc
    if table.ndim != 2:
        raise _unavailable(name, f"{spec.weights} holds no 2-D table")
    tokenizer.no_padding()
    tokenizer.no_truncation()
    space = VectorSpace(
        f"static-{table.shape[1]}", table.shape[1], Metric.COSINE, spec.model, version
    )
    return StaticEmbedder(table, tokenizer, space)
