"""Exact nodes and facts of the Flask, FastAPI and Django fixtures (Python adapter)."""

from __future__ import annotations

import pytest
from codegraph_expect import FIXTURES, fact_tuples, node_tuples

from cairn.codegraph import index_repository

FLASK_APP_NODES = {
    ("class", "class:app/models.py#Base"),
    ("class", "class:app/models.py#User"),
    ("external", "external:python:flask"),
    ("external", "external:python:flask.Blueprint"),
    ("external", "external:python:flask.Blueprint.get"),
    ("external", "external:python:flask.Blueprint.route"),
    ("external", "external:python:flask.Flask"),
    ("external", "external:python:flask.Flask.register_blueprint"),
    ("external", "external:python:flask.Flask.route"),
    ("external", "external:python:flask.jsonify"),
    ("external", "external:python:typing"),
    ("file", "file:app/__init__.py"),
    ("file", "file:app/models.py"),
    ("file", "file:app/services.py"),
    ("file", "file:app/views.py"),
    ("function", "function:app/__init__.py#create_app"),
    ("function", "function:app/__init__.py#create_app.health"),
    ("function", "function:app/services.py#blueprint_name"),
    ("function", "function:app/services.py#load_user"),
    ("function", "function:app/views.py#get_user"),
    ("function", "function:app/views.py#users"),
    ("method", "method:app/models.py#Base.save"),
    ("method", "method:app/models.py#Base.validate"),
    ("method", "method:app/models.py#User.__init__"),
    ("method", "method:app/models.py#User.validate"),
    ("route", "route:app/__init__.py#GET /health"),
    ("route", "route:app/views.py#GET /api/users"),
    ("route", "route:app/views.py#GET /api/users/{user_id}"),
    ("route", "route:app/views.py#POST /api/users"),
    ("variable", "variable:app/services.py#MAX_USERS"),
    ("variable", "variable:app/views.py#bp"),
}
FLASK_APP_FACTS = {
    ("calls", "file:app/views.py", "external:python:flask.Blueprint", "call direct external"),
    # The decorators' explicit calls (``@bp.get(...)``, ``@bp.route(...)``, ``@app.route``).
    ("calls", "file:app/views.py", "external:python:flask.Blueprint.get", "call method external"),
    (
        "calls",
        "file:app/views.py",
        "external:python:flask.Blueprint.route",
        "call method external",
    ),
    (
        "calls",
        "function:app/__init__.py#create_app",
        "external:python:flask.Flask.route",
        "call method external",
    ),
    (
        "calls",
        "function:app/__init__.py#create_app",
        "external:python:flask.Flask",
        "call direct external",
    ),
    (
        "calls",
        "function:app/__init__.py#create_app",
        "external:python:flask.Flask.register_blueprint",
        "call method external",
    ),
    (
        "calls",
        "function:app/services.py#load_user",
        "class:app/models.py#User",
        "construct direct resolved",
    ),
    (
        "calls",
        "function:app/views.py#get_user",
        "external:python:flask.jsonify",
        "call direct external",
    ),
    (
        "calls",
        "function:app/views.py#get_user",
        "function:app/services.py#load_user",
        "call attribute resolved",
    ),
    (
        "calls",
        "function:app/views.py#users",
        "class:app/models.py#User",
        "construct direct resolved",
    ),
    (
        "calls",
        "function:app/views.py#users",
        "external:python:flask.jsonify",
        "call direct external",
    ),
    (
        "calls",
        "function:app/views.py#users",
        "method:app/models.py#Base.save",
        "call method resolved",
    ),
    (
        "calls",
        "method:app/models.py#Base.save",
        "method:app/models.py#Base.validate",
        "call method resolved",
    ),
    # self.validate() in Base.save runs User.validate on a User: a dynamic dispatch.
    (
        "calls",
        "method:app/models.py#Base.save",
        "method:app/models.py#User.validate",
        "call dynamic resolved",
    ),
    (
        "calls",
        "method:app/models.py#User.validate",
        "method:app/models.py#Base.validate",
        "call method resolved",
    ),
    ("contains", "class:app/models.py#Base", "method:app/models.py#Base.save", ""),
    ("contains", "class:app/models.py#Base", "method:app/models.py#Base.validate", ""),
    ("contains", "class:app/models.py#User", "method:app/models.py#User.__init__", ""),
    ("contains", "class:app/models.py#User", "method:app/models.py#User.validate", ""),
    ("contains", "file:app/__init__.py", "function:app/__init__.py#create_app", ""),
    ("contains", "file:app/models.py", "class:app/models.py#Base", ""),
    ("contains", "file:app/models.py", "class:app/models.py#User", ""),
    ("contains", "file:app/services.py", "function:app/services.py#blueprint_name", ""),
    ("contains", "file:app/services.py", "function:app/services.py#load_user", ""),
    ("contains", "file:app/services.py", "variable:app/services.py#MAX_USERS", ""),
    ("contains", "file:app/views.py", "function:app/views.py#get_user", ""),
    ("contains", "file:app/views.py", "function:app/views.py#users", ""),
    ("contains", "file:app/views.py", "variable:app/views.py#bp", ""),
    (
        "contains",
        "function:app/__init__.py#create_app",
        "function:app/__init__.py#create_app.health",
        "",
    ),
    (
        "decorates",
        "external:python:flask.Blueprint.get",
        "function:app/views.py#get_user",
        "bp.get",
    ),
    (
        "decorates",
        "external:python:flask.Blueprint.route",
        "function:app/views.py#users",
        "bp.route",
    ),
    (
        "decorates",
        "external:python:flask.Flask.route",
        "function:app/__init__.py#create_app.health",
        "app.route",
    ),
    (
        "handles_route",
        "route:app/__init__.py#GET /health",
        "function:app/__init__.py#create_app.health",
        "GET /health flask decorator",
    ),
    (
        "handles_route",
        "route:app/views.py#GET /api/users",
        "function:app/views.py#users",
        "GET /api/users flask decorator",
    ),
    (
        "handles_route",
        "route:app/views.py#GET /api/users/{user_id}",
        "function:app/views.py#get_user",
        "GET /api/users/{user_id} flask decorator",
    ),
    (
        "handles_route",
        "route:app/views.py#POST /api/users",
        "function:app/views.py#users",
        "POST /api/users flask decorator",
    ),
    (
        "imports",
        "file:app/__init__.py",
        "external:python:flask",
        "flask named Flask runtime static external",
    ),
    (
        "imports",
        "file:app/__init__.py",
        "file:app/models.py",
        ".models named User runtime static internal",
    ),
    (
        "imports",
        "file:app/__init__.py",
        "file:app/views.py",
        ".views named bp runtime static internal",
    ),
    (
        "imports",
        "file:app/services.py",
        "external:python:typing",
        "typing named TYPE_CHECKING runtime static external",
    ),
    (
        "imports",
        "file:app/services.py",
        "file:app/models.py",
        ".models named User runtime static internal",
    ),
    (
        "imports",
        "file:app/services.py",
        "file:app/views.py",
        ".views named bp type static internal",
    ),
    (
        "imports",
        "file:app/views.py",
        "external:python:flask",
        "flask named Blueprint runtime static external",
    ),
    (
        "imports",
        "file:app/views.py",
        "external:python:flask",
        "flask named jsonify runtime static external",
    ),
    (
        "imports",
        "file:app/views.py",
        "file:app/models.py",
        "app.models named User runtime static internal",
    ),
    (
        "imports",
        "file:app/views.py",
        "file:app/services.py",
        ". named services runtime static internal",
    ),
    ("inherits", "class:app/models.py#User", "class:app/models.py#Base", "extends"),
}

