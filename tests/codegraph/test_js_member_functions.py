"""JavaScript functions assigned to members (issue 21): Express defines its whole API so
(``res.send = function send(body) {...}``, ``app.handle = ...``, ``proto.handle = ...``).
Each is a node named by its member chain, its calls are its own (not the file's), and
``this.x()`` inside it reaches a sibling ``obj.x``. Expected facts are read off the
source by hand."""

from __future__ import annotations

from pathlib import Path

from cairn.codegraph import index_repository

SOURCE = """\
function helper() { return 1; }

exports.foo = function () { return helper(); };

var res = Object.create(null);
module.exports = res;

res.send = function send(body) {
  helper();
  return this.json(body);
};

res.json = (obj) => helper();

function Router() {}
Router.prototype.handle = function handle(req) {
  helper();
};

res.send(1);
"""


def test_member_assigned_functions_are_nodes_with_their_own_calls(tmp_path: Path) -> None:
    (tmp_path / "lib.js").write_text(SOURCE)
    graph = index_repository(tmp_path).graph
    nodes = {node.id for node in graph.nodes()}
    assert nodes == {
        "file:lib.js",
        "function:lib.js#helper",
        "function:lib.js#foo",
        "function:lib.js#res.send",
        "function:lib.js#res.json",
        "function:lib.js#Router",
        "function:lib.js#Router.handle",
    }
    calls = {
        (fact.source, fact.target): sorted(
            o.source_range.start_line for o in graph.occurrences_of(fact.id) if o.source_range
        )
        for fact in graph.facts()
        if fact.relation == "calls"
    }
    assert calls == {
        ("function:lib.js#foo", "function:lib.js#helper"): [3],
        ("function:lib.js#res.send", "function:lib.js#helper"): [9],
        ("function:lib.js#res.send", "function:lib.js#res.json"): [10],
        ("function:lib.js#res.json", "function:lib.js#helper"): [13],
        ("function:lib.js#Router.handle", "function:lib.js#helper"): [17],
        ("file:lib.js", "function:lib.js#res.send"): [20],
    }


HANDLERS = """\
const express = require('express');
const router = express.Router();

function save(x) { return x; }

router.post('/users', async function createUser(req, res) {
  save(req.body);
});

router.get('/users', (req, res) => save(1));
"""


def test_a_named_inline_handler_is_its_own_node_and_the_routes_handler(tmp_path: Path) -> None:
    (tmp_path / "app.js").write_text(HANDLERS)
    graph = index_repository(tmp_path).graph
    facts = {
        (fact.relation, fact.source, fact.target)
        for fact in graph.facts()
        if fact.relation in ("calls", "handles_route") and not fact.target.startswith("external:")
    }
    assert facts == {
        ("calls", "function:app.js#createUser", "function:app.js#save"),
        ("handles_route", "route:app.js#POST /users", "function:app.js#createUser"),
        # An arrow function has no name: it is no node, its calls are the file's (spec §3).
        ("calls", "file:app.js", "function:app.js#save"),
        ("handles_route", "route:app.js#GET /users", "file:app.js"),
    }
