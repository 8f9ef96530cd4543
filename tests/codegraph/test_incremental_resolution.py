"""A remembering index (``cairn watch``) re-emits only the Python modules an edit can
reach and replays the others (``cairn.codegraph.incremental``); after every edit its
``graph.cairn`` is byte for byte a clean build's. The edits change what *other* modules
resolve to: a function's return, a class's subclasses, the arguments a caller passes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import cairn.codegraph.incremental as incremental
from cairn.codegraph import index_repository, write_index
from cairn.codegraph.cache import CACHE_FILENAME
from cairn.codegraph.resolve import flat_reads

FIXED_TIME = "2024-01-01T00:00:00Z"

FILES = {
    "pkg/__init__.py": "",
    "pkg/models.py": """
class A:
    def run(self): pass

    def go(self):
        self.run()

class B:
    def run(self): pass
""",
    "pkg/make.py": """
from pkg.models import A, B

def make():
    return A()

def drive(item):
    item.run()
""",
    "pkg/use.py": """
from pkg.make import make, drive
from pkg.models import A

def use():
    make().run()

def feed():
    drive(A())
""",
    "pkg/leaf.py": """
def alone():
    return len([])
""",
    "pkg/w.py": """
def target(item):
    pass
""",
    "pkg/z.py": """
def target(item):
    item.run()
""",
    "pkg/x.py": """
from pkg.w import target
""",
    "pkg/y.py": """
from pkg.x import target
from pkg.models import A

def call():
    target(A())
""",
    "pkg/sub.py": """
class D:
    pass
