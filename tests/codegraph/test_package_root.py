"""Module names when the indexed folder is itself a package (its own ``__init__.py``)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from codegraph_expect import call_pairs, write_tree

from cairn.codegraph import index_repository, write_index
from cairn.codegraph.cache import CACHE_FILENAME
from cairn.codegraph.resolve import module_names

FIXED_TIME = "2024-01-01T00:00:00Z"


def test_a_package_indexed_from_its_own_folder_resolves_its_absolute_imports(
    tmp_path: Path,
) -> None:
    # Indexing django/ itself: its modules import each other as django.x, which must
    # resolve inside (they were external, since the modules were named x.* only).
    package = tmp_path / "mypkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "mod.py").write_text("def helper():\n    return 1\n")
    (package / "user.py").write_text(
        "from mypkg.sub.mod import helper\n\n\ndef use():\n    return helper()\n"
    )
    graph = index_repository(package).graph
    helper = graph.node("function:sub/mod.py#helper")
    assert helper.attributes["qualified_name"] == "mypkg.sub.mod.helper"
    calls = call_pairs(graph)
    assert ("function:user.py#use", "function:sub/mod.py#helper") in calls
    # Not a package (no __init__.py at the top): names start below the folder, as before.
    (package / "__init__.py").unlink()
    plain = index_repository(package).graph
    assert plain.node("function:sub/mod.py#helper").attributes["qualified_name"] == "sub.mod.helper"


def test_a_folder_without_init_inside_a_package_is_a_namespace_package(tmp_path: Path) -> None:
    # Flask's layout: flask/sansio/ has no __init__.py, and flask/app.py says
    # ``from .sansio.app import App``. The folder is a namespace package (PEP 420), so
    # the module is flask.sansio.app; it was named ``app`` and the import, the base
    # class and every call through it were lost.
    write_tree(
        tmp_path,
        {
            "flask/__init__.py": "",
            "flask/sansio/app.py": "class App:\n    def add_rule(self):\n        return 1\n",
            "flask/app.py": (
                "from .sansio.app import App\n\n\n"
                "class Flask(App):\n    def route(self):\n        return self.add_rule()\n"
            ),
        },
    )
    graph = index_repository(tmp_path).graph
    app = graph.node("class:flask/sansio/app.py#App")
    assert app.attributes["qualified_name"] == "flask.sansio.app.App"
    facts = {(f.relation, f.source, f.target) for f in graph.facts()}
    assert ("inherits", "class:flask/app.py#Flask", "class:flask/sansio/app.py#App") in facts
    assert (
        "calls",
        "method:flask/app.py#Flask.route",
        "method:flask/sansio/app.py#App.add_rule",
    ) in facts


def test_a_namespace_folder_of_a_package_indexed_from_its_own_folder(tmp_path: Path) -> None:
    # ``cairn index .`` inside flask/: sansio/ has no __init__.py, yet it is inside the
    # package, so its modules are flask.sansio.*; they were named ``app``, ``scaffold``,
    # and flask/app.py's ``from .sansio.app import App`` found nothing.
    package = tmp_path / "flask"
    write_tree(
        package,
        {
            "__init__.py": "",
            "sansio/app.py": "class App:\n    def add_rule(self):\n        return 1\n",
            "sansio/deeper/tool.py": "def tool():\n    return 1\n",
            "app.py": (
                "from .sansio.app import App\n"
                "from flask.sansio.deeper.tool import tool\n\n\n"
                "class Flask(App):\n    def route(self):\n        return self.add_rule() + tool()\n"
            ),
        },
    )
    graph = index_repository(package).graph
    assert graph.node("class:sansio/app.py#App").attributes["qualified_name"] == (
        "flask.sansio.app.App"
    )
    assert graph.node("function:sansio/deeper/tool.py#tool").attributes["qualified_name"] == (
        "flask.sansio.deeper.tool.tool"
    )
    facts = {(f.relation, f.source, f.target) for f in graph.facts()}
    assert ("inherits", "class:app.py#Flask", "class:sansio/app.py#App") in facts
    assert ("calls", "method:app.py#Flask.route", "method:sansio/app.py#App.add_rule") in facts
    assert ("calls", "method:app.py#Flask.route", "function:sansio/deeper/tool.py#tool") in facts


def test_module_names_are_the_names_python_imports_them_by(tmp_path: Path) -> None:
    # The oracle is Python's own import system: every name module_names gives must
    # import, from the indexed folder on sys.path, as the very file it was given for.
    files = {
        "nsprobe/__init__.py": "",
        "nsprobe/ns/deep/mod.py": "",
        "nsprobe/ns/deep/__init__.py": "",
        "nsprobe/ns/leaf.py": "",
        "nsprobe/sub/__init__.py": "",
        "nsprobe/sub/inner/x.py": "",
        "nsprobe/not-a-name/y.py": "",
        "nsprobe/not-a-name/z/__init__.py": "",
        "scripts/tool.py": "",
        "topprobe.py": "",
    }
    write_tree(tmp_path, files)
    names = module_names(files)
    assert names == {
        "nsprobe/__init__.py": "nsprobe",
        "nsprobe/ns/deep/__init__.py": "nsprobe.ns.deep",
        "nsprobe/ns/deep/mod.py": "nsprobe.ns.deep.mod",
        "nsprobe/ns/leaf.py": "nsprobe.ns.leaf",
        "nsprobe/sub/__init__.py": "nsprobe.sub",
        "nsprobe/sub/inner/x.py": "nsprobe.sub.inner.x",
        # Below a folder no import can name, a file is named from where it can be.
        "nsprobe/not-a-name/y.py": "y",
        "nsprobe/not-a-name/z/__init__.py": "z",
        # No package above: the file alone, as before.
        "scripts/tool.py": "tool",
        "topprobe.py": "topprobe",
    }
    importable = {path: name for path, name in names.items() if "not-a-name" not in path}
    importable = {p: n for p, n in importable.items() if not p.startswith("scripts/")}
    # Indexed from inside the package, every importable module keeps the same name.
    inside = [path.removeprefix("nsprobe/") for path in files if path.startswith("nsprobe/")]
    rooted = module_names(inside, "nsprobe")
    assert {f"nsprobe/{path}": name for path, name in rooted.items()} == {
        path: name for path, name in importable.items() if path.startswith("nsprobe/")
    } | {"nsprobe/not-a-name/y.py": "y", "nsprobe/not-a-name/z/__init__.py": "z"}
    sys.path.insert(0, str(tmp_path))
    try:
        for path, name in importable.items():
            module = importlib.import_module(name)
            assert Path(str(module.__file__)).resolve() == (tmp_path / path).resolve(), name
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m.split(".")[0] in ("nsprobe", "topprobe")]:
            del sys.modules[name]


def test_a_namespace_above_the_packages_resolves_imports_through_it(tmp_path: Path) -> None:
    # OpenTelemetry's layout: opentelemetry-api/src/opentelemetry/ has no __init__.py
    # (a PEP 420 namespace shared by several distributions) and its packages import each
    # other absolutely, ``from opentelemetry.context import attach``. Where the import
    # root is cannot be told from the folders alone (``src/`` is none, ``backend/``
    # may be), so the names stay as they were and the imports that name a folder above
    # the package reach it.
    write_tree(
        tmp_path,
        {
            "opentelemetry-api/src/opentelemetry/context/__init__.py": (
                "def attach(token):\n    return token\n"
            ),
            "opentelemetry-api/src/opentelemetry/trace/__init__.py": (
                "from opentelemetry.context import attach\n"
                "import opentelemetry.context.helpers\n\n\n"
                "def start_span():\n"
                "    opentelemetry.context.helpers.detach()\n"
                "    return attach(1)\n"
            ),
            "opentelemetry-api/src/opentelemetry/context/helpers.py": (
                "def detach():\n    return None\n"
            ),
        },
    )
    graph = index_repository(tmp_path).graph
    base = "opentelemetry-api/src/opentelemetry"
    attach = graph.node(f"function:{base}/context/__init__.py#attach")
    assert attach.attributes["qualified_name"] == "context.attach"  # named as before
    calls = call_pairs(graph)
    caller = f"function:{base}/trace/__init__.py#start_span"
    assert (caller, f"function:{base}/context/__init__.py#attach") in calls
    assert (caller, f"function:{base}/context/helpers.py#detach") in calls


def test_a_name_two_folders_could_mean_reaches_neither(tmp_path: Path) -> None:
    # a/ns/util and b/ns/util are both ``ns.util`` through the folders above them: an
    # import of that names neither for sure, so it reaches neither. A module's own name
    # wins over another's through a folder (ns/tool.py over x/ns/tool/).
    write_tree(
        tmp_path,
        {
            "a/ns/util/__init__.py": "def helper():\n    return 1\n",
            "b/ns/util/__init__.py": "def helper():\n    return 2\n",
            "ns/__init__.py": "",
            "ns/tool.py": "def helper():\n    return 3\n",
            "x/ns/tool/__init__.py": "def helper():\n    return 4\n",
            "c/use.py": (
                "from ns.util import helper\n"
                "from ns.tool import helper as own\n"
                "from a.ns.util import helper as mine\n\n\n"
                "def run():\n    return helper() + own() + mine()\n"
            ),
        },
    )
    graph = index_repository(tmp_path).graph
    calls = call_pairs(graph)
    targets = {target for source, target in calls if source == "function:c/use.py#run"}
    assert targets == {"function:ns/tool.py#helper", "function:a/ns/util/__init__.py#helper"}


def test_two_modules_of_one_name_each_resolve_their_own_names(tmp_path: Path) -> None:
    # A monorepo's two services, each with its package ``app``: both modules are named
    # app.models. Each one's own ``Record`` (and its import) must resolve to its own
    # definition, whichever module resolution reads first; a lookup once remembered
    # by module name gave the second module the first one's answer.
    files: dict[str, str] = {}
    for service in ("alpha", "beta"):
        files[f"{service}/app/__init__.py"] = ""
        files[f"{service}/app/models.py"] = (
            f"from {service}_lib import helper\n\n\n"
            "class Record:\n    pass\n\n\n"
            "def make():\n    helper()\n    return Record()\n"
        )
        files[f"{service}_lib.py"] = "def helper():\n    return 1\n"
    write_tree(tmp_path, files)
    graph = index_repository(tmp_path).graph
    calls = call_pairs(graph)
    for service in ("alpha", "beta"):
        made = {t for s, t in calls if s == f"function:{service}/app/models.py#make"}
        assert made == {
            f"class:{service}/app/models.py#Record",
            f"function:{service}_lib.py#helper",
        }, service


def test_an_import_of_a_name_two_services_share_reaches_its_own_services(
    tmp_path: Path,
) -> None:
    # Each service runs from its own folder, so ``from app.models import Record`` in
    # alpha/app/views.py is alpha's app.models (and ``from .models import ...`` always
    # is); its tests under alpha/tests/ import from alpha/ too. The name alone names
    # neither, and was left unresolved.
    files: dict[str, str] = {}
    for service in ("alpha", "beta"):
        files[f"{service}/app/__init__.py"] = ""
        files[f"{service}/app/models.py"] = "class Record:\n    pass\n"
        files[f"{service}/app/views.py"] = (
            "from app.models import Record\nfrom . import models\nimport app.models\n\n\n"
            "def show():\n    return Record(), models.Record(), app.models.Record()\n"
        )
        files[f"{service}/tests/test_views.py"] = (
            "from app.views import show\n\n\ndef test_show():\n    show()\n"
        )
    write_tree(tmp_path, files)
    graph = index_repository(tmp_path).graph
    facts = {(f.relation, f.source, f.target) for f in graph.facts()}
    for service in ("alpha", "beta"):
        views = f"{service}/app/views.py"
        shown = {t for r, s, t in facts if r == "calls" and s == f"function:{views}#show"}
        assert shown == {f"class:{service}/app/models.py#Record"}, service
        imported = {t for r, s, t in facts if r == "imports" and s == f"file:{views}"}
        assert imported == {f"file:{service}/app/models.py"}, service
        tested = f"function:{service}/tests/test_views.py#test_show"
        assert {t for r, s, t in facts if r == "calls" and s == tested} == {
            f"function:{views}#show"
        }, service


def test_rounds_that_make_a_name_shared_and_unshared_are_clean_builds(tmp_path: Path) -> None:
    # cairn watch resolves again only what an edit reaches: a module that looked a name
    # up must be resolved again when a second module comes to hold that name (and when
    # it stops), or its edges would still point at the first.
    repo = tmp_path / "repo"
    write_tree(
        repo,
        {
            "alpha/app/__init__.py": "",
            "alpha/app/models.py": "class Record:\n    pass\n",
            "gamma/use.py": "from app.models import Record\n\n\ndef use():\n    return Record()\n",
        },
    )
    cache = tmp_path / CACHE_FILENAME
    index_repository(repo, cache=cache, remember=True)
    # (file, its new text or None to delete it, the service whose Record use() makes)
    steps: list[tuple[str, str | None, str | None]] = [
        ("beta/app/__init__.py", "", "alpha"),
        ("beta/app/models.py", "class Record:\n    pass\n", None),  # two app.models
        ("gamma/app/__init__.py", "", None),
        ("gamma/app/models.py", "class Record:\n    pass\n", "gamma"),  # its own first
        ("gamma/app/models.py", None, None),
        ("beta/app/models.py", None, "alpha"),  # one app.models again
        ("gamma/app/__init__.py", None, "alpha"),
    ]
    for step, (name, text, service) in enumerate(steps):
        if text is None:
            (repo / name).unlink()
        else:
            write_tree(repo, {name: text})
        ours = index_repository(repo, cache=cache, remember=True)
        clean = index_repository(repo)
        folder = tmp_path / f"step{step}"
        assert (
            write_index(ours, folder / "ours", generated_at=FIXED_TIME).graph_path.read_bytes()
            == write_index(clean, folder / "clean", generated_at=FIXED_TIME).graph_path.read_bytes()
        ), (step, name)
        made = {
            f.target
            for f in clean.graph.facts()
            if f.relation == "calls" and f.source == "function:gamma/use.py#use"
        }
        expected = set() if service is None else {f"class:{service}/app/models.py#Record"}
        assert made == expected, (step, name)
