"""Module names when the indexed folder is itself a package (its own ``__init__.py``)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from cairn.codegraph import index_repository
from cairn.codegraph.resolve import module_names


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
    calls = {(f.source, f.target) for f in graph.facts() if f.relation == "calls"}
    assert ("function:user.py#use", "function:sub/mod.py#helper") in calls
    # Not a package (no __init__.py at the top): names start below the folder, as before.
    (package / "__init__.py").unlink()
    plain = index_repository(package).graph
    assert plain.node("function:sub/mod.py#helper").attributes["qualified_name"] == "sub.mod.helper"


def _tree(root: Path, files: dict[str, str]) -> None:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_a_folder_without_init_inside_a_package_is_a_namespace_package(tmp_path: Path) -> None:
    # Flask's layout: flask/sansio/ has no __init__.py, and flask/app.py says
    # ``from .sansio.app import App``. The folder is a namespace package (PEP 420), so
    # the module is flask.sansio.app; it was named ``app`` and the import, the base
    # class and every call through it were lost.
    _tree(
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
    _tree(tmp_path, files)
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
    sys.path.insert(0, str(tmp_path))
    try:
        for path, name in importable.items():
            module = importlib.import_module(name)
            assert Path(str(module.__file__)).resolve() == (tmp_path / path).resolve(), name
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m.split(".")[0] in ("nsprobe", "topprobe")]:
            del sys.modules[name]
