"""The ``SEARCH`` statement parser: its only output is one ``GraphSearchRequest``.

Clauses come in exactly the grammar's order, each at most once::

    SEARCH FROM collection
    [TEXT field MATCH string-or-@parameter [WEIGHT number]]
    [VECTOR field MATCH @parameter SPACE (id, dimension, metric, model, version)
        [WEIGHT number]]
    [VECTOR [field] EMBED [WEIGHT number]]      (the database embeds the TEXT text)
    [SCOPE GRAPH graph SEEDS ((collection, id), ...) DEPTH int VERTICES int EDGES int
        [LABELS (value, ...)]]
    [RETRIEVE GRAPH graph SEEDS (...) DEPTH int VERTICES int EDGES int
        [LABELS (value, ...)] [WEIGHT number]]
    [EXPAND GRAPH graph DEPTH int VERTICES int EDGES int [LABELS (value, ...)]]
    [ALLOW IDS (value, ...)] [KINDS (value, ...)] [PATHS (value, ...)] [EXCLUDE TESTS]
    [PRIOR string-or-@parameter] [LIMIT int] [FUSION int] [;]

The lowered request then goes through the same admission as a direct request.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cairn.canonical import canonical_bytes, fits_float
from cairn.errors import BudgetExceededError, CanonicalizationError, ValidationError
from cairn.search.contracts import (
    EntityRef,
    GraphExpansion,
    GraphRetriever,
    GraphScope,
    GraphSearchRequest,
    GraphWalkSpec,
    SearchRequest,
    SqlGraphSearchRequest,
    VectorSpace,
)
from cairn.search.limits import (
    DEFAULT_FUSION_K,
    DEFAULT_LIMIT,
    DEFAULT_WEIGHT,
    SEARCH_REQUEST_VERSION,
)
from cairn.search.wire import to_wire
from cairn.sql.tokenizer import (
    MAX_SQL_BYTES,
    MAX_SQL_PARAMETERS,
    Token,
    TokenKind,
    sql_error,
    tokenize,
)
from cairn.store.limits import check_identifier

__all__ = ["CLAUSES", "MAX_SQL_INTEGER", "SQL_PROFILE", "lower_sql", "parse_search"]

SQL_PROFILE = "cairn.sql.search/1"
CLAUSES = (
    "TEXT",
    "VECTOR",
    "SCOPE",
    "RETRIEVE",
    "EXPAND",
    "ALLOW",
    "KINDS",
    "PATHS",
    "EXCLUDE",
    "PRIOR",
    "LIMIT",
    "FUSION",
)
"""Optional clauses in their one legal order."""

MAX_SQL_INTEGER = 2**31 - 1
"""Integers above this overflow (admission then checks each field's own range)."""


@dataclass(slots=True)
class _Parts:
    """Clause values gathered while parsing; lowered once at the end."""

    collection: str = ""
    text_field: str | None = None
    text: str | None = None
    text_weight: float = DEFAULT_WEIGHT
    vector_field: str | None = None
    vector: tuple[float, ...] | None = None
    space: VectorSpace | None = None
    vector_weight: float = DEFAULT_WEIGHT
    scope: GraphScope | None = None
    retriever: GraphRetriever | None = None
    expansion: GraphExpansion | None = None
    allowed_ids: tuple[str, ...] | None = None
    kinds: tuple[str, ...] | None = None
    paths: tuple[str, ...] | None = None
    exclude_tests: bool = False
    prior: str | None = None
    embed: bool = False
    limit: int = DEFAULT_LIMIT
    fusion_k: int = DEFAULT_FUSION_K
    used_parameters: set[str] = field(default_factory=set)


class _Parser:
    def __init__(self, tokens: list[Token], parameters: Mapping[str, Any]) -> None:
        self.tokens = tokens
        self.index = 0
        self.parameters = parameters
        self.parts = _Parts()

    # ------------------------------------------------------------ cursor
    @property
    def current(self) -> Token:
        return self.tokens[self.index]

    def take(self) -> Token:
        token = self.tokens[self.index]
        if token.kind is not TokenKind.END:
            self.index += 1
        return token

    def error(self, expected: str, token: Token | None = None) -> ValidationError:
        found = token or self.current
        return sql_error(f"expected {expected}, found {found.describe()}", found.line, found.column)

    def is_keyword(self, word: str) -> bool:
        token = self.current
        return token.kind is TokenKind.WORD and token.text.upper() == word

    def keyword(self, word: str) -> Token:
        if not self.is_keyword(word):
            raise self.error(word)
        return self.take()

    def punct(self, kind: TokenKind) -> None:
        if self.current.kind is not kind:
            raise self.error(kind.value)
        self.take()

    # ------------------------------------------------------------ values
    def identifier(self, what: str) -> str:
        token = self.current
        if token.kind not in (TokenKind.WORD, TokenKind.QUOTED):
            raise self.error(f"{what} (an identifier)")
        self.take()
        try:
            return check_identifier(token.text, what)
        except ValidationError as exc:
            raise sql_error(exc.message, token.line, token.column) from exc

    def string_value(self, what: str) -> str:
        token = self.current
        if token.kind is TokenKind.STRING:
            self.take()
            return token.text
        if token.kind is TokenKind.PARAMETER:
            value = self.parameter(token)
            if not isinstance(value, str):
                raise sql_error(
                    f"parameter @{token.text} must be a JSON string for {what}",
                    token.line,
                    token.column,
                )
            return value
        raise self.error(f"{what} (a quoted string or @parameter)")

    def parameter(self, token: Token) -> Any:
        self.take()
        if token.text not in self.parameters:
            raise sql_error(f"parameter @{token.text} is not supplied", token.line, token.column)
        self.parts.used_parameters.add(token.text)
        return self.parameters[token.text]

    def integer(self, what: str) -> int:
        token = self.current
        if token.kind is not TokenKind.NUMBER:
            raise self.error(f"{what} (an integer)")
        self.take()
        try:
            value = int(token.text)
        except ValueError:
            raise sql_error(
                f"{what} must be an integer, found {token.text!r}", token.line, token.column
            ) from None
        if abs(value) > MAX_SQL_INTEGER:
            raise sql_error(f"{what} {token.text} overflows", token.line, token.column)
        return value

    def number(self, what: str) -> float:
        token = self.current
        if token.kind is not TokenKind.NUMBER:
            raise self.error(f"{what} (a number)")
        self.take()
        value = float(token.text)
        if not math.isfinite(value):
            raise sql_error(f"{what} {token.text} is not finite", token.line, token.column)
        return value

    def value_list(self, what: str) -> tuple[str, ...]:
        self.punct(TokenKind.LPAREN)
        values: list[str] = []
        if self.current.kind is TokenKind.RPAREN:
            self.take()
            return ()
        while True:
            values.append(self.string_value(what))
            if self.current.kind is TokenKind.COMMA:
                self.take()
                continue
            self.punct(TokenKind.RPAREN)
            return tuple(values)

    # ----------------------------------------------------------- clauses
    def statement(self) -> _Parts:
        self.keyword("SEARCH")
        self.keyword("FROM")
        self.parts.collection = self.identifier("collection")
        last = -1
        while self.current.kind is TokenKind.WORD:
            word = self.current.text.upper()
            if word not in CLAUSES:
                raise self.error("a clause (" + ", ".join(CLAUSES) + ")")
            position = CLAUSES.index(word)
            if position == last:
                raise sql_error(f"duplicate {word} clause", self.current.line, self.current.column)
            if position < last:
                raise sql_error(
                    f"{word} clause must come before {CLAUSES[last]}",
                    self.current.line,
                    self.current.column,
                )
            last = position
            getattr(self, f"clause_{word.lower()}")()
        if self.current.kind is TokenKind.SEMICOLON:
            self.take()
        if self.current.kind is not TokenKind.END:
            raise self.error("end of statement")
        return self.parts

    def clause_text(self) -> None:
        self.keyword("TEXT")
        self.parts.text_field = self.identifier("text field")
        self.keyword("MATCH")
        self.parts.text = self.string_value("MATCH text")
        if self.is_keyword("WEIGHT"):
            self.take()
            self.parts.text_weight = self.number("TEXT WEIGHT")

    def clause_vector(self) -> None:
        self.keyword("VECTOR")
        if not self.is_keyword("EMBED"):
            self.parts.vector_field = self.identifier("vector field")
        if self.is_keyword("EMBED"):  # the database embeds the TEXT clause's text
            self.take()
            self.parts.embed = True
        else:
            self.vector_match()
        if self.is_keyword("WEIGHT"):
            self.take()
            self.parts.vector_weight = self.number("VECTOR WEIGHT")

    def vector_match(self) -> None:
        self.keyword("MATCH")
        token = self.current
        if token.kind is not TokenKind.PARAMETER:
            raise self.error("a vector @parameter")
        raw = self.parameter(token)
        self.keyword("SPACE")
        space = self.space()
        self.parts.vector = _vector(raw, token, space.dimension)
        self.parts.space = space

    def space(self) -> VectorSpace:
        self.punct(TokenKind.LPAREN)
        space_id = self.identifier("space id")
        self.punct(TokenKind.COMMA)
        dimension = self.integer("space dimension")
        self.punct(TokenKind.COMMA)
        metric_token = self.current
        metric = self.identifier("space metric").lower()
        self.punct(TokenKind.COMMA)
        model = self.name_or_string("space model")
        self.punct(TokenKind.COMMA)
        version = self.name_or_string("space version")
        self.punct(TokenKind.RPAREN)
        try:
            return VectorSpace(space_id, dimension, metric, model, version)  # type: ignore[arg-type]
        except ValidationError as exc:
            raise sql_error(exc.message, metric_token.line, metric_token.column) from exc

    def name_or_string(self, what: str) -> str:
        if self.current.kind in (TokenKind.STRING, TokenKind.PARAMETER):
            return self.string_value(what)
        return self.identifier(what)

    def walk(self, with_seeds: bool) -> tuple[str, tuple[EntityRef, ...], int, int, int, Any]:
        self.keyword("GRAPH")
        graph = self.identifier("graph")
        seeds: tuple[EntityRef, ...] = ()
        if with_seeds:
            self.keyword("SEEDS")
            seeds = self.seeds()
        self.keyword("DEPTH")
        depth = self.integer("DEPTH")
        self.keyword("VERTICES")
        vertices = self.integer("VERTICES")
        self.keyword("EDGES")
        edges = self.integer("EDGES")
        labels = None
        if self.is_keyword("LABELS"):
            self.take()
            labels = self.value_list("label")
        return graph, seeds, depth, vertices, edges, labels

    def seeds(self) -> tuple[EntityRef, ...]:
        start = self.current
        self.punct(TokenKind.LPAREN)
        if self.current.kind is TokenKind.RPAREN:
            raise sql_error(
                "SEEDS needs at least one (collection, id) pair", start.line, start.column
            )
        seeds: list[EntityRef] = []
        while True:
            self.punct(TokenKind.LPAREN)
            collection = self.identifier("seed collection")
            self.punct(TokenKind.COMMA)
            seeds.append(EntityRef(collection, self.string_value("seed id")))
            self.punct(TokenKind.RPAREN)
            if self.current.kind is TokenKind.COMMA:
                self.take()
                continue
            self.punct(TokenKind.RPAREN)
            return tuple(seeds)

    def clause_scope(self) -> None:
        self.keyword("SCOPE")
        graph, seeds, depth, vertices, edges, labels = self.walk(with_seeds=True)
        self.parts.scope = GraphScope(GraphWalkSpec(graph, seeds, depth, vertices, edges, labels))

    def clause_retrieve(self) -> None:
        self.keyword("RETRIEVE")
        graph, seeds, depth, vertices, edges, labels = self.walk(with_seeds=True)
        weight = DEFAULT_WEIGHT
        if self.is_keyword("WEIGHT"):
            self.take()
            weight = self.number("RETRIEVE WEIGHT")
        walk = GraphWalkSpec(graph, seeds, depth, vertices, edges, labels)
        self.parts.retriever = GraphRetriever(walk, weight)

    def clause_expand(self) -> None:
        self.keyword("EXPAND")
        graph, _, depth, vertices, edges, labels = self.walk(with_seeds=False)
        self.parts.expansion = GraphExpansion(graph, depth, vertices, edges, labels)

    def clause_allow(self) -> None:
        self.keyword("ALLOW")
        self.keyword("IDS")
        self.parts.allowed_ids = self.value_list("allowed id")

    def clause_kinds(self) -> None:
        self.keyword("KINDS")
        self.parts.kinds = self.value_list("kind")

    def clause_paths(self) -> None:
        self.keyword("PATHS")
        self.parts.paths = self.value_list("path glob")

    def clause_exclude(self) -> None:
        self.keyword("EXCLUDE")
        self.keyword("TESTS")
        self.parts.exclude_tests = True

    def clause_prior(self) -> None:
        self.keyword("PRIOR")
        self.parts.prior = self.string_value("PRIOR name")

    def clause_limit(self) -> None:
        self.keyword("LIMIT")
        self.parts.limit = self.integer("LIMIT")

    def clause_fusion(self) -> None:
        self.keyword("FUSION")
        self.parts.fusion_k = self.integer("FUSION")


def _vector(raw: Any, token: Token, dimension: int) -> tuple[float, ...]:
    where = f"parameter @{token.text}"
    if not isinstance(raw, list | tuple):
        raise sql_error(f"{where} must be a JSON array of numbers", token.line, token.column)
    values: list[float] = []
    for item in raw:
        if type(item) not in (int, float) or not fits_float(item):
            raise sql_error(f"{where} must hold finite numbers only", token.line, token.column)
        values.append(float(item))
    if len(values) != dimension:
        raise sql_error(
            f"{where} has {len(values)} values; the declared dimension is {dimension}",
            token.line,
            token.column,
        )
    return tuple(values)


def _check_request(request: SqlGraphSearchRequest) -> Mapping[str, Any]:
    if not isinstance(request, SqlGraphSearchRequest):
        raise ValidationError("expected a SqlGraphSearchRequest")
    if type(request.version) is not int or request.version != SEARCH_REQUEST_VERSION:
        raise ValidationError(
            f"unsupported SQL request version {request.version!r}; "
            f"expected {SEARCH_REQUEST_VERSION}"
        )
    query = request.query
    if query.cursor is not None:
        raise ValidationError("cursors are not supported by SEARCH; cursor must be null")
    if query.allow_full_scan is not True:
        raise ValidationError("allow_full_scan must be true for SEARCH")
    parameters = query.parameters
    if not isinstance(parameters, Mapping):
        raise ValidationError("parameters must be a JSON object")
    if len(parameters) > MAX_SQL_PARAMETERS:
        raise BudgetExceededError(
            f"{len(parameters)} parameters; at most {MAX_SQL_PARAMETERS} are allowed",
            details={"limit": MAX_SQL_PARAMETERS, "size": len(parameters)},
        )
    try:
        size = len(canonical_bytes(to_wire(request)))
    except CanonicalizationError as exc:
        raise ValidationError(f"parameters are not JSON: {exc.message}") from exc
    if size > MAX_SQL_BYTES:
        raise BudgetExceededError(
            f"SQL request is {size} bytes; at most {MAX_SQL_BYTES} are allowed",
            details={"limit": MAX_SQL_BYTES, "size": size},
        )
    return parameters


def parse_search(sql: str, parameters: Mapping[str, Any], *, database: str) -> GraphSearchRequest:
    """Parse one ``SEARCH`` statement into the request it means (not yet admitted)."""
    parts = _Parser(tokenize(sql), parameters).statement()
    unused = sorted(set(parameters) - parts.used_parameters)
    if unused:
        raise ValidationError(
            f"parameters {['@' + name for name in unused]} are never used",
            details={"parameters": unused},
        )
    if parts.scope is None and parts.retriever is None and parts.expansion is None:
        raise ValidationError("SEARCH needs at least one graph clause (SCOPE, RETRIEVE, EXPAND)")
    search = SearchRequest(
        database=database,
        collection=parts.collection,
        text_field=parts.text_field,
        text=parts.text,
        vector_field=parts.vector_field,
        vector=parts.vector,
        space=parts.space,
        limit=parts.limit,
        text_weight=parts.text_weight,
        vector_weight=parts.vector_weight,
        fusion_k=parts.fusion_k,
        allowed_ids=parts.allowed_ids,
        kinds=parts.kinds,
        paths=parts.paths,
        exclude_tests=parts.exclude_tests,
        embed=parts.embed,
        prior=parts.prior,
    )
    return GraphSearchRequest(
        SEARCH_REQUEST_VERSION, search, parts.scope, parts.retriever, parts.expansion
    )


def lower_sql(request: SqlGraphSearchRequest, *, database: str) -> GraphSearchRequest:
    """Check a SQL request's envelope and limits, then lower its statement."""
    parameters = _check_request(request)
    return parse_search(request.query.sql, parameters, database=database)