""",
}

# (file, old text, new text): each changes what another module's calls resolve to. A
# new text None removes the file; an old text None adds it; "->name" renames it.
EDITS: list[tuple[str, str | None, str | None]] = [
    ("pkg/make.py", "return A()", "return B()"),  # use.py's make().run() -> B.run
    ("pkg/use.py", "drive(A())", "drive(B())"),  # make.py's item.run() -> B.run (a flow)
    ("pkg/models.py", "class B:", "class C(A):\n    def run(self): pass\n\nclass B:"),
    ("pkg/leaf.py", "len([])", "len([1])"),
    ("pkg/make.py", "return B()", "return A()"),
    # y.py's call now reaches z.target: z.py's ``item.run()`` gets A through a flow
    # from y.py, a module z.py never read before.
    ("pkg/x.py", "from pkg.w import", "from pkg.z import"),
    # A new subclass of A in a module models.py never read: A.go's ``self.run()`` now
    # also reaches D.run.
    (
        "pkg/sub.py",
        "class D:\n    pass",
        "from pkg.models import A\n\nclass D(A):\n    def run(self): pass",
    ),
    # A module whose name was looked up before it existed, then renamed and removed.
    ("pkg/calls_later.py", None, "from pkg.later import made\n\ndef go():\n    made().run()\n"),
    ("pkg/later.py", None, "from pkg.models import B\n\ndef made():\n    return B()\n"),
    ("pkg/later.py", "->pkg/renamed.py", None),
    ("pkg/calls_later.py", "pkg.later", "pkg.renamed"),
    ("pkg/renamed.py", "return B()", None),
    # A subclass, then its instances bind ``self.run``: A.go's ``self.run()`` may now
    # call leaf.alone, though models.py read no name of late.py's scopes.
    (
        "pkg/late.py",
        None,
        "from pkg.models import A\nfrom pkg.leaf import alone\n\n"
        "class E(A):\n    def __init__(self):\n        self.ready = alone\n",
    ),
    ("pkg/late.py", "self.ready = alone", "self.run = alone"),
    # Every line of models.py moves down: its readers read no range, so only it re-emits.
    ("pkg/models.py", "class A:", "# moved down\n\nclass A:"),
    # A new local in one function: no other module reads that name of its scope.
    ("pkg/make.py", "def drive(item):\n", "def drive(item):\n    done = 1\n"),
]
SELF_RUN, MOVED, NEW_LOCAL = len(EDITS) - 3, len(EDITS) - 2, len(EDITS) - 1

MODULES = 10


def _write(root: Path, files: dict[str, str] = FILES) -> Path:
    """``files`` (path -> text) written under ``root``."""
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def _edit(path: Path, old: str | None, new: str | None) -> None:
    if old is None:
        assert new is not None and not path.exists()
        path.write_text(new)
    elif old.startswith("->"):
        path.rename(path.parent.parent / old[2:])
    elif new is None:
        assert old in path.read_text()
        path.unlink()
    else:
        assert old in path.read_text()
        path.write_text(path.read_text().replace(old, new))


def _artifact(result: object, folder: Path) -> bytes:
    return write_index(result, folder, generated_at=FIXED_TIME).graph_path.read_bytes()  # type: ignore[arg-type]


def _rounds(tmp_path: Path) -> list[tuple[str, int, int]]:
    """Run every edit as a remembering round and compare it with a clean build; the
    ``(file, modules emitted, modules)`` of each round."""
    repo = _write(tmp_path / "repo")
    cache = tmp_path / CACHE_FILENAME
    index_repository(repo, cache=cache, remember=True)
    seen: list[tuple[str, int, int]] = []
    for step, (name, old, new) in enumerate(EDITS):
        _edit(repo / name, old, new)
        ours = index_repository(repo, cache=cache, remember=True)
        clean = index_repository(repo)
        assert _artifact(ours, tmp_path / f"ours{step}") == _artifact(
            clean, tmp_path / f"clean{step}"
        ), (step, name)
        kept = incremental.last_round(str(cache))
        assert kept is not None
        seen.append((name, kept.emitted, len(kept.modules)))
    return seen


def test_each_round_is_a_clean_build_and_emits_only_what_the_edit_reaches(
    tmp_path: Path,
) -> None:
    seen = _rounds(tmp_path)
    by_step = {step: (name, emitted, total) for step, (name, emitted, total) in enumerate(seen)}
    assert by_step[3] == ("pkg/leaf.py", 1, MODULES)  # nothing reads the leaf module
    assert all(emitted < total for _, emitted, total in seen)
    # Reads are per name, not per module: an edit that changes nothing another module
    # reads re-emits only the edited module, though other modules read that module.
    assert by_step[MOVED][:2] == ("pkg/models.py", 1)
    assert by_step[NEW_LOCAL][:2] == ("pkg/make.py", 1)
    # An edit of what others read re-emits them too: make()'s return changes use.py,
    # and a new ``self.run`` binding changes what models.py's ``self.run()`` may call.
    assert by_step[0][1] >= 2
    assert by_step[SELF_RUN][1] >= 2


def test_rounds_from_no_memo_are_clean_builds_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(incremental, "SHARED_MEMO", False)  # the reference computation
    seen = _rounds(tmp_path)
    assert seen[3] == ("pkg/leaf.py", 1, MODULES)


def _first_round_reads(root: Path, cache: Path) -> dict[tuple[str, str], frozenset[object]]:
    index_repository(root, cache=cache, remember=True)
    kept = incremental.last_round(str(cache))
    assert kept is not None
    return {
        (phase, path): record.reads
        for phase, records in kept.phases.items()
        for path, record in records.items()
    }


@pytest.mark.parametrize("corpus", ["fixture", "cairn"])
def test_a_shared_memo_reads_what_each_module_reads_from_no_memo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, corpus: str
) -> None:
    """Each module's reads through one memo whose entries carry their reads are what it
    reads computed alone from no memo: nothing an edit can change is missed, and no
    module is made to depend on what another module read. Also on Cairn's own source
    (real code: ~140 modules answering each other from the memo, cycles included)."""
    if corpus == "fixture":
        repo = _write(tmp_path / "repo")
    else:
        repo = tmp_path / "cairn"
        shutil.copytree(Path(incremental.__file__).resolve().parents[1], repo)
    shared = _first_round_reads(repo, tmp_path / "shared.cache")
    monkeypatch.setattr(incremental, "SHARED_MEMO", False)
    alone = _first_round_reads(repo, tmp_path / "alone.cache")
    assert shared.keys() == alone.keys()
    assert sum(len(reads) for reads in alone.values()) > 3 * len(alone)
    for key, reads in alone.items():
        assert reads <= shared[key], key
    assert shared == alone


def test_a_round_without_its_last_round_emits_everything(tmp_path: Path) -> None:
    repo = _write(tmp_path / "repo")
    cache = tmp_path / CACHE_FILENAME
    index_repository(repo, cache=cache, remember=True)
    incremental.forget_round(str(cache))
    index_repository(repo, cache=cache, remember=True)
    kept = incremental.last_round(str(cache))
    assert kept is not None and kept.emitted == len(kept.modules) == MODULES


def test_a_one_shot_index_keeps_no_round(tmp_path: Path) -> None:
    repo = _write(tmp_path / "repo")
    cache = tmp_path / CACHE_FILENAME
    index_repository(repo, cache=cache)
    assert incremental.last_round(str(cache)) is None


CODE_FILES = {
    "web/app.js": (
        "import { helper } from './util.js';\nexport function main() { return helper(); }\n"
    ),
    "web/util.js": "export function helper() { return 1; }\n",
    "pkg/__init__.py": "",
    "pkg/tool.py": "def tool():\n    return len([])\n",
}


def _index_bytes(result: object, folder: Path) -> tuple[bytes, bytes]:
    written = write_index(result, folder, generated_at=FIXED_TIME)  # type: ignore[arg-type]
    return written.graph_path.read_bytes(), written.manifest_path.read_bytes()


def test_a_round_whose_code_files_did_not_change_reuses_their_resolution(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """JavaScript resolution reads the code files' extracts alone: a round where none
    changed reuses it (not run again), one where one changed runs it; the graph and the
    manifest (call counts) are a clean build's either way."""
    from cairn.codegraph.tsresolve import CodeResolver

    runs: list[int] = []
    original = CodeResolver.run

    def counted(self: CodeResolver) -> None:
        runs.append(1)
        original(self)

    monkeypatch.setattr(CodeResolver, "run", counted)
    repo = _write(tmp_path / "repo", CODE_FILES)
    cache = tmp_path / CACHE_FILENAME
    index_repository(repo, cache=cache, remember=True)
    edits = [
        ("pkg/tool.py", "len([])", "len([2])", 0),
        ("web/util.js", "return 1;", "return main();", 1),
        ("pkg/tool.py", "len([2])", "len([3])", 0),
    ]
    for step, (name, old, new, expected_runs) in enumerate(edits):
        _edit(repo / name, old, new)
        runs.clear()
        ours = index_repository(repo, cache=cache, remember=True)
        assert len(runs) == expected_runs, step
        clean = index_repository(repo)
        assert _index_bytes(ours, tmp_path / f"ours{step}") == _index_bytes(
            clean, tmp_path / f"clean{step}"
        ), step


