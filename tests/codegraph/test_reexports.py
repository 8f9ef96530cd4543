"""Calls through ``export ... from`` barrels resolve by the ECMAScript rules: an explicit
export of a name shadows the same name from ``export *``; ``export *`` chains are
followed through several barrels; a cycle of ``export *`` ends and still finds a name
another module of the cycle re-exports. Expected callees are read from the sources.
"""

from __future__ import annotations

from pathlib import Path

from codegraph_expect import call_pairs, write_tree

from cairn.codegraph import index_repository

FILES = {
    "src/shapes.ts": "export function area(): number {\n  return 1;\n}\n",
    "src/legacy.ts": "export function area(): number {\n  return 2;\n}\n"
    "export function perimeter(): number {\n  return 3;\n}\n",
    "src/deep/volume.ts": "export function volume(): number {\n  return 4;\n}\n",
    "src/deep/index.ts": "export * from './volume';\n",
    # An explicit export shadows the star export of the same name (ES 16.2.3).
    "src/index.ts": "export * from './legacy';\nexport { area } from './shapes';\n"
    "export * from './deep';\n",
    # Two barrels that star-export each other, and one of them a real module.
    "src/ring/a.ts": "export * from './b';\n",
    "src/ring/b.ts": "export * from './a';\nexport * from '../legacy';\n",
    "src/main.ts": "import { area, volume } from './index';\n"
    "import * as ring from './ring/a';\n\n"
    "export function main(): number {\n"
    "  return area() + volume() + ring.perimeter();\n}\n",
}

MAIN = "function:src/main.ts#main"


def _callees(tmp_path: Path) -> set[str]:
    graph = index_repository(write_tree(tmp_path / "repo", FILES)).graph
    return {target for source, target in call_pairs(graph) if source == MAIN}


def test_explicit_export_shadows_a_star_export_and_star_chains_resolve(tmp_path: Path) -> None:
    callees = _callees(tmp_path)
    assert "function:src/shapes.ts#area" in callees
    assert "function:src/legacy.ts#area" not in callees
    assert "function:src/deep/volume.ts#volume" in callees


def test_a_cycle_of_star_exports_ends_and_finds_the_name(tmp_path: Path) -> None:
    """``ring.perimeter`` is reachable only through ``a -> b -> legacy``."""
    callees = _callees(tmp_path)
    assert callees == {
        "function:src/shapes.ts#area",
        "function:src/legacy.ts#perimeter",
        "function:src/deep/volume.ts#volume",
    }
