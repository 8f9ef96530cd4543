"""Exact nodes and facts of the Express, TypeScript and Go fixtures (tree-sitter adapters)."""

from __future__ import annotations

import pytest
from codegraph_expect import FIXTURES, fact_tuples, node_tuples

from cairn.codegraph import index_repository

EXPRESS_APP_NODES = {
    ("class", "class:src/services/users.js#Repository"),
    ("class", "class:src/services/users.js#UserRepository"),
    ("external", "external:js:express"),
    ("external", "external:js:express.Application.get"),
    ("external", "external:js:express.Application.use"),
    ("external", "external:js:express.Router"),
    ("external", "external:js:express.Router.get"),
    ("external", "external:js:express.Router.post"),
    ("file", "file:src/app.js"),
    ("file", "file:src/middleware.js"),
    ("file", "file:src/routes/users.js"),
    ("file", "file:src/services/users.js"),
    ("function", "function:src/app.js#health"),
    ("function", "function:src/middleware.js#logger"),
    ("function", "function:src/routes/users.js#createUser"),
    ("function", "function:src/routes/users.js#showUser"),
    ("function", "function:src/services/users.js#findUser"),
    ("method", "method:src/services/users.js#Repository.find"),
    ("method", "method:src/services/users.js#UserRepository.findActive"),
    ("route", "route:src/app.js#GET /"),
    ("route", "route:src/app.js#GET /health"),
    ("route", "route:src/routes/users.js#GET /users/{id}"),
    ("route", "route:src/routes/users.js#POST /users"),
    ("variable", "variable:src/app.js#app"),
    ("variable", "variable:src/routes/users.js#router"),
}
EXPRESS_APP_FACTS = {
    ("calls", "file:src/app.js", "external:js:express", "call direct external"),
    ("calls", "file:src/app.js", "external:js:express.Application.get", "call method external"),
    ("calls", "file:src/app.js", "external:js:express.Application.use", "call method external"),
    ("calls", "file:src/routes/users.js", "external:js:express.Router", "call attribute external"),
    ("calls", "file:src/routes/users.js", "external:js:express.Router.get", "call method external"),
    (
        "calls",
        "file:src/routes/users.js",
        "external:js:express.Router.post",
        "call method external",
    ),
    (
        "calls",
        "function:src/routes/users.js#showUser",
        "function:src/services/users.js#findUser",
        "call direct resolved",
    ),
    (
        "calls",
        "function:src/services/users.js#findUser",
        "class:src/services/users.js#UserRepository",
        "construct direct resolved",
    ),
    (
        "calls",
        "function:src/services/users.js#findUser",
        "method:src/services/users.js#UserRepository.findActive",
        "call method optional resolved",
    ),
    (
        "calls",
        "method:src/services/users.js#UserRepository.findActive",
        "method:src/services/users.js#Repository.find",
        "call method resolved",
    ),
    (
        "contains",
        "class:src/services/users.js#Repository",
        "method:src/services/users.js#Repository.find",
        "",
    ),
    (
        "contains",
        "class:src/services/users.js#UserRepository",
        "method:src/services/users.js#UserRepository.findActive",
        "",
    ),
    ("contains", "file:src/app.js", "function:src/app.js#health", ""),
    ("contains", "file:src/app.js", "variable:src/app.js#app", ""),
    ("contains", "file:src/middleware.js", "function:src/middleware.js#logger", ""),
    ("contains", "file:src/routes/users.js", "function:src/routes/users.js#createUser", ""),
    ("contains", "file:src/routes/users.js", "function:src/routes/users.js#showUser", ""),
    ("contains", "file:src/routes/users.js", "variable:src/routes/users.js#router", ""),
    ("contains", "file:src/services/users.js", "class:src/services/users.js#Repository", ""),
    ("contains", "file:src/services/users.js", "class:src/services/users.js#UserRepository", ""),
    ("contains", "file:src/services/users.js", "function:src/services/users.js#findUser", ""),
    # ``module.exports = app`` / ``= router``: the constants, though each holds an
    # express app or router (app.js line 16, routes/users.js line 18).
    ("exports", "file:src/app.js", "variable:src/app.js#app", "module.exports default"),
    ("exports", "file:src/middleware.js", "function:src/middleware.js#logger", "logger named"),
    (
        "exports",
        "file:src/routes/users.js",
        "variable:src/routes/users.js#router",
        "module.exports default",
    ),
    (
        "exports",
        "file:src/services/users.js",
        "class:src/services/users.js#UserRepository",
        "UserRepository named",
    ),
    (
        "exports",
        "file:src/services/users.js",
        "function:src/services/users.js#findUser",
        "findUser named",
    ),
    ("handles_route", "route:src/app.js#GET /", "file:src/app.js", "GET / express call"),
    (
        "handles_route",
        "route:src/app.js#GET /health",
        "function:src/app.js#health",
        "GET /health express call",
    ),
    (
        "handles_route",
        "route:src/routes/users.js#GET /users/{id}",
        "function:src/routes/users.js#showUser",
        "GET /users/{id} express call",
    ),
    (
        "handles_route",
        "route:src/routes/users.js#POST /users",
        "function:src/routes/users.js#createUser",
        "POST /users express call",
    ),
    (
        "imports",
        "file:src/app.js",
        "external:js:express",
        "express require express runtime static external",
    ),
    (
        "imports",
        "file:src/app.js",
        "file:src/middleware.js",
        "./middleware require logger runtime static internal",
    ),
    (
        "imports",
        "file:src/app.js",
        "file:src/routes/users.js",
        "./routes/users require users runtime static internal",
    ),
    (
        "imports",
        "file:src/routes/users.js",
        "external:js:express",
        "express require express runtime static external",
    ),
    (
        "imports",
        "file:src/routes/users.js",
        "file:src/services/users.js",
        "../services/users require findUser runtime static internal",
    ),
    (
        "inherits",
        "class:src/services/users.js#UserRepository",
        "class:src/services/users.js#Repository",
        "extends",
    ),
}

