"""TypeScript 4.7 variance annotations (``interface Z<in out T>``) are valid code, so a
file using them is indexed whole, not as a partial parse with a syntax error.

tree-sitter-typescript 0.23 has no rule for them (tree-sitter/tree-sitter-typescript#370);
the adapter reads such type parameter lists without the modifiers, keeping every
position. Expected names, lines and strings are read from the sources below.
"""

from __future__ import annotations

from pathlib import Path

from codegraph_expect import write_tree

from cairn.codegraph import index_repository
from cairn.codegraph.treesitter import extract_treesitter

VARIANT = b"""import { Base } from './base';
import express from 'express';
const app = express();

export interface Box<out T = unknown, in U = never> extends Base {
  value: T;
}

export interface Shape<
  /** @ts-ignore a comment between the bracket and the modifier */
  out S extends object = object,
  in out C = string,
> extends Box<S> {
  shape: S;
}

export type Reader<in T> = (value: T) => void;

export class Store<in out T> {
  put(values: T[]): void {
    for (const key in values) {
      console.log(key);
    }
  }
}

app.get("/box <out T, in U>", handler);
"""


def test_variance_annotations_parse_clean_with_their_lines() -> None:
    extract = extract_treesitter("src/variant.ts", "typescript", VARIANT)
    assert extract.parse_error is None  # the for-in loop's ``in`` is no modifier
    lines = {symbol.qualname: symbol.ranges[0][0] for symbol in extract.symbols}
    assert lines["Box"] == 5
    assert lines["Shape"] == 9
    assert lines["Store"] == 19
    assert lines["Store.put"] == 20
    assert [route.path for route in extract.routes] == ["/box <out T, in U>"]


def test_a_real_error_beside_variance_is_still_reported_at_its_line() -> None:
    broken = VARIANT + b"\nexport function half( {\n  return 1;\n}\n"
    extract = extract_treesitter("src/variant.ts", "typescript", broken)
    assert extract.parse_error is not None
    # The appended function starts two lines below VARIANT's last: not a variance line.
    assert extract.parse_error[1] == VARIANT.count(b"\n") + 2
    assert {"Box", "Shape", "Store.put"} <= {symbol.qualname for symbol in extract.symbols}


def test_the_file_is_indexed_whole_with_its_bases(tmp_path: Path) -> None:
    repo = write_tree(
        tmp_path / "repo",
        {
            "src/base.ts": "export interface Base {\n  id: string;\n}\n",
            "src/variant.ts": VARIANT.decode(),
        },
    )
    result = index_repository(repo)
    outcomes = {outcome.path: outcome.outcome for outcome in result.manifest.entries}
    assert outcomes["src/variant.ts"] == "indexed"
    inherits = {
        (fact.source, fact.target) for fact in result.graph.facts() if fact.relation == "inherits"
    }
    assert ("class:src/variant.ts#Box", "class:src/base.ts#Base") in inherits
    assert ("class:src/variant.ts#Shape", "class:src/variant.ts#Box") in inherits