def _share(nodes: dict[str, dict[str, object]], calls: list[tuple[str, str, int]]) -> object:
    """A share as a module's emission makes it: these nodes, one call fact per entry."""
    from cairn.codegraph.emit import EmittedShare
    from cairn.graph import EndpointIdentity, Node, OccurrenceInput, SourceRange
    from cairn.graph.multigraph import admit_apart

    made = tuple(
        Node(node_id, "function", EndpointIdentity.stable(), attributes)
        for node_id, attributes in nodes.items()
    )
    candidates = [
        (
            source,
            target,
            "calls",
            {"invocation": "call", "resolution": "resolved"},
            OccurrenceInput(
                "python", "ast", source_file="m.py", source_range=SourceRange(line, 1, line, 4)
            ),
        )
        for source, target, line in calls
    ]
    return EmittedShare(made, admit_apart(candidates))


def test_a_module_emitted_again_keeps_its_exactly_unchanged_records() -> None:
    """Re-emitted records that are exactly as before (equal, and the same JSON) are the
    last round's very objects, and a share with nothing changed is the last one itself;
    ``True`` and ``1`` are equal but print apart, so such a record is not kept."""
    from cairn.codegraph.emit import interned

    nodes = {"f": {"async": True, "line": 1}, "g": {"async": False, "line": 5}}
    before = _share(nodes, [("f", "g", 2)])
    again = _share(nodes, [("f", "g", 2)])
    assert interned(again, before) is before  # type: ignore[arg-type]
    assert interned(again, None) is again  # type: ignore[arg-type]
    edited = _share({**nodes, "h": {"async": False, "line": 9}}, [("f", "g", 2), ("h", "f", 10)])
    kept = interned(edited, before)  # type: ignore[arg-type]
    held = {node.id: node for node in before.nodes}  # type: ignore[attr-defined]
    assert [node is held.get(node.id) for node in kept.nodes] == [True, True, False]
    old_fact, old_occurrence = before.piece.facts, before.piece.occurrences  # type: ignore[attr-defined]
    for fact_id, fact in kept.piece.facts.items():
        assert (fact is old_fact.get(fact_id)) == (fact_id in old_fact)
    for key, item in kept.piece.occurrences.items():
        assert (item is old_occurrence.get(key)) == (key in old_occurrence)
    assert len(kept.piece.facts) == 2 and len(kept.piece.occurrences) == 2
    as_one = _share(
        {"f": {"async": 1, "line": 1}, "g": {"async": False, "line": 5}}, [("f", "g", 2)]
    )
    assert as_one.nodes[0] == before.nodes[0]  # type: ignore[attr-defined]
    swapped = interned(as_one, before)  # type: ignore[arg-type]
    assert swapped is not before
    assert swapped.nodes[0] is as_one.nodes[0]  # type: ignore[attr-defined]
    assert swapped.nodes[1] is before.nodes[1]  # type: ignore[attr-defined]


