"""The code-search kind prior: which documents it weighs, how it changes the fused order,
and that it is admitted, explained and authorised like the rest of a request."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path

import pytest
from search_helpers import (
    GRAPH,
    SPACE,
    VECTOR,
    grant,
    open_db,
    policy,
    put_docs,
    put_edges,
    ref,
)

import cairn
from cairn.errors import CorruptionError, ValidationError
from cairn.search.contracts import GraphExpansion, GraphSearchRequest, SearchRequest
from cairn.search.priors import CODE_PRIOR, id_prior
from cairn.store import Database, DocumentAccess, FieldPolicy

# The documented weights (docs/search.md): variables and local definitions 3/5.
DEMOTED = Fraction(3, 5)

LOCAL = frozenset({"function:app.py#App.route.decorator", "class:app.py#helper.Local"})


@pytest.mark.parametrize(
    ("doc_id", "expected"),
    [
        ("variable:app.py#DEFAULTS", DEMOTED),
        ("variable:app.py#App.config_class", DEMOTED),
        ("function:app.py#App.route.decorator", DEMOTED),  # contained by a method
        ("class:app.py#helper.Local", DEMOTED),  # a class defined in a function body
        ("function:app.py#Owner.Title", Fraction(1)),  # a member the file contains
        ("method:app.py#App.route", Fraction(1)),
        ("class:app.py#App", Fraction(1)),
        ("readme", Fraction(1)),  # not a code-graph ID
        ("variable:no-hash", Fraction(1)),
    ],
)
def test_the_prior_weighs_variables_and_local_definitions(doc_id: str, expected: Fraction) -> None:
    assert id_prior(doc_id, LOCAL.__contains__) == expected


# ------------------------------------------------------------ through the engine
# One vector branch with known cosine ranks (query [1, 0]); k = 10, weight 1.
DOCS = {
    "variable:m.py#ROUTES": [1.0, 0.0],  # rank 1
    "function:m.py#route.decorator": [0.99, 0.14],  # rank 2, contained by route
    "function:m.py#route": [0.96, 0.28],  # rank 3
    "function:m.py#route.Title": [0.9, 0.44],  # rank 4, a member the file contains
    "class:m.py#Router": [0.8, 0.6],  # rank 5
    "function:m.py#other": [0.6, 0.8],  # rank 6
}
FILE = ref("files", "file:m.py")
ROUTE = ref("symbols", "function:m.py#route")
CONTAINS = [
    (FILE, ROUTE),
    (FILE, ref("symbols", "function:m.py#route.Title")),
    (FILE, ref("symbols", "class:m.py#Router")),
    (ROUTE, ref("symbols", "function:m.py#route.decorator")),
    (ref("symbols", "class:m.py#Router"), ref("symbols", "variable:m.py#ROUTES")),
]
MINE = DocumentAccess(owner="reader")
THEIRS = DocumentAccess(owner="someone-else")
SYMBOLS = ("query", "documents_read", "vector_search")


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = open_db(tmp_path, collections=("symbols", "files"))
    put_docs(database, "files", {"file:m.py": "m.py"})
    put_docs(
        database,
        "symbols",
        dict.fromkeys(DOCS, "route"),
        vectors=DOCS,
        access={doc_id: THEIRS if doc_id == ROUTE.id else MINE for doc_id in DOCS},
    )
    put_edges(database, [(source, target, "contains") for source, target in CONTAINS])
    grant(
        database,
        "reader",
        {"symbols": SYMBOLS, GRAPH: ("graph_read",)},
        field_grants=["labels"],
        restrict_rows=True,
        owner_id="reader",
    )
    grant(database, "no-graph", {"symbols": SYMBOLS})
    grant(database, "no-labels", {"symbols": SYMBOLS, GRAPH: ("graph_read",)})
    policy(database, GRAPH, FieldPolicy("/label", use_grant="labels"))
    grant(
        database,
        "labels",
        {"symbols": SYMBOLS, GRAPH: ("graph_read",)},
        field_grants=["labels"],
    )
    yield database
    database.close()


def vector_search(prior: str | None, *, explain: bool = False) -> SearchRequest:
    return SearchRequest(
        "main",
        "symbols",
        vector_field=VECTOR,
        vector=(1.0, 0.0),
        space=SPACE,
        fusion_k=10,
        prior=prior,
        explain=explain,
    )


def oracle(ranked: list[str], weights: dict[str, Fraction]) -> list[tuple[str, Fraction]]:
    """Test-owned arithmetic: 1 / (10 + rank) times each document's weight, best first."""
    scores = {
        doc_id: Fraction(1, 10 + rank) * weights.get(doc_id, Fraction(1))
        for rank, doc_id in enumerate(ranked, start=1)
    }
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def test_the_prior_reorders_fused_scores_exactly(db: Database) -> None:
    ranked = list(DOCS)
    expected = oracle(
        ranked, {"variable:m.py#ROUTES": DEMOTED, "function:m.py#route.decorator": DEMOTED}
    )
    hits = db.search(vector_search(CODE_PRIOR, explain=True))
    assert [(hit.document.ref.id, hit.score) for hit in hits] == [
        (doc_id, float(score)) for doc_id, score in expected
    ]
    assert [hit.document.ref.id for hit in hits][:3] == [
        "function:m.py#route",
        "function:m.py#route.Title",  # a member, not a local: never weighed down
        "class:m.py#Router",
    ]
    explained = {hit.document.ref.id: hit.explanation for hit in hits}
    assert explained["variable:m.py#ROUTES"].prior == pytest.approx(0.6)  # type: ignore[union-attr]
    assert explained["function:m.py#route.Title"].prior == 1.0  # type: ignore[union-attr]
    assert explained["class:m.py#Router"].prior == 1.0  # type: ignore[union-attr]


