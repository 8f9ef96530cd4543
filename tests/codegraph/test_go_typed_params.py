"""Go calls through a parameter or a ``var x T`` local resolve by the declared type, as
the compiler does: a method of a struct of the repository (also one of another package),
or an external method of an imported package's type. Names whose type names nothing a
method hangs on (``func()``) stay unresolved. Expected callees are read from the sources.
"""

from __future__ import annotations

from pathlib import Path

from codegraph_expect import callees, indexed_calls

FILES = {
    "go.mod": "module example.com/cli\n\ngo 1.22\n",
    "command.go": """package cli

import (
	"io"
	"os"
	"testing"

	"example.com/cli/store"
)

type Command struct {
	parent   *Command
	commands []*Command
	store.DB
}

func (c *Command) Commands() []*Command {
	return c.commands
}

func (c *Command) walk(extra ...*Command) {
	c.parent.Root()
	c.Find()
	for _, child := range c.commands {
		child.Root()
	}
	for _, child := range extra {
		child.Commands()
	}
	subs := c.Commands()
	for i, sub := range subs {
		sub.walk()
		_ = i
	}
	for _, sub := range c.Commands() {
		sub.Root()
	}
}

func (c *Command) Root() *Command {
	return c
}

func run(cmd *Command, db store.DB, t *testing.T, fn func()) {
	cmd.Root()
	db.Find()
	t.Errorf("failed")
	fn()
}

func local() {
	var c Command
	c.Root()
	var w io.Writer = os.Stdout
	w.Write(nil)
}

var registry = &Command{}

var current Command

func global() {
	registry.Root()
	current.Root()
}

type Text struct{}

func (r Text) Render() {
	r.Write()
	for _, r := range "ab" {
		_ = r
	}
}

func (r Text) Write() {}

func handlers() {
	register(func(c *Command) {
		c.Root()
	})
}

func register(fn func(*Command)) {}

type Finder interface {
	Find() *Command
	Size() int
}

func use(f Finder) {
	f.Find().Root()
	f.Size()
}

func newCommand() *Command {
	return &Command{}
}

func find() (*Command, error) {
	return newCommand(), nil
}

func made() {
	newCommand().Root()
	c := newCommand()
	c.Root()
	found, err := find()
	found.Root()
	err.Error()
	file, _ := os.Open("x")
	file.Close()
}
""",
    "store/store.go": """package store

type DB struct{}

func (d DB) Find() {}
""",
}


def _calls(tmp_path: Path) -> tuple[set[tuple[str, str]], dict[str, int]]:
    return indexed_calls(tmp_path / "repo", FILES)


def test_parameters_are_values_of_their_declared_types(tmp_path: Path) -> None:
    pairs, _ = _calls(tmp_path)
    run = "function:command.go#run"
    assert (run, "method:command.go#Command.Root") in pairs
    assert (run, "method:store/store.go#DB.Find") in pairs
    assert (run, "external:go:testing.T.Errorf") in pairs


def test_var_locals_take_the_declared_type_over_the_value(tmp_path: Path) -> None:
    pairs, _ = _calls(tmp_path)
    local = "function:command.go#local"
    assert (local, "method:command.go#Command.Root") in pairs
    assert (local, "external:go:io.Writer.Write") in pairs
    assert not any(source == local and "os.Stdout" in target for source, target in pairs)


def test_calls_on_results_follow_the_declared_result_types(tmp_path: Path) -> None:
    pairs, _ = _calls(tmp_path)
    made = "function:command.go#made"
    assert callees(pairs, made) == {
        "function:command.go#newCommand",
        "function:command.go#find",
        "method:command.go#Command.Root",
        "external:go:os.Open",
    }


def test_fields_and_ranges_follow_declared_types(tmp_path: Path) -> None:
    pairs, _ = _calls(tmp_path)
    walk = "method:command.go#Command.walk"
    # c.parent.Root (field), c.Find (a method of the embedded store.DB), child.Root
    # (range over the field), child.Commands (range over the variadic parameter),
    # c.Commands, sub.walk (range over a local holding Commands' result), sub.Root
    # (range over the call).
    assert callees(pairs, walk) == {
        "method:command.go#Command.Root",
        "method:store/store.go#DB.Find",
        "method:command.go#Command.Commands",
        "method:command.go#Command.walk",
    }


def test_a_closure_parameter_is_a_value_of_its_type(tmp_path: Path) -> None:
    pairs, _ = _calls(tmp_path)
    assert ("function:command.go#handlers", "method:command.go#Command.Root") in pairs


def test_calls_through_an_interface_reach_its_declared_methods(tmp_path: Path) -> None:
    pairs, _ = _calls(tmp_path)
    assert callees(pairs, "function:command.go#use") == {
        "method:command.go#Finder.Find",
        "method:command.go#Finder.Size",
        "method:command.go#Command.Root",  # through Find's declared result
    }


def test_package_variables_hold_their_declared_or_composite_type(tmp_path: Path) -> None:
    pairs, _ = _calls(tmp_path)
    assert callees(pairs, "function:command.go#global") == {"method:command.go#Command.Root"}


def test_a_loop_name_beside_the_receiver_leaves_the_receiver_alone(tmp_path: Path) -> None:
    # Scopes are whole functions: the loop's ``r`` (a rune) must not hide the receiver.
    pairs, _ = _calls(tmp_path)
    assert ("method:command.go#Text.Render", "method:command.go#Text.Write") in pairs


def test_what_has_no_declared_type_in_the_repository_stays_unresolved(tmp_path: Path) -> None:
    _, counts = _calls(tmp_path)
    # run: cmd.Root, db.Find resolved, t.Errorf external, fn() unresolved (a func value);
    # local: c.Root resolved, w.Write external; find: newCommand resolved; made:
    # newCommand twice, .Root() on its result, c.Root, find, found.Root resolved,
    # os.Open external, err.Error (the builtin error) and file.Close (os.Open is not
    # read) unresolved; walk: its eight calls resolved; Render: r.Write resolved;
    # handlers: register and c.Root (the closure's) resolved; use: f.Find, .Root and
    # f.Size resolved; global: registry.Root and current.Root resolved. Root's,
    # Commands', Write's, register's and newCommand's bodies call nothing.
    assert counts == {"resolved": 26, "external": 3, "unresolved": 3}
