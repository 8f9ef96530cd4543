"""Named sizes and thresholds of the in-memory search structures (columns, scans, rankings).

Every number the index's logic depends on is a constant here (the store's own limits
are ``cairn.store.limits``): memo budgets, when scans split across threads or read the
compact unit rows, the proven error bounds' safety margins, and the ranking's sample
and head sizes.
"""

from __future__ import annotations

__all__ = [
    "ADJACENCY_REBUILD_FRACTION",
    "ADJACENCY_REBUILD_MIN_TAIL",
    "COLUMN_MEMO_SIZE",
    "COSINE_ERROR_FACTOR",
    "FEW_RANK_PASSES",
    "HALF_BOUND_MARGIN",
    "HALF_ENCODE_CHUNK",
    "HALF_SCAN_MIN_ROWS",
    "IDENTITY_CACHE_SIZE",
    "IMPACT_MEMO_BYTES",
    "LIVE_NODE_CACHE_SIZE",
    "MAX_SCAN_THREADS",
    "PARALLEL_GATHER_MIN_ROWS",
    "PARALLEL_SCAN_MIN_ROWS",
    "QUANTIZED_BOUND_MARGIN",
    "QUANTIZED_ENCODE_CHUNK",
    "QUANTIZED_SCAN_MIN_ROWS",
    "QUANTIZE_SYNC_VALUES",
    "RANK_HEAD",
    "REFINE_MIN_BAND",
    "SCAN_MAX_MAGNITUDE",
    "SCAN_MIN_MAGNITUDE",
    "SCAN_RANGE_WEIGHTS",
    "SIMILARITY_CHUNK",
    "TEXT_LOAD_ROWS",
    "TOP_SAMPLE_SLACK",
    "TOP_SAMPLE_STRIDE",
]

ADJACENCY_REBUILD_MIN_TAIL = 1024
"""Edge rows appended after the last CSR rebuild that are scanned before rebuilding."""

ADJACENCY_REBUILD_FRACTION = 0.125
"""Rebuild a graph's CSR indexes once unindexed rows exceed this share of all rows."""

TEXT_LOAD_ROWS = 16_384
"""``doc_terms`` rows the columns read and pack at once when they load from the rows."""

COLUMN_MEMO_SIZE = 64
"""Position-bound derived arrays (alive masks, BM25 statistics) the columns memoise."""

IMPACT_MEMO_BYTES = 64 * 1024 * 1024
"""Bytes of per-term BM25 posting weights (and their slots) a database keeps between
searches at one position: a common term's weights are computed once, not per query."""

PARALLEL_SCAN_MIN_ROWS = 32_768
"""Vector scans over at least this many rows are split across threads (one per core)."""

PARALLEL_GATHER_MIN_ROWS = 1024
"""Scans of at least this many gathered (scattered) rows are split across threads."""

MAX_SCAN_THREADS = 4
"""At most this many threads share one vector scan (it is memory-bound past that)."""

SCAN_RANGE_WEIGHTS = (20, 14, 9, 5, 2, 2, 5, 9, 14, 20)
"""A split scan's row ranges, as shares of the rows: the scan workers take them from the
front and the calling thread from the back, so they meet near the middle, where ranges
are small and the one finishing first waits least for the other (hybrid p50 -0.16 ms
median over 800 paired queries against 8 equal ranges)."""

QUANTIZED_SCAN_MIN_ROWS = 16_384
"""Cosine scans over at least this many rows read the int8 unit rows (a quarter of the bytes)."""

HALF_SCAN_MIN_ROWS = 16_384
"""Cosine scans fused with other branches read the float16 unit rows (half the bytes)
over at least this many rows."""

HALF_ENCODE_CHUNK = 256
"""Rows converted to float16 units per step (float64 temporaries stay in cache)."""

HALF_BOUND_MARGIN = 1e-9
"""Added to the float16 scan's error bound for the float64 rounding it does not model."""

SCAN_MAX_MAGNITUDE = 1e30
"""Float32 scans are used only while products stay below this (no overflow)."""

SCAN_MIN_MAGNITUDE = 1e-30
"""... and, for cosine, while row norms stay above this (no relative loss to underflow)."""

SIMILARITY_CHUNK = 8192
"""Rows scored at a time when a branch scores every row in float64."""

QUANTIZED_ENCODE_CHUNK = 256
"""Rows converted to int8 units per step: the float64 temporaries (0.5 MB each at 256
dimensions) stay in a core's cache, 2.3x faster than 4096-row steps."""

QUANTIZE_SYNC_VALUES = 2**22
"""Rows missing int8 codes are encoded within the search when they hold at most this many
values (~16k rows of 256 dimensions, ~20 ms); more are encoded by a background thread."""

QUANTIZED_BOUND_MARGIN = 1e-9
"""Added to the int8 scan's error bound for the float64 rounding it does not model."""

COSINE_ERROR_FACTOR = 2.0
"""Safety factor on the float32 scan's proven cosine error bound ``(d + 3) * 2**-24``."""

TOP_SAMPLE_STRIDE = 16
"""Top-m selection first reads a floor from every 16th score."""

TOP_SAMPLE_SLACK = 2
"""That floor sits where about twice ``m`` scores pass it (checked: at least ``m``)."""

RANK_HEAD = 2048
"""A ranking sorts its best 2048 scores once; ranks and bounds inside them need no pass."""

REFINE_MIN_BAND = 16
"""Bands of more approximate candidates than this are narrowed by a tighter score first."""

FEW_RANK_PASSES = 16
"""Up to this many exact ranks below the head are counted by passes over the scores;
more sort every score once."""

IDENTITY_CACHE_SIZE = 4
"""How many ``0 .. n - 1`` slot arrays dense rankings share (one per collection size)."""

LIVE_NODE_CACHE_SIZE = 4
"""Read positions whose node-to-live-slot map the columns keep (walk visibility)."""