def test_no_prior_fuses_as_the_spec_says(db: Database) -> None:
    hits = db.search(vector_search(None, explain=True))
    assert [(hit.document.ref.id, hit.score) for hit in hits] == [
        (doc_id, float(score)) for doc_id, score in oracle(list(DOCS), {})
    ]
    assert all(hit.explanation.prior is None for hit in hits)  # type: ignore[union-attr]


def test_a_hidden_function_never_demotes_a_visible_definition(db: Database) -> None:
    # ``route`` belongs to someone else: to the reader, ``route.decorator`` is not local
    # to anything it can see, so only the variable is weighed down.
    hits = db.search(vector_search(CODE_PRIOR), "reader")
    visible = [doc_id for doc_id in DOCS if doc_id != ROUTE.id]
    expected = oracle(visible, {"variable:m.py#ROUTES": DEMOTED})
    assert [(hit.document.ref.id, hit.score) for hit in hits] == [
        (doc_id, float(score)) for doc_id, score in expected
    ]


@pytest.mark.parametrize(
    ("principal", "reads_labels"), [("no-graph", False), ("no-labels", False), ("labels", True)]
)
def test_containment_counts_only_for_who_may_read_the_graph_by_label(
    db: Database, principal: str, reads_labels: bool
) -> None:
    demoted = {"variable:m.py#ROUTES": DEMOTED}
    if reads_labels:
        demoted["function:m.py#route.decorator"] = DEMOTED
    hits = db.search(vector_search(CODE_PRIOR), principal)
    assert [(hit.document.ref.id, hit.score) for hit in hits] == [
        (doc_id, float(score)) for doc_id, score in oracle(list(DOCS), demoted)
    ]


def test_graph_search_applies_the_prior_too(db: Database) -> None:
    request = GraphSearchRequest(1, vector_search(CODE_PRIOR), expansion=GraphExpansion(GRAPH))
    plain = [hit.document.ref.id for hit in db.search(vector_search(CODE_PRIOR))]
    assert [hit.document.ref.id for hit in db.graph_search(request).hits] == plain


@pytest.mark.parametrize("prior", ["code_kinds_v2", "", 3, ["code_kinds_v1"]])
def test_an_unknown_prior_is_refused_before_any_read(db: Database, prior: object) -> None:
    with pytest.raises(ValidationError) as caught:
        db.search(vector_search(prior))  # type: ignore[arg-type]
    assert caught.value.details["field"] == "prior"
    assert "code_kinds_v1" in caught.value.message


def test_a_damaged_fact_is_named_not_ranked_around(tmp_path: Path) -> None:
    # The prior reads containment through the graph's adjacency, whose first load checks
    # every fact: a damaged one anywhere is a CorruptionError, never a quietly different
    # order (a lookup by the endpoint index would miss a row whose index entry is bad).
    database = open_db(tmp_path, collections=("symbols", "files"))
    put_docs(database, "files", {"file:m.py": "m.py"})
    put_docs(database, "symbols", dict.fromkeys(DOCS, "route"), vectors=DOCS)
    put_edges(database, [(source, target, "contains") for source, target in CONTAINS])
    database.close()
    with sqlite3.connect(tmp_path / "cairn.db") as conn:
        conn.execute(
            "UPDATE facts SET checksum = checksum + 1 WHERE id = "
            "(SELECT min(id) FROM facts WHERE relation = 'contains')"
        )
    with cairn.open(tmp_path / "cairn.db") as damaged:
        assert damaged.search(vector_search(None))  # no prior: the graph is not read
        with pytest.raises(CorruptionError):
            damaged.search(vector_search(CODE_PRIOR))
