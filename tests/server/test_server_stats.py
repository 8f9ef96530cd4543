"""``cairn.store.stats``: counts a principal may see, in one read cut."""

from __future__ import annotations

import pytest
from conftest import Corpus
from server_helpers import GRAPH, ref, run

from cairn.errors import PermissionDeniedError
from cairn.store import Capability, ConfigurePrincipal, DeleteDocument, Grant, PutFact
from cairn.store.stats import database_stats, stats_from_json


def _counts(corpus: Corpus, principal: str | None) -> tuple[dict[str, int], dict[str, int]]:
    stats = database_stats(corpus.db, principal)
    documents = {item.name: item.documents for item in stats.collections}
    return documents, {item.name: item.facts for item in stats.graphs}


def test_owner_and_admin_see_everything(corpus: Corpus) -> None:
    for principal in (None, "admin"):
        assert _counts(corpus, principal) == ({"docs": 7, "notes": 2}, {GRAPH: 8})
    stats = database_stats(corpus.db, "admin")
    assert stats.database == corpus.db.name
    assert stats.incarnation == str(corpus.db.incarnation)
    assert stats.position == corpus.db.position
    assert stats.schema_version == corpus.db.schema_version
    assert stats_from_json(stats.to_json()) == stats


def test_row_policy_hides_rows_and_their_facts(corpus: Corpus) -> None:
    assert _counts(corpus, "reader") == ({"docs": 7, "notes": 2}, {GRAPH: 8})
    # ``private`` is hidden: it and its two facts are not counted.
    assert _counts(corpus, "restricted") == ({"docs": 6, "notes": 2}, {GRAPH: 6})


def test_only_readable_collections_and_graphs_are_listed(corpus: Corpus) -> None:
    notes_only = Grant(corpus.db.name, "notes", frozenset({Capability.QUERY}))
    run(corpus.db, ConfigurePrincipal("notes-reader", (notes_only,)))
    # Facts count only when both endpoints are readable: no graph_read, no graphs at all.
    assert _counts(corpus, "notes-reader") == ({"notes": 2}, {})
    graph_only = Grant(corpus.db.name, GRAPH, frozenset({Capability.GRAPH_READ}))
    run(corpus.db, ConfigurePrincipal("graph-reader", (graph_only,)))
    assert _counts(corpus, "graph-reader") == ({}, {GRAPH: 0})


def test_deletes_are_not_counted(corpus: Corpus) -> None:
    run(corpus.db, DeleteDocument("docs", "gamma"))
    run(corpus.db, PutFact(GRAPH, ref("notes", "n1"), ref("notes", "n2"), "calls"))
    assert _counts(corpus, "admin") == ({"docs": 6, "notes": 2}, {GRAPH: 7})


def test_no_read_grant_is_refused(corpus: Corpus) -> None:
    writes = Grant(corpus.db.name, "docs", frozenset({Capability.DOCUMENTS_WRITE}))
    run(corpus.db, ConfigurePrincipal("writer-only", (writes,)))
    with pytest.raises(PermissionDeniedError):
        database_stats(corpus.db, "writer-only")
    elsewhere = Grant("otherdb", "*", frozenset({Capability.ADMIN}))
    run(corpus.db, ConfigurePrincipal("elsewhere", (elsewhere,)))
    with pytest.raises(PermissionDeniedError):
        database_stats(corpus.db, "elsewhere")


def test_one_read_cut(corpus: Corpus) -> None:
    before = corpus.db.read_cut_acquisitions
    database_stats(corpus.db, "restricted")
    assert corpus.db.read_cut_acquisitions == before + 1
