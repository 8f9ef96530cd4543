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
