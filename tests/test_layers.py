"""The layers point one way: store below index below engine below the surfaces.

The store (``cairn.store``) keeps the durable truth and imports nothing above it; the
in-memory search structures (``cairn.index``) read the store and import nothing above
them; the engine, the SQL front end, the front door and the surfaces come after.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import cairn

SOURCE = Path(cairn.__file__).parent
ABOVE_THE_INDEX = ("cairn.search", "cairn.sql", "cairn.server", "cairn.database", "cairn.cli")
"""Packages and modules that read the index; neither the index nor the store imports them."""

ABOVE_THE_STORE = ("cairn.index", *ABOVE_THE_INDEX)
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


def _reaching_up(package: str, above: tuple[str, ...]) -> dict[str, list[str]]:
    """Per module of ``package``, what it imports from ``above`` (modules that import none
    are left out)."""
    modules = sorted((SOURCE / package).glob("*.py"))
    assert len(modules) > 10  # the whole package is looked at
    offending = {
        path.name: sorted(
            name
            for name in _imported(path)
            if any(name == top or name.startswith(top + ".") for top in above)
        )
        for path in modules
    }
    return {name: found for name, found in offending.items() if found}


def test_no_store_module_imports_a_layer_above_it() -> None:
    assert _reaching_up("store", ABOVE_THE_STORE) == {}


def test_no_index_module_imports_a_layer_above_it() -> None:
    assert _reaching_up("index", ABOVE_THE_INDEX) == {}


def test_the_checks_see_an_import_that_reaches_up() -> None:
    assert _reaching_up("search", ABOVE_THE_STORE)  # the engine does read the index


def _loaded_after(script: str) -> list[str]:
    """The ``cairn.index``, ``cairn.search`` and ``cairn.sql`` modules a fresh process
    has loaded after running ``script``."""
    probe = (
        "import sys\n"
        f"{script}"
        "print(sorted(m for m in sys.modules\n"
        "             if m.startswith(('cairn.index', 'cairn.search', 'cairn.sql'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    loaded: list[str] = ast.literal_eval(done.stdout.strip())
    return loaded


_WRITE = (
    "import tempfile, pathlib, uuid\n"
    "from cairn.store import CommandRequest, ConfigureCollection, PutDocument\n"
    "folder = tempfile.TemporaryDirectory()\n"
    "db = opener(pathlib.Path(folder.name) / 'c.db')\n"
    "db.command(CommandRequest(uuid.uuid4(), 'main', (\n"
    "    ConfigureCollection('notes', ('/text',)),\n"
    "    PutDocument('notes', 'a', {'text': 'hello'}))))\n"
    "assert dict(db.get_document('notes', 'a').body) == {'text': 'hello'}\n"
)


def test_importing_the_store_and_using_it_loads_no_index_and_no_engine() -> None:
    script = "import cairn.store as store\nopener = store.open\n" + _WRITE + "db.close()\n"
    assert _loaded_after(script) == []


def test_the_index_searches_text_without_loading_the_engine() -> None:
    script = (
        "import cairn.index as index\n"
        "opener = index.open\n"
        f"{_WRITE}"
        "assert [h.ref.id for h in db.text_search('notes', '/text', 'hello')] == ['a']\n"
        "db.close()\n"
    )
    loaded = _loaded_after(script)
    assert "cairn.index.columns" in loaded  # the probe sees what was loaded
    assert [name for name in loaded if not name.startswith("cairn.index")] == []


def test_the_front_door_searches_and_is_the_stores_database() -> None:
    import cairn.database
    import cairn.index
    import cairn.store

    assert cairn.open is cairn.database.open
    assert issubclass(cairn.Database, cairn.index.Database)
    assert issubclass(cairn.index.Database, cairn.store.Database)
    assert not hasattr(cairn.store.Database, "search")  # search lives above the store
    assert not hasattr(cairn.index.Database, "search")  # ... and above the index
    for derived in ("text_search", "vector_search", "compact", "checkpoint_columns"):
        assert not hasattr(cairn.store.Database, derived)  # the columns live in the index