FASTAPI_APP_NODES = {
    ("class", "class:routers/deps.py#Database"),
    ("external", "external:python:fastapi"),
    ("external", "external:python:fastapi.APIRouter"),
    ("external", "external:python:fastapi.APIRouter.api_route"),
    ("external", "external:python:fastapi.APIRouter.get"),
    ("external", "external:python:fastapi.APIRouter.post"),
    ("external", "external:python:fastapi.FastAPI"),
    ("external", "external:python:fastapi.FastAPI.get"),
    ("external", "external:python:fastapi.FastAPI.include_router"),
    ("file", "file:main.py"),
    ("file", "file:routers/__init__.py"),
    ("file", "file:routers/deps.py"),
    ("file", "file:routers/items.py"),
    ("file", "file:routers/users.py"),
    ("function", "function:main.py#root"),
    ("function", "function:routers/deps.py#get_db"),
    ("function", "function:routers/items.py#create_item"),
    ("function", "function:routers/users.py#read_user"),
    ("function", "function:routers/users.py#update_user"),
    ("method", "method:routers/deps.py#Database.fetch"),
    ("route", "route:main.py#GET /"),
    ("route", "route:routers/items.py#POST /items"),
    ("route", "route:routers/users.py#GET /api/users/{user_id}"),
    ("route", "route:routers/users.py#PATCH /api/users/{user_id}"),
    ("route", "route:routers/users.py#PUT /api/users/{user_id}"),
    ("variable", "variable:main.py#app"),
    ("variable", "variable:routers/items.py#router"),
    ("variable", "variable:routers/users.py#router"),
}
FASTAPI_APP_FACTS = {
    ("calls", "file:main.py", "external:python:fastapi.FastAPI", "call direct external"),
    # The route decorators' explicit calls (``@app.get("/")``, ``@router.post("")``, ...).
    ("calls", "file:main.py", "external:python:fastapi.FastAPI.get", "call method external"),
    (
        "calls",
        "file:routers/items.py",
        "external:python:fastapi.APIRouter.post",
        "call method external",
    ),
    (
        "calls",
        "file:routers/users.py",
        "external:python:fastapi.APIRouter.get",
        "call method external",
    ),
    (
        "calls",
        "file:routers/users.py",
        "external:python:fastapi.APIRouter.api_route",
        "call method external",
    ),
    (
        "calls",
        "file:main.py",
        "external:python:fastapi.FastAPI.include_router",
        "call method external",
    ),
    ("calls", "file:routers/items.py", "external:python:fastapi.APIRouter", "call direct external"),
    ("calls", "file:routers/users.py", "external:python:fastapi.APIRouter", "call direct external"),
    (
        "calls",
        "function:routers/deps.py#get_db",
        "class:routers/deps.py#Database",
        "construct direct resolved",
    ),
    (
        "calls",
        "function:routers/items.py#create_item",
        "class:routers/deps.py#Database",
        "construct direct resolved",
    ),
    (
        "calls",
        "function:routers/items.py#create_item",
        "method:routers/deps.py#Database.fetch",
        "call method resolved",
    ),
    (
        "calls",
        "function:routers/users.py#read_user",
        "function:routers/deps.py#get_db",
        "call direct resolved",
    ),
    (  # return-value inference: ``db = get_db()`` and ``get_db`` returns ``Database()``
        "calls",
        "function:routers/users.py#read_user",
        "method:routers/deps.py#Database.fetch",
        "call method resolved",
    ),
    ("contains", "class:routers/deps.py#Database", "method:routers/deps.py#Database.fetch", ""),
    ("contains", "file:main.py", "function:main.py#root", ""),
    ("contains", "file:main.py", "variable:main.py#app", ""),
    ("contains", "file:routers/deps.py", "class:routers/deps.py#Database", ""),
    ("contains", "file:routers/deps.py", "function:routers/deps.py#get_db", ""),
    ("contains", "file:routers/items.py", "function:routers/items.py#create_item", ""),
    ("contains", "file:routers/items.py", "variable:routers/items.py#router", ""),
    ("contains", "file:routers/users.py", "function:routers/users.py#read_user", ""),
    ("contains", "file:routers/users.py", "function:routers/users.py#update_user", ""),
    ("contains", "file:routers/users.py", "variable:routers/users.py#router", ""),
    (
        "decorates",
        "external:python:fastapi.APIRouter.api_route",
        "function:routers/users.py#update_user",
        "router.api_route",
    ),
    (
        "decorates",
        "external:python:fastapi.APIRouter.get",
        "function:routers/users.py#read_user",
        "router.get",
    ),
    (
        "decorates",
        "external:python:fastapi.APIRouter.post",
        "function:routers/items.py#create_item",
        "router.post",
    ),
    ("decorates", "external:python:fastapi.FastAPI.get", "function:main.py#root", "app.get"),
    ("handles_route", "route:main.py#GET /", "function:main.py#root", "GET / fastapi decorator"),
    (
        "handles_route",
        "route:routers/items.py#POST /items",
        "function:routers/items.py#create_item",
        "POST /items fastapi decorator",
    ),
    (
        "handles_route",
        "route:routers/users.py#GET /api/users/{user_id}",
        "function:routers/users.py#read_user",
        "GET /api/users/{user_id} fastapi decorator",
    ),
    (
        "handles_route",
        "route:routers/users.py#PATCH /api/users/{user_id}",
        "function:routers/users.py#update_user",
        "PATCH /api/users/{user_id} fastapi decorator",
    ),
    (
        "handles_route",
        "route:routers/users.py#PUT /api/users/{user_id}",
        "function:routers/users.py#update_user",
        "PUT /api/users/{user_id} fastapi decorator",
    ),
    (
        "imports",
        "file:main.py",
        "external:python:fastapi",
        "fastapi named FastAPI runtime static external",
    ),
    (
        "imports",
        "file:main.py",
        "file:routers/items.py",
        "routers named items runtime static internal",
    ),
    (
        "imports",
        "file:main.py",
        "file:routers/users.py",
        "routers.users named router runtime static internal",
    ),
    (
        "imports",
        "file:routers/items.py",
        "external:python:fastapi",
        "fastapi named APIRouter runtime static external",
    ),
    (
        "imports",
        "file:routers/items.py",
        "file:routers/deps.py",
        ".deps named Database runtime static internal",
    ),
    (
        "imports",
        "file:routers/users.py",
        "external:python:fastapi",
        "fastapi named APIRouter runtime static external",
    ),
    (
        "imports",
        "file:routers/users.py",
        "file:routers/deps.py",
        ".deps named get_db runtime static internal",
    ),
}