def test_an_edited_module_keeps_its_untouched_records_as_the_same_objects(
    tmp_path: Path,
) -> None:
    """After an edit that adds a function to a module, the module's other nodes, facts
    and occurrences in the round's graph are the last round's objects (what keeps the
    load keys and graph.cairn's printed segments from being made again for them)."""
    repo = _write(tmp_path / "repo")
    cache = tmp_path / CACHE_FILENAME
    first = index_repository(repo, cache=cache, remember=True)
    path = repo / "pkg" / "models.py"
    path.write_text(path.read_text() + "\n\ndef extra():\n    return A()\n")
    second = index_repository(repo, cache=cache, remember=True)
    mine = [node for node in first.graph.nodes() if "models" in node.id]
    assert len(mine) >= 4
    assert all(second.graph.node(node.id) is node for node in mine)
    facts = [fact for fact in first.graph.facts() if "models" in fact.source]
    assert facts and all(second.graph.fact(fact.id) is fact for fact in facts)
    new = [node for node in second.graph.nodes() if node.id.endswith("extra")]
    assert len(new) == 1 and not first.graph.has_node(new[0].id)


CUTOFF_FILES = {
    "pkg/__init__.py": "",
    "pkg/lib.py": """
class A:
    def run(self): pass

class B:
    def run(self): pass

class C:
    def run(self): pass

def other(x):
    return x

def make(item):
    made = A()
    return made
""",
    "pkg/user.py": """
from pkg.lib import make

def use():
    make(1).run()
""",
    "pkg/other.py": """
from pkg.lib import make

def more():
    return make(2)
""",
}

# (old text, new text, modules emitted with the cut-off, without it): edits of lib.py.
# The first adds a binding equal to one ``made`` has (the tables hold no ranges: no
# reader read anything changed); the second makes ``make`` return an ``A`` or a ``B``
# (user.py's ``make(1).run()`` reads it); the third, fourth and fifth change what
# ``make``'s return read (the bindings it returns, a parameter rebound, a call of
# ``other``, which returns its argument) but not its answer; the sixth changes what
# ``other`` returns, which only the entry computed again in user.py's place read (not
# user.py's own reads, from before): the answer changes, and user.py must be found.
OTHER_CALL = "        return item\n    if item:\n        return other(made)\n"
CUTOFF_EDITS = [
    ("    made = A()\n", "    made = A()\n    if item:\n        made = A()\n", 1, 1),
    ("        made = A()\n", "        made = B()\n", 2, 2),
    ("    return made\n", "    if made:\n        return item\n    return made\n", 1, 2),
    ("    if made:\n", "    item = item\n    if made:\n", 1, 2),
    ("        return item\n", OTHER_CALL, 1, 2),
    ("    return x\n", "    return C()\n", 2, 2),
]