TS_LIB_NODES = {
    ("class", "class:src/shapes.ts#Circle"),
    ("class", "class:src/shapes.ts#Shape"),
    ("class", "class:src/types.ts#Named"),
    ("file", "file:src/area.ts"),
    ("file", "file:src/index.ts"),
    ("file", "file:src/shapes.ts"),
    ("file", "file:src/types.ts"),
    ("file", "file:src/util.ts"),
    ("function", "function:src/area.ts#totalArea"),
    ("function", "function:src/util.ts#round"),
    ("method", "method:src/shapes.ts#Circle.area"),
    ("method", "method:src/shapes.ts#Circle.constructor"),
    ("method", "method:src/shapes.ts#Shape.area"),
    ("method", "method:src/shapes.ts#Shape.constructor"),
    ("method", "method:src/shapes.ts#Shape.describe"),
    ("variable", "variable:src/util.ts#PRECISION"),
}
TS_LIB_FACTS = {
    (
        "calls",
        "function:src/area.ts#totalArea",
        "class:src/shapes.ts#Circle",
        "construct direct resolved",
    ),
    (
        "calls",
        "function:src/area.ts#totalArea",
        "method:src/shapes.ts#Circle.area",
        "call method resolved",
    ),
    (
        "calls",
        "method:src/shapes.ts#Shape.describe",
        "function:src/util.ts#round",
        "call direct resolved",
    ),
    (
        "calls",
        "method:src/shapes.ts#Shape.describe",
        "method:src/shapes.ts#Shape.area",
        "call method resolved",
    ),
    ("contains", "class:src/shapes.ts#Circle", "method:src/shapes.ts#Circle.area", ""),
    ("contains", "class:src/shapes.ts#Circle", "method:src/shapes.ts#Circle.constructor", ""),
    ("contains", "class:src/shapes.ts#Shape", "method:src/shapes.ts#Shape.area", ""),
    ("contains", "class:src/shapes.ts#Shape", "method:src/shapes.ts#Shape.constructor", ""),
    ("contains", "class:src/shapes.ts#Shape", "method:src/shapes.ts#Shape.describe", ""),
    ("contains", "file:src/area.ts", "function:src/area.ts#totalArea", ""),
    ("contains", "file:src/shapes.ts", "class:src/shapes.ts#Circle", ""),
    ("contains", "file:src/shapes.ts", "class:src/shapes.ts#Shape", ""),
    ("contains", "file:src/types.ts", "class:src/types.ts#Named", ""),
    ("contains", "file:src/util.ts", "function:src/util.ts#round", ""),
    ("contains", "file:src/util.ts", "variable:src/util.ts#PRECISION", ""),
    ("exports", "file:src/area.ts", "function:src/area.ts#totalArea", "default default"),
    ("exports", "file:src/index.ts", "class:src/shapes.ts#Circle", "Circle reexport"),
    ("exports", "file:src/index.ts", "class:src/shapes.ts#Shape", "Shape reexport"),
    ("exports", "file:src/index.ts", "function:src/area.ts#totalArea", "totalArea reexport"),
    ("exports", "file:src/shapes.ts", "class:src/shapes.ts#Circle", "Circle named"),
    ("exports", "file:src/shapes.ts", "class:src/shapes.ts#Shape", "Shape named"),
    ("exports", "file:src/types.ts", "class:src/types.ts#Named", "Named named"),
    ("exports", "file:src/util.ts", "function:src/util.ts#round", "round named"),
    ("exports", "file:src/util.ts", "variable:src/util.ts#PRECISION", "PRECISION named"),
    (
        "imports",
        "file:src/area.ts",
        "file:src/shapes.ts",
        "./shapes named Circle runtime static internal",
    ),
    (
        "imports",
        "file:src/index.ts",
        "file:src/area.ts",
        "./area named default runtime static internal",
    ),
    (
        "imports",
        "file:src/index.ts",
        "file:src/shapes.ts",
        "./shapes named Circle runtime static internal",
    ),
    (
        "imports",
        "file:src/index.ts",
        "file:src/shapes.ts",
        "./shapes named Shape runtime static internal",
    ),
    (
        "imports",
        "file:src/index.ts",
        "file:src/util.ts",
        "./util wildcard * runtime static internal",
    ),
    (
        "imports",
        "file:src/shapes.ts",
        "file:src/types.ts",
        "./types named Named type static internal",
    ),
    (
        "imports",
        "file:src/shapes.ts",
        "file:src/util.ts",
        "./util named round runtime static internal",
    ),
    ("inherits", "class:src/shapes.ts#Circle", "class:src/shapes.ts#Shape", "extends"),
    ("inherits", "class:src/shapes.ts#Shape", "class:src/types.ts#Named", "implements"),
}

