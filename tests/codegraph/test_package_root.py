"""Module names when the indexed folder is itself a package (its own ``__init__.py``)."""

from __future__ import annotations

from pathlib import Path

from cairn.codegraph import index_repository


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