def _all_reads(cache: Path) -> dict[tuple[str, str], tuple[frozenset[object], bool]]:
    """Each module's reads per phase, and whether early cut-off kept it (its reads, and
    those of the entries computed again in its place, may then hold more)."""
    kept = incremental.last_round(str(cache))
    assert kept is not None
    return {
        (phase, path): (
            frozenset(record.reads).union(*(flat_reads(entry) for entry in record.extra)),
            bool(record.extra),
        )
        for phase, records in kept.phases.items()
        for path, record in records.items()
    }


def _same_reads(
    kept: dict[tuple[str, str], tuple[frozenset[object], bool]],
    fresh: dict[tuple[str, str], tuple[frozenset[object], bool]],
) -> int:
    """Assert that every module's kept reads are a fresh round's: equal, or for a module
    kept by early cut-off, holding them all; how many were kept that way."""
    assert kept.keys() == fresh.keys()
    for key, (reads, widened) in kept.items():
        assert not fresh[key][1]
        if widened:
            assert fresh[key][0] <= reads, key
        else:
            assert fresh[key][0] == reads, key
    return sum(widened for _, widened in kept.values())


@pytest.mark.parametrize("cutoff", [True, False])
def test_an_edit_that_changes_no_answer_reaches_no_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cutoff: bool
) -> None:
    """Early cut-off: an edit that changes what a memo entry read (a function's return
    bindings) but not its answer re-emits the edited module alone, and its readers keep
    their shares, with their reads as a fresh round reads them; an edit that changes
    the answer re-emits the readers. Every round is a clean build's bytes, with the
    cut-off and without it (the reference, which re-emits every reader)."""
    monkeypatch.setattr(incremental, "EARLY_CUTOFF", cutoff)
    repo = _write(tmp_path / "repo", CUTOFF_FILES)
    cache = tmp_path / CACHE_FILENAME
    index_repository(repo, cache=cache, remember=True)
    kept_reads = []
    for step, (old, new, with_cutoff, without) in enumerate(CUTOFF_EDITS):
        _edit(repo / "pkg" / "lib.py", old, new)
        ours = index_repository(repo, cache=cache, remember=True)
        kept = incremental.last_round(str(cache))
        assert kept is not None
        # Readers are re-emitted when the answer changes, and without the cut-off.
        assert kept.emitted == (with_cutoff if cutoff else without), step
        clean = index_repository(repo)
        assert _artifact(ours, tmp_path / f"ours{step}") == _artifact(
            clean, tmp_path / f"clean{step}"
        ), step
        kept_reads.append(_all_reads(cache))
        shutil.copytree(repo, tmp_path / f"copy{step}")
    # Fresh rounds only now: a remembering index of the same files parses them again,
    # and a watched round would then see new extract objects (every module changed).
    for step, reads in enumerate(kept_reads):
        fresh_cache = tmp_path / f"fresh{step}.cache"
        index_repository(tmp_path / f"copy{step}", cache=fresh_cache, remember=True)
        widened = _same_reads(reads, _all_reads(fresh_cache))
        _, _, with_cutoff, without = CUTOFF_EDITS[step]
        assert (widened > 0) == (cutoff and with_cutoff < without), step


def test_reads_kept_across_rounds_are_what_a_fresh_round_reads(tmp_path: Path) -> None:
    """After every edit of the main sequence (answers changed, modules added, renamed
    and removed, subclasses and self-attributes gained), every module's reads in every
    phase are what a first round of the same tree reads (a module kept by early
    cut-off: at least that): nothing an edit can change is missed."""
    repo = _write(tmp_path / "repo")
    cache = tmp_path / CACHE_FILENAME
    index_repository(repo, cache=cache, remember=True)
    kept_reads = []
    for step, (name, old, new) in enumerate(EDITS):
        _edit(repo / name, old, new)
        index_repository(repo, cache=cache, remember=True)
        kept_reads.append(_all_reads(cache))
        shutil.copytree(repo, tmp_path / f"copy{step}")
    for step, reads in enumerate(kept_reads):  # fresh rounds after (see above)
        fresh_cache = tmp_path / f"fresh{step}.cache"
        index_repository(tmp_path / f"copy{step}", cache=fresh_cache, remember=True)
        _same_reads(reads, _all_reads(fresh_cache))