GO_SERVICE_NODES = {
    ("class", "class:internal/store/store.go#Base"),
    ("class", "class:internal/store/store.go#DB"),
    ("class", "class:server.go#Server"),
    ("external", "external:go:log"),
    ("external", "external:go:log.Fatal"),
    ("external", "external:go:net/http"),
    ("external", "external:go:net/http.HandleFunc"),
    ("external", "external:go:net/http.HandlerFunc"),
    ("external", "external:go:net/http.ListenAndServe"),
    ("external", "external:go:net/http.NewServeMux"),
    ("external", "external:go:net/http.Request.PathValue"),
    ("external", "external:go:net/http.ResponseWriter.Write"),
    ("external", "external:go:net/http.ResponseWriter.WriteHeader"),
    ("external", "external:go:net/http.ServeMux.Handle"),
    ("external", "external:go:net/http.ServeMux.HandleFunc"),
    ("file", "file:internal/store/store.go"),
    ("file", "file:main.go"),
    ("file", "file:server.go"),
    ("function", "function:internal/store/store.go#Open"),
    ("function", "function:main.go#main"),
    ("function", "function:server.go#health"),
    ("function", "function:server.go#version"),
    ("method", "method:internal/store/store.go#Base.Close"),
    ("method", "method:internal/store/store.go#DB.Find"),
    ("method", "method:server.go#Server.getItem"),
    ("method", "method:server.go#Server.write"),
    ("route", "route:main.go#ANY /health"),
    ("route", "route:main.go#ANY /version"),
    ("route", "route:main.go#GET /items/{id}"),
}
GO_SERVICE_FACTS = {
    # Parameters are values of their declared types: ``w http.ResponseWriter``,
    # ``r *http.Request`` (server.go); so are struct fields (``db *store.DB``).
    (
        "calls",
        "method:server.go#Server.getItem",
        "method:internal/store/store.go#DB.Find",
        "call method resolved",
    ),
    (
        "calls",
        "function:server.go#health",
        "external:go:net/http.ResponseWriter.WriteHeader",
        "call method external",
    ),
    (
        "calls",
        "method:server.go#Server.getItem",
        "external:go:net/http.Request.PathValue",
        "call method external",
    ),
    (
        "calls",
        "method:server.go#Server.write",
        "external:go:net/http.ResponseWriter.Write",
        "call method external",
    ),
    ("calls", "function:main.go#main", "external:go:log.Fatal", "call attribute external"),
    (
        "calls",
        "function:main.go#main",
        "external:go:net/http.HandleFunc",
        "call attribute external",
    ),
    (
        "calls",
        "function:main.go#main",
        "external:go:net/http.HandlerFunc",
        "call attribute external",
    ),
    (
        "calls",
        "function:main.go#main",
        "external:go:net/http.ListenAndServe",
        "call attribute external",
    ),
    (
        "calls",
        "function:main.go#main",
        "external:go:net/http.NewServeMux",
        "call attribute external",
    ),
    (
        "calls",
        "function:main.go#main",
        "external:go:net/http.ServeMux.Handle",
        "call method external",
    ),
    (
        "calls",
        "function:main.go#main",
        "external:go:net/http.ServeMux.HandleFunc",
        "call method external",
    ),
    (
        "calls",
        "function:main.go#main",
        "function:internal/store/store.go#Open",
        "call attribute resolved",
    ),
    (
        "calls",
        "function:server.go#version",
        "method:server.go#Server.write",
        "call method resolved",
    ),
    (
        "calls",
        "method:internal/store/store.go#DB.Find",
        "method:internal/store/store.go#Base.Close",
        "call method resolved",
    ),
    (
        "calls",
        "method:server.go#Server.getItem",
        "method:server.go#Server.write",
        "call method resolved",
    ),
    (
        "contains",
        "class:internal/store/store.go#Base",
        "method:internal/store/store.go#Base.Close",
        "",
    ),
    ("contains", "class:internal/store/store.go#DB", "method:internal/store/store.go#DB.Find", ""),
    ("contains", "class:server.go#Server", "method:server.go#Server.getItem", ""),
    ("contains", "class:server.go#Server", "method:server.go#Server.write", ""),
    ("contains", "file:internal/store/store.go", "class:internal/store/store.go#Base", ""),
    ("contains", "file:internal/store/store.go", "class:internal/store/store.go#DB", ""),
    ("contains", "file:internal/store/store.go", "function:internal/store/store.go#Open", ""),
    ("contains", "file:main.go", "function:main.go#main", ""),
    ("contains", "file:server.go", "class:server.go#Server", ""),
    ("contains", "file:server.go", "function:server.go#health", ""),
    ("contains", "file:server.go", "function:server.go#version", ""),
    (
        "handles_route",
        "route:main.go#ANY /health",
        "function:server.go#health",
        "ANY /health net_http call",
    ),
    (
        "handles_route",
        "route:main.go#ANY /version",
        "function:server.go#version",
        "ANY /version net_http call",
    ),
    (
        "handles_route",
        "route:main.go#GET /items/{id}",
        "method:server.go#Server.getItem",
        "GET /items/{id} net_http call",
    ),
    ("imports", "file:main.go", "external:go:log", "log module log runtime static external"),
    (
        "imports",
        "file:main.go",
        "external:go:net/http",
        "net/http module http runtime static external",
    ),
    (
        "imports",
        "file:main.go",
        "file:internal/store/store.go",
        "example.com/shop/internal/store module store runtime static internal",
    ),
    (
        "imports",
        "file:server.go",
        "external:go:net/http",
        "net/http module http runtime static external",
    ),
    (
        "imports",
        "file:server.go",
        "file:internal/store/store.go",
        "example.com/shop/internal/store module store runtime static internal",
    ),
    (
        "inherits",
        "class:internal/store/store.go#DB",
        "class:internal/store/store.go#Base",
        "extends",
    ),
}