DJANGO_SITE_NODES = {
    ("class", "class:polls/models.py#Question"),
    ("class", "class:polls/views.py#ResultsView"),
    ("external", "external:python:django.core.management"),
    ("external", "external:python:django.core.management.execute_from_command_line"),
    ("external", "external:python:django.db"),
    ("external", "external:python:django.db.models.CharField"),
    ("external", "external:python:django.db.models.Model"),
    ("external", "external:python:django.db.models.Model.objects.get"),
    ("external", "external:python:django.http"),
    ("external", "external:python:django.http.HttpResponse"),
    ("external", "external:python:django.urls"),
    ("external", "external:python:django.urls.include"),
    ("external", "external:python:django.urls.path"),
    ("external", "external:python:django.urls.re_path"),
    ("external", "external:python:django.views"),
    ("external", "external:python:django.views.View"),
    ("external", "external:python:django.views.View.as_view"),
    ("external", "external:python:os"),
    ("external", "external:python:os.environ.setdefault"),
    ("external", "external:python:sys"),
    ("file", "file:manage.py"),
    ("file", "file:mysite/__init__.py"),
    ("file", "file:mysite/settings.py"),
    ("file", "file:mysite/urls.py"),
    ("file", "file:polls/__init__.py"),
    ("file", "file:polls/models.py"),
    ("file", "file:polls/urls.py"),
    ("file", "file:polls/views.py"),
    ("function", "function:manage.py#main"),
    ("function", "function:polls/views.py#detail"),
    ("function", "function:polls/views.py#index"),
    ("method", "method:polls/models.py#Question.__str__"),
    ("method", "method:polls/views.py#ResultsView.get"),
    ("route", "route:mysite/urls.py#ANY /"),
    ("route", "route:polls/urls.py#ANY /polls/archive/{year}"),
    ("route", "route:polls/urls.py#ANY /polls/{question_id}"),
    ("route", "route:polls/urls.py#ANY /polls/{question_id}/results"),
    ("variable", "variable:mysite/settings.py#INSTALLED_APPS"),
    ("variable", "variable:mysite/settings.py#ROOT_URLCONF"),
    ("variable", "variable:mysite/urls.py#urlpatterns"),
    ("variable", "variable:polls/urls.py#app_name"),
    ("variable", "variable:polls/urls.py#urlpatterns"),
}
DJANGO_SITE_FACTS = {
    (
        "calls",
        "class:polls/models.py#Question",
        "external:python:django.db.models.CharField",
        "call attribute external",
    ),
    ("calls", "file:mysite/urls.py", "external:python:django.urls.include", "call direct external"),
    ("calls", "file:mysite/urls.py", "external:python:django.urls.path", "call direct external"),
    ("calls", "file:polls/urls.py", "external:python:django.urls.path", "call direct external"),
    ("calls", "file:polls/urls.py", "external:python:django.urls.re_path", "call direct external"),
    (
        "calls",
        "file:polls/urls.py",
        "external:python:django.views.View.as_view",
        "call attribute external",
    ),
    (
        "calls",
        "function:manage.py#main",
        "external:python:django.core.management.execute_from_command_line",
        "call direct external",
    ),
    (
        "calls",
        "function:manage.py#main",
        "external:python:os.environ.setdefault",
        "call attribute external",
    ),
    (
        "calls",
        "function:polls/views.py#detail",
        "external:python:django.db.models.Model.objects.get",
        "call attribute external",
    ),
    (
        "calls",
        "function:polls/views.py#detail",
        "external:python:django.http.HttpResponse",
        "call direct external",
    ),
    (
        "calls",
        "function:polls/views.py#index",
        "external:python:django.http.HttpResponse",
        "call direct external",
    ),
    (
        "calls",
        "method:polls/views.py#ResultsView.get",
        "external:python:django.http.HttpResponse",
        "call direct external",
    ),
    ("contains", "class:polls/models.py#Question", "method:polls/models.py#Question.__str__", ""),
    ("contains", "class:polls/views.py#ResultsView", "method:polls/views.py#ResultsView.get", ""),
    ("contains", "file:manage.py", "function:manage.py#main", ""),
    ("contains", "file:mysite/settings.py", "variable:mysite/settings.py#INSTALLED_APPS", ""),
    ("contains", "file:mysite/settings.py", "variable:mysite/settings.py#ROOT_URLCONF", ""),
    ("contains", "file:mysite/urls.py", "variable:mysite/urls.py#urlpatterns", ""),
    ("contains", "file:polls/models.py", "class:polls/models.py#Question", ""),
    ("contains", "file:polls/urls.py", "variable:polls/urls.py#app_name", ""),
    ("contains", "file:polls/urls.py", "variable:polls/urls.py#urlpatterns", ""),
    ("contains", "file:polls/views.py", "class:polls/views.py#ResultsView", ""),
    ("contains", "file:polls/views.py", "function:polls/views.py#detail", ""),
    ("contains", "file:polls/views.py", "function:polls/views.py#index", ""),
    (
        "handles_route",
        "route:mysite/urls.py#ANY /",
        "function:polls/views.py#index",
        "ANY / django call",
    ),
    (
        "handles_route",
        "route:polls/urls.py#ANY /polls/archive/{year}",
        "function:polls/views.py#index",
        "ANY /polls/archive/{year} django call",
    ),
    (
        "handles_route",
        "route:polls/urls.py#ANY /polls/{question_id}",
        "function:polls/views.py#detail",
        "ANY /polls/{question_id} django call",
    ),
    (
        "handles_route",
        "route:polls/urls.py#ANY /polls/{question_id}/results",
        "class:polls/views.py#ResultsView",
        "ANY /polls/{question_id}/results django call",
    ),
    (
        "imports",
        "file:manage.py",
        "external:python:django.core.management",
        "django.core.management named execute_from_command_line runtime static external",
    ),
    ("imports", "file:manage.py", "external:python:os", "os module os runtime static external"),
    ("imports", "file:manage.py", "external:python:sys", "sys module sys runtime static external"),
    (
        "imports",
        "file:mysite/urls.py",
        "external:python:django.urls",
        "django.urls named include runtime static external",
    ),
    (
        "imports",
        "file:mysite/urls.py",
        "external:python:django.urls",
        "django.urls named path runtime static external",
    ),
    (
        "imports",
        "file:mysite/urls.py",
        "file:polls/views.py",
        "polls named views runtime static internal",
    ),
    (
        "imports",
        "file:polls/models.py",
        "external:python:django.db",
        "django.db named models runtime static external",
    ),
    (
        "imports",
        "file:polls/urls.py",
        "external:python:django.urls",
        "django.urls named path runtime static external",
    ),
    (
        "imports",
        "file:polls/urls.py",
        "external:python:django.urls",
        "django.urls named re_path runtime static external",
    ),
    (
        "imports",
        "file:polls/urls.py",
        "file:polls/views.py",
        ". named views runtime static internal",
    ),
    (
        "imports",
        "file:polls/views.py",
        "external:python:django.http",
        "django.http named HttpResponse runtime static external",
    ),
    (
        "imports",
        "file:polls/views.py",
        "external:python:django.views",
        "django.views named View runtime static external",
    ),
    (
        "imports",
        "file:polls/views.py",
        "file:polls/models.py",
        ".models named Question runtime static internal",
    ),
    (
        "inherits",
        "class:polls/models.py#Question",
        "external:python:django.db.models.Model",
        "extends",
    ),
    (
        "inherits",
        "class:polls/views.py#ResultsView",
        "external:python:django.views.View",
        "extends",
    ),
}