def test_a_round_answers_from_the_last_rounds_memo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Memo entries none of whose reads changed answer the next round (each phase from
    its own phase's memo), and every round is still a clean build's bytes with every
    module's reads holding a fresh round's (a carried entry reads what it read)."""
    from cairn.codegraph.resolve import PythonResolver

    adopted: list[bool] = []
    original = PythonResolver._adopted

    def counted(self: PythonResolver, cache: object, key: object) -> bool:
        found = original(self, cache, key)  # type: ignore[arg-type]
        adopted.append(found)
        return found

    monkeypatch.setattr(PythonResolver, "_adopted", counted)
    seen = _rounds(tmp_path)  # each round compared with a clean build
    assert adopted.count(True) > 10
    assert adopted.count(False) > 0  # entries whose reads changed are computed again
    assert seen[3] == ("pkg/leaf.py", 1, MODULES)


def test_rounds_without_the_carried_memo_are_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reference: every phase from an empty memo gives the same rounds."""
    with_memo = _rounds(tmp_path / "with")
    monkeypatch.setattr(incremental, "CARRIED_MEMO", False)
    assert _rounds(tmp_path / "without") == with_memo


def test_entries_computed_again_in_earlier_rounds_are_still_watched(tmp_path: Path) -> None:
    """A module kept by early cut-off twice, for two different entries, still watches
    the first one: a later edit that only that entry read reaches the module."""
    repo = tmp_path / "repo"
    files = {
        "pkg/__init__.py": "",
        "pkg/lib.py": (
            "class A:\n    def run(self): pass\n\nclass C:\n    def run(self): pass\n\n"
            "def other(x):\n    return x\n\ndef third(y):\n    return y\n\n"
            "def make(item):\n    made = A()\n    return made\n\n"
            "def make2(item):\n    built = A()\n    return built\n"
        ),
        "pkg/user.py": (
            "from pkg.lib import make, make2\n\ndef use():\n    make(1).run()\n    make2(1).run()\n"
        ),
    }
    _write(repo, files)
    cache = tmp_path / CACHE_FILENAME
    index_repository(repo, cache=cache, remember=True)
    edits = [
        ("    return made\n", "    if item:\n        return other(made)\n    return made\n", 1),
        ("    return built\n", "    if item:\n        return third(built)\n    return built\n", 1),
        ("    return x\n", "    return C()\n", 2),  # make() may now return a C
    ]
    for step, (old, new, emitted) in enumerate(edits):
        _edit(repo / "pkg" / "lib.py", old, new)
        ours = index_repository(repo, cache=cache, remember=True)
        kept = incremental.last_round(str(cache))
        assert kept is not None
        assert kept.emitted == emitted, step
        clean = index_repository(repo)
        assert _artifact(ours, tmp_path / f"ours{step}") == _artifact(
            clean, tmp_path / f"clean{step}"
        ), step
    assert any(fact.target.endswith("C.run") for fact in clean.graph.facts())


def test_a_rebound_name_with_the_same_values_stops_at_its_own_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Early cut-off below the entries that read a name: a body edit that binds a local
    again, to a value it already has, changes that name's bindings, not its values. The
    name's own entry is computed again and found equal, and the entries that read it
    through that one (``make``'s return, which user.py read) stand without being
    computed again; a later edit that changes the values reaches user.py. Each round is
    a clean build's bytes."""
    from cairn.codegraph import resolve

    redone: list[str] = []
    original = resolve.PythonResolver.answer_again

    def counted(self: resolve.PythonResolver, redo: resolve.Redo) -> object:
        redone.append(redo[0])
        return original(self, redo)

    monkeypatch.setattr(resolve.PythonResolver, "answer_again", counted)
    files = {
        "pkg/__init__.py": "",
        "pkg/lib.py": (
            "class A:\n    def run(self): pass\n\nclass B:\n    def run(self): pass\n\n"
            "Alias = A\n\ndef make(item):\n    made = A()\n    return made\n"
        ),
        "pkg/user.py": "from pkg.lib import make\n\ndef use():\n    make(1).run()\n",
    }
    repo = _write(tmp_path / "repo", files)
    cache = tmp_path / CACHE_FILENAME
    index_repository(repo, cache=cache, remember=True)
    rebound = "    made = A()\n    if item:\n        made = Alias()\n"
    edits = [
        ("    made = A()\n", rebound, 1, [resolve.REDO_LOCAL]),
        ("        made = Alias()\n", "        made = B()\n", 2, None),
    ]
    for step, (old, new, emitted, kinds) in enumerate(edits):
        redone.clear()
        _edit(repo / "pkg" / "lib.py", old, new)
        ours = index_repository(repo, cache=cache, remember=True)
        kept = incremental.last_round(str(cache))
        assert kept is not None
        assert kept.emitted == emitted, step
        if kinds is not None:
            assert sorted(set(redone)) == kinds, step
        clean = index_repository(repo)
        assert _artifact(ours, tmp_path / f"ours{step}") == _artifact(
            clean, tmp_path / f"clean{step}"
        ), step
    assert any(fact.target.endswith("B.run") for fact in clean.graph.facts())


def test_a_name_newly_bound_in_a_class_reaches_the_readers_that_missed_it(
    tmp_path: Path,
) -> None:
    """A reader that found no ``value`` in a class body read only that the name was not
    there: binding it there (and taking it out again) must reach that reader, in
    another module. Each round is a clean build's bytes."""
    files = {
        "pkg/__init__.py": "",
        "pkg/lib.py": (
            "class A:\n    def run(self): pass\n\n"
            "class Config:\n    other = 1\n\n    def setting(self): pass\n"
        ),
        "pkg/user.py": "from pkg.lib import Config\n\ndef use():\n    Config.value.run()\n",
    }
    repo = _write(tmp_path / "repo", files)
    cache = tmp_path / CACHE_FILENAME
    index_repository(repo, cache=cache, remember=True)
    edits = [
        ("    other = 1\n", "    other = 1\n    value = A()\n", True),
        ("    value = A()\n", "", False),
    ]
    for step, (old, new, calls_run) in enumerate(edits):
        _edit(repo / "pkg" / "lib.py", old, new)
        ours = index_repository(repo, cache=cache, remember=True)
        clean = index_repository(repo)
        assert _artifact(ours, tmp_path / f"ours{step}") == _artifact(
            clean, tmp_path / f"clean{step}"
        ), step
        targets = {fact.target for fact in clean.graph.facts() if fact.relation == "calls"}
        assert ("method:pkg/lib.py#A.run" in targets) == calls_run, step


def test_an_entry_over_a_changed_part_is_computed_again_and_stands_when_equal(
    tmp_path: Path,
) -> None:
    """A part of ``use_it``'s return changes its answer (``made`` is another instance
    now), but the return does not (``made.run()`` gives the same ``B``): the return is
    computed again in go()'s place, found equal, and user.py keeps its share; each
    round is a clean build's bytes."""
    files = {
        "pkg/__init__.py": "",
        "pkg/lib.py": (
            "class B:\n    def stop(self): pass\n\n"
            "class A:\n    def run(self):\n        return B()\n\n"
            "def use_it(item):\n    made = item\n    return made.run()\n"
        ),
        "pkg/user.py": "from pkg.lib import A, use_it\n\ndef go():\n    use_it(A()).stop()\n",
    }
    repo = _write(tmp_path / "repo", files)
    cache = tmp_path / CACHE_FILENAME
    index_repository(repo, cache=cache, remember=True)
    _edit(repo / "pkg" / "lib.py", "    made = item\n", "    made = A()\n")
    ours = index_repository(repo, cache=cache, remember=True)
    kept = incremental.last_round(str(cache))
    assert kept is not None
    assert kept.emitted == 1
    clean = index_repository(repo)
    assert _artifact(ours, tmp_path / "ours") == _artifact(clean, tmp_path / "clean")
    assert any(fact.target.endswith("B.stop") for fact in clean.graph.facts())