CASES = [
    ("express_app", EXPRESS_APP_NODES, EXPRESS_APP_FACTS),
    ("ts_lib", TS_LIB_NODES, TS_LIB_FACTS),
    ("go_service", GO_SERVICE_NODES, GO_SERVICE_FACTS),
]


@pytest.mark.parametrize(("fixture", "nodes", "facts"), CASES, ids=[c[0] for c in CASES])
def test_fixture_nodes_and_facts_are_exact(
    fixture: str, nodes: set[tuple[str, str]], facts: set[tuple[str, str, str, str]]
) -> None:
    result = index_repository(FIXTURES / fixture)
    assert node_tuples(result.graph) == nodes
    assert fact_tuples(result.graph) == facts


def test_call_counts_and_adapters() -> None:
    result = index_repository(FIXTURES / "go_service")
    assert dict(result.manifest.calls) == {"external": 10, "resolved": 5}
    owners = {o.owner.adapter_id for o in result.graph.occurrences()}
    assert owners == {"cairn.go"}
    assert result.manifest.outcome_counts() == {"indexed": 4}


def test_optional_chaining_is_recorded_on_the_fact() -> None:
    graph = index_repository(FIXTURES / "express_app").graph
    (fact,) = graph.facts_between(
        "function:src/services/users.js#findUser",
        "method:src/services/users.js#UserRepository.findActive",
    )
    assert fact.discriminator.value["optional_chaining"] is True
    (occurrence,) = graph.occurrences_of(fact.id)
    assert occurrence.source_range is not None
    assert occurrence.source_range.to_json() == [15, 10, 15, 29]


def test_export_occurrences_point_at_the_export_statement() -> None:
    graph = index_repository(FIXTURES / "ts_lib").graph
    (fact,) = graph.facts_between("file:src/util.ts", "variable:src/util.ts#PRECISION", ["exports"])
    (occurrence,) = graph.occurrences_of(fact.id)
    assert occurrence.source_range is not None
    assert occurrence.source_range.to_json() == [5, 1, 5, 27]
