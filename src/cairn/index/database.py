"""The indexed database: the store's ``Database`` with the in-memory columns it feeds.

The store keeps the durable truth and derives nothing; this layer owns the columns
(slots, text postings, vector matrices, adjacency) built from that truth. Each read cut
the store pins is extended here: the columns catch up to the cut's position from the
rows and the ``changes`` log inside the cut's own read transaction (covering writers in
other processes), and the cut carries their view at that position (``IndexCut``). The
search engine (``cairn.search``) reads these cuts; ``cairn.open`` builds on this class.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from sqlite3 import Connection

from cairn.index.columns import Columns
from cairn.index.cut import IndexCut
from cairn.index.snapshot import snapshot_position, write_snapshot
from cairn.index.text import TextHit, text_branch
from cairn.index.vectors import VectorHit, vector_branch
from cairn.store.commands import VectorSpace
from cairn.store.database import Database as StoreDatabase
from cairn.store.database import PrincipalLike, open_as

__all__ = ["Database", "open"]


class Database(StoreDatabase):
    """An open Cairn database with its in-memory columns: the text and vector branches."""

    def __init__(self, path: Path, writer: Connection, name: str, incarnation: uuid.UUID) -> None:
        super().__init__(path, writer, name, incarnation)
        self._columns = Columns()
        self._generation = 0
        self._swap_lock = threading.Lock()

    @contextmanager
    def read_cut(
        self, principal: PrincipalLike = None, *, now: datetime | None = None
    ) -> Iterator[IndexCut]:
        """Pin one read: the store's cut at position P and the columns caught up to P.

        The columns catch up inside the cut's own read transaction, so rows and arrays
        are of one position.
        """
        columns = self._columns  # taken before the snapshot: a later swap never affects us
        with super().read_cut(principal, now=now) as cut:
            columns.catch_up(cut.conn, cut.position)
            view = columns.view(cut.position)
            yield IndexCut(cut.conn, cut.database, cut.position, cut.principal, cut.memo, view)

    @property
    def columns_generation(self) -> int:
        """How many times the in-memory columns were rebuilt by ``compact`` (0 at open)."""
        return self._generation

    def compact(self) -> int:
        """Rebuild the in-memory columns as a fresh generation and swap it in.

        The new generation is loaded at the current position P without anything that
        died at or before P (old slots, their postings, replaced or stale vectors), so
        it is smaller; cuts already open keep the generation they started on and finish
        there, new cuts use the new one. Returns P. SQLite rows are not touched.
        """
        with self._pinned() as (conn, position):
            fresh = Columns(horizon=position)
            fresh.catch_up(conn, position)
        with self._swap_lock:
            self._columns = fresh
            self._generation += 1
        return position

    def checkpoint_columns(self) -> int:
        """Persist the built column arrays at the current position P; return P.

        The arrays (slots, text postings, vector matrices) are built at P in one read
        transaction (the handle's own columns when they are exactly at P, else a fresh
        build from the rows) and written into the file's ``column_snapshot`` table in
        one write transaction, replacing the previous snapshot. A later cold open maps
        them and catches up from the ``changes`` log after P. Derived data only: the
        position does not move and no read ever depends on it being there or valid.
        """
        with self._pinned() as (conn, position):
            current = self._columns
            usable = current.position == position
            if usable:
                try:
                    scalars, arrays = current.export()
                except ValueError:  # compacted, graphs loaded, or no text loaded yet
                    usable = False
            if not usable:
                fresh = Columns(vectors=False, text=True)  # a snapshot holds no vectors
                fresh.catch_up(conn, position)
                scalars, arrays = fresh.export()
        self._write_derived(
            lambda writer: write_snapshot(writer, scalars, arrays), "checkpoint columns"
        )
        return position

    def derived_behind(self) -> bool:
        """Whether the file's column snapshot is not at the current position
        (``cairn.store.derived.DerivedState``: a load then checkpoints)."""
        return self.stored_snapshot_position != self.position

    def checkpoint_derived(self) -> int:
        """``checkpoint_columns`` (``DerivedState``: what a load calls after it commits)."""
        return self.checkpoint_columns()

    @property
    def stored_snapshot_position(self) -> int | None:
        """The position of the file's valid-looking column snapshot, or None."""
        with self._pinned() as (conn, _):
            return snapshot_position(conn)

    @property
    def columns_snapshot_position(self) -> int | None:
        """The snapshot position the current columns were restored from, or None."""
        return self._columns.snapshot_position

    def text_search(
        self,
        collection: str,
        field: str,
        text: str,
        principal: PrincipalLike = None,
        *,
        limit: int = 10,
        allowed_ids: Collection[str] | None = None,
        now: datetime | None = None,
    ) -> tuple[TextHit, ...]:
        """The BM25 text branch alone, in one read cut (plain ``search`` builds on it)."""
        with self.read_cut(principal, now=now) as cut:
            return text_branch(cut, collection, field, text, limit=limit, allowed_ids=allowed_ids)

    def vector_search(
        self,
        collection: str,
        field: str,
        vector: Sequence[float],
        space: VectorSpace,
        principal: PrincipalLike = None,
        *,
        limit: int = 10,
        allowed_ids: Collection[str] | None = None,
        now: datetime | None = None,
    ) -> tuple[VectorHit, ...]:
        """The exact vector branch alone, in one read cut."""
        with self.read_cut(principal, now=now) as cut:
            return vector_branch(
                cut, collection, field, vector, space, limit=limit, allowed_ids=allowed_ids
            )


def open(path: str | os.PathLike[str], *, database: str | None = None) -> Database:
    """Open (creating and migrating as needed) the Cairn database in the file ``path``,
    with its columns: the store plus the text and vector branches (``cairn.open`` adds
    search).

    ``database`` names the database when the file is created (default ``main``); when
    given for an existing file it must match the stored name.
    """
    return open_as(Database, path, database=database)
