"""The layers point one way: the store never reaches up into the engine or the surfaces."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import cairn

SOURCE = Path(cairn.__file__).parent
ABOVE_THE_STORE = ("cairn.search", "cairn.sql", "cairn.server", "cairn.database", "cairn.cli")
"""Packages and modules that read the store; none of them may be imported by it."""


def _imported(path: Path) -> set[str]:
    """Every module ``path`` imports, at any depth of the file (lazy imports included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None and not node.level:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _reaches_up(name: str) -> bool:
    return any(name == top or name.startswith(top + ".") for top in ABOVE_THE_STORE)


def test_no_store_module_imports_a_layer_above_it() -> None:
    modules = sorted((SOURCE / "store").glob("*.py"))
    assert len(modules) > 20  # the whole package is looked at
    offending = {
        path.name: sorted(name for name in _imported(path) if _reaches_up(name)) for path in modules
    }
    assert {name: found for name, found in offending.items() if found} == {}


def test_importing_the_store_and_using_it_loads_no_engine() -> None:
    script = (
        "import sys, tempfile, pathlib\n"
        "import cairn.store as store\n"
        "import uuid\n"
        "from cairn.store import CommandRequest, ConfigureCollection, PutDocument\n"
        "with tempfile.TemporaryDirectory() as folder:\n"
        "    with store.open(pathlib.Path(folder) / 'c.db') as db:\n"
        "        db.command(CommandRequest(uuid.uuid4(), 'main', (\n"
        "            ConfigureCollection('notes', ('/text',)),\n"
        "            PutDocument('notes', 'a', {'text': 'hello'}))))\n"
        "        assert [h.ref.id for h in db.text_search('notes', '/text', 'hello')] == ['a']\n"
        "print(sorted(m for m in sys.modules if m.startswith(('cairn.search', 'cairn.sql'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_front_door_searches_and_is_the_stores_database() -> None:
    import cairn.database
    import cairn.store

    assert cairn.open is cairn.database.open
    assert issubclass(cairn.Database, cairn.store.Database)
    assert not hasattr(cairn.store.Database, "search")  # search lives above the store
