"""The database front door: the indexed ``Database`` with the search engine's doors on it.

The store (``cairn.store``) keeps the durable truth; the index (``cairn.index``) owns the
in-memory columns the store feeds; neither imports the search engine (``cairn.search``)
or the SQL front end (``cairn.sql``), which read them. This module sits above all of
them, so ``cairn.open`` hands out one object that writes, reads and searches, and the
layers still point one way: surfaces -> this door -> engine -> index -> store.
"""

from __future__ import annotations

import os

from cairn.index.database import Database as IndexDatabase
from cairn.search.budget import CancelToken
from cairn.search.contracts import (
    GraphSearchRequest,
    GraphSearchResult,
    RankedDocument,
    SearchRequest,
    SqlGraphSearchRequest,
)
from cairn.search.engine import graph_search, search
from cairn.sql.parser import lower_sql
from cairn.store.database import PrincipalLike, open_as

__all__ = ["Database", "open"]


class Database(IndexDatabase):
    """An open Cairn database: commands, reads and columns, plus search in one read cut."""

    def search(
        self,
        request: SearchRequest,
        principal: PrincipalLike = None,
        cancel: CancelToken | None = None,
    ) -> list[RankedDocument]:
        """Plain hybrid search (text, vector or both) in one read cut."""
        return search(self, request, principal, cancel)

    def graph_search(
        self,
        request: GraphSearchRequest,
        principal: PrincipalLike = None,
        cancel: CancelToken | None = None,
    ) -> GraphSearchResult:
        """Hybrid graph search (scope, retriever, expansion) in one read cut."""
        return graph_search(self, request, principal, cancel)

    def search_sql(
        self,
        request: SqlGraphSearchRequest,
        principal: PrincipalLike = None,
        cancel: CancelToken | None = None,
    ) -> GraphSearchResult:
        """A SQL ``SEARCH`` statement, lowered to one graph search and run as one."""
        return graph_search(self, lower_sql(request, database=self.name), principal, cancel)


def open(path: str | os.PathLike[str], *, database: str | None = None) -> Database:
    """Open (creating and migrating as needed) the Cairn database in the file ``path``.

    ``database`` names the database when the file is created (default ``main``); when
    given for an existing file it must match the stored name.
    """
    return open_as(Database, path, database=database)