CASES = [
    ("flask_app", FLASK_APP_NODES, FLASK_APP_FACTS),
    ("fastapi_app", FASTAPI_APP_NODES, FASTAPI_APP_FACTS),
    ("django_site", DJANGO_SITE_NODES, DJANGO_SITE_FACTS),
]


@pytest.mark.parametrize(("fixture", "nodes", "facts"), CASES, ids=[c[0] for c in CASES])
def test_fixture_nodes_and_facts_are_exact(
    fixture: str, nodes: set[tuple[str, str]], facts: set[tuple[str, str, str, str]]
) -> None:
    result = index_repository(FIXTURES / fixture)
    assert node_tuples(result.graph) == nodes
    assert fact_tuples(result.graph) == facts


def test_every_python_node_is_stable_and_every_fact_has_occurrences() -> None:
    graph = index_repository(FIXTURES / "flask_app").graph
    assert {n.identity.status.value for n in graph.nodes()} == {"stable"}
    for fact in graph.facts():
        assert fact.discriminator.completeness in ("full", "endpoint_only")
        assert fact.occurrence_ids
        for occurrence in graph.occurrences_of(fact.id):
            assert occurrence.owner.adapter_id == "cairn.python"
            assert occurrence.source_file is not None
            assert occurrence.source_range is not None


def test_one_occurrence_per_call_site_with_exact_ranges() -> None:
    graph = index_repository(FIXTURES / "flask_app").graph
    (fact,) = graph.facts_between(
        "function:app/views.py#users", "external:python:flask.jsonify", ["calls"]
    )
    (occurrence,) = graph.occurrences_of(fact.id)
    # ``    return jsonify([])`` on line 20: the call spans columns 12..22.
    assert occurrence.source_range is not None
    assert occurrence.source_range.to_json() == [20, 12, 20, 22]
    assert occurrence.site_kind == "call"
    assert occurrence.source_file == "app/views.py"


def test_calls_are_counted_in_the_manifest() -> None:
    result = index_repository(FIXTURES / "fastapi_app")
    # db.fetch() resolves; the four route decorators' explicit calls are external call sites.
    assert dict(result.manifest.calls) == {"external": 9, "resolved": 5}
    rows = {row.path: dict(row.counts) for row in result.manifest.sorted_entries()}
    assert rows["routers/users.py"] == {"external": 3, "resolved": 2}
