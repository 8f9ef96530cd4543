"""TypeScript calls through a parameter annotated with a named type resolve by that type,
as Python's annotations do: a method of a class of the repository, or an external
member of an imported package's type. A union or an array annotation stays opaque.
Expected callees are read from the sources.
"""

from __future__ import annotations

from pathlib import Path

from codegraph_expect import call_pairs, callees, indexed_calls, write_tree

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
    "src/service.ts": """import { Command } from './command';

export class Service {
  private users: Command;
  repo = new Command();

  constructor(private readonly store: Command, plain: Command) {}

  act(): void {
    this.users.run();
    this.repo.run();
    this.store.run();
    this.plain.run();
  }
}

export class Child extends Service {
  more(): void {
    this.repo.run();
  }
}
""",
    "src/finder.ts": """export interface Finder {
  find(id: string): string;
  child: Finder;
}

export function use(f: Finder): void {
  f.find('a');
  f.child.find('b');
}

export interface make {
  build(): void;
}

export function make(): void {
  function build(): void {}
  build();
}
""",
    "src/app.ts": """import express, { Request, Response } from 'express';
import { Command } from './command';

const app = express();

app.get('/', (req: Request, res: Response) => {
  res.json({});
});

export function wire(cmds: Command[]): void {
  cmds.forEach((cmd: Command) => cmd.run());
  cmds.forEach((other) => other.run());
  const picked: Command = cmds[0];
  picked.run();
}
""",
    "src/factory.ts": """import { Command } from './command';

export function makeCommand(): Command {
  return new Command();
}

export class Factory {
  build(): Command {
    return makeCommand();
  }
}

export function assemble(f: Factory): void {
  makeCommand().run();
  const made = makeCommand();
  made.run();
  f.build().run();
}
""",
    "src/legacy.js": """import { Command } from './command';

export class Legacy {
  constructor() {
    this.cmd = new Command();
    this.count = 5;
  }

  go() {
    this.cmd.run();
    this.count.run();
  }
}
""",
}


def _calls(tmp_path: Path) -> tuple[set[tuple[str, str]], dict[str, int]]:
    return indexed_calls(tmp_path / "repo", FILES)


def test_annotated_parameters_are_values_of_their_types(tmp_path: Path) -> None:
    pairs, _ = _calls(tmp_path)
    handle = "function:src/command.ts#handle"
    assert callees(pairs, handle) == {
        "method:src/command.ts#Command.run",
        "external:js:express.Request.get",
        "method:src/models.ts#User.save",
    }


def test_class_fields_follow_their_annotations_initializers_and_assignments(
    tmp_path: Path,
) -> None:
    pairs, _ = _calls(tmp_path)
    run = "method:src/command.ts#Command.run"
    # this.users (annotated), this.repo (initialized with new), this.store (a
    # parameter property); this.plain is no property: the parameter has no modifier.
    assert ("method:src/service.ts#Service.act", run) in pairs
    assert ("method:src/service.ts#Child.more", run) in pairs  # inherited field
    assert ("method:src/legacy.js#Legacy.go", run) in pairs  # this.cmd = new Command()


def test_interface_methods_are_nodes_calls_through_the_interface_reach(
    tmp_path: Path,
) -> None:
    result = index_repository(write_tree(tmp_path / "repo", FILES))
    pairs = call_pairs(result.graph)
    use = "function:src/finder.ts#use"
    assert callees(pairs, use) == {"method:src/finder.ts#Finder.find"}
    # An interface merged with a function of its name keeps no members: the
    # function's own nested ``build`` is what ``build()`` calls.
    ids = {node.id for node in result.graph.nodes()}
    assert "method:src/finder.ts#make.build" not in ids
    assert ("function:src/finder.ts#make", "function:src/finder.ts#make.build") in pairs


def test_callback_parameters_follow_their_annotations(tmp_path: Path) -> None:
    pairs, _ = _calls(tmp_path)
    # A route handler at module level: its calls are the file's.
    assert ("file:src/app.ts", "external:js:express.Response.json") in pairs
    # ``(cmd: Command) => cmd.run()`` and ``picked: Command`` resolve;
    # ``(other) => other.run()`` does not.
    assert callees(pairs, "function:src/app.ts#wire") == {"method:src/command.ts#Command.run"}


def test_calls_on_results_follow_declared_return_types(tmp_path: Path) -> None:
    pairs, _ = _calls(tmp_path)
    assert callees(pairs, "function:src/factory.ts#assemble") == {
        "function:src/factory.ts#makeCommand",
        "method:src/factory.ts#Factory.build",
        "method:src/command.ts#Command.run",
    }


def test_union_and_array_annotations_stay_opaque(tmp_path: Path) -> None:
    pairs, counts = _calls(tmp_path)
    assert not any(source == "function:src/command.ts#loose" for source, _ in pairs)
    # handle: 2 resolved, 1 external; loose: 2 unresolved; act: 3 resolved (users,
    # repo, store), this.plain unresolved; more: 1 resolved; Legacy: new Command() and
    # this.cmd.run resolved, this.count.run unresolved; Service's field initializer
    # new Command() resolved; use: f.find and f.child.find resolved; make: build();
    # app.ts: express(), app.get and res.json external, cmd.run and picked.run
    # resolved, the two cmds.forEach (an array annotation) and other.run unresolved;
    # factory.ts: new Command(), build's makeCommand() and assemble's six resolved.
    assert counts == {"resolved": 22, "external": 4, "unresolved": 7}
