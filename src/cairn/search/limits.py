"""Named defaults and limits of graph search (spec graph-search.md §3, §4, §5.8)."""

from __future__ import annotations

__all__ = [
    "DEADLINE_SECONDS",
    "DEFAULT_EXPANSION_DEPTH",
    "DEFAULT_FUSION_K",
    "DEFAULT_LIMIT",
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_EDGES",
    "DEFAULT_MAX_VERTICES",
    "DEFAULT_WEIGHT",
    "EXACT_WEIGHT_CACHE_SIZE",
    "FUSION_PREFIX",
    "FUSION_PREFIX_GROWTH",
    "MAX_ALLOWED_IDS",
    "MAX_DEPTH",
    "MAX_EDGES",
    "MAX_LABELS",
    "MAX_LIMIT",
    "MAX_OUTPUT_BYTES",
    "MAX_RAW_READ_BYTES",
    "MAX_REQUEST_BYTES",
    "MAX_SEEDS",
    "MAX_TEXT_BYTES",
    "MAX_VERTICES",
    "MIN_DEPTH",
    "MIN_EDGES",
    "MIN_FUSION_K",
    "MIN_LIMIT",
    "MIN_VERTICES",
    "SEARCH_REQUEST_VERSION",
]

SEARCH_REQUEST_VERSION = 1
"""The only ``GraphSearchRequest.version`` (and SQL request version) accepted."""

DEFAULT_MAX_DEPTH = 3
DEFAULT_EXPANSION_DEPTH = 1
DEFAULT_MAX_VERTICES = 1000
DEFAULT_MAX_EDGES = 5000
DEFAULT_LIMIT = 10
DEFAULT_WEIGHT = 1.0
DEFAULT_FUSION_K = 60

MIN_DEPTH, MAX_DEPTH = 0, 16
MIN_VERTICES, MAX_VERTICES = 1, 10_000
MIN_EDGES, MAX_EDGES = 1, 50_000
MAX_SEEDS = 10_000
MAX_LABELS = 64
MIN_LIMIT, MAX_LIMIT = 1, 1000
MIN_FUSION_K = 1
MAX_TEXT_BYTES = 4096
MAX_ALLOWED_IDS = 10_000

MAX_REQUEST_BYTES = 65_536
"""Largest serialised request admitted; exactly this many bytes passes."""

MAX_RAW_READ_BYTES = 64 * 1024 * 1024
"""Raw bytes one request may read from the store, shared by every operator."""

MAX_OUTPUT_BYTES = 8 * 1024 * 1024
"""Bytes of hits plus context one reply may carry."""

DEADLINE_SECONDS = 30.0
"""Wall-clock deadline of one request."""

FUSION_PREFIX = 128
"""Best ranks per branch the fusion reads first (it reads further only when needed).
Measured on the 100k benchmark's hybrid queries (800 paired requests): 128 beats 256 by
0.16 ms median; at 64 rounds often cannot decide and start again (+0.8 ms)."""

FUSION_PREFIX_GROWTH = 4
"""How much the fusion's per-branch prefix grows when a round cannot decide the top."""

EXACT_WEIGHT_CACHE_SIZE = 1024
"""Distinct branch weights whose exact fractions fusion keeps (a pure function)."""
