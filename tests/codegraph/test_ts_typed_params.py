"""TypeScript calls through a parameter annotated with a named type resolve by that type,
as Python's annotations do: a method of a class of the repository, or an external
member of an imported package's type. A union or an array annotation stays opaque.
Expected callees are read from the sources.
"""

from __future__ import annotations

from pathlib import Path

from codegraph_expect import call_pairs, write_tree

from cairn.codegraph import index_repository

FILES = {
    "src/command.ts": """import { Request } from 'express';
import * as models from './models';

export class Command {
  run(): void {}
}

export function handle(cmd: Command, req?: Request, user: models.User<string>): void {
  cmd.run();
  req.get('x');
  user.save();
}

export function loose(either: Command | string, many: Command[]): void {
  either.run();
  many.run();
}
""",
    "src/models.ts": """export class User<T> {
  save(): void {}
}
""",
}


def _calls(tmp_path: Path) -> tuple[set[tuple[str, str]], dict[str, int]]:
    result = index_repository(write_tree(tmp_path / "repo", FILES))
    return call_pairs(result.graph), dict(result.manifest.calls)


def test_annotated_parameters_are_values_of_their_types(tmp_path: Path) -> None:
    pairs, _ = _calls(tmp_path)
    handle = "function:src/command.ts#handle"
    assert {target for source, target in pairs if source == handle} == {
        "method:src/command.ts#Command.run",
        "external:js:express.Request.get",
        "method:src/models.ts#User.save",
    }


def test_union_and_array_annotations_stay_opaque(tmp_path: Path) -> None:
    pairs, counts = _calls(tmp_path)
    assert not any(source == "function:src/command.ts#loose" for source, _ in pairs)
    assert counts == {"resolved": 2, "external": 1, "unresolved": 2}
