"""Body words: what a definition's body says, on its node and in its searchable text.

Expected words are read by hand from the fixture source below.
"""

from __future__ import annotations

from pathlib import Path

from cairn.codegraph import index_repository
from cairn.codegraph.terms import MAX_BODY_TERMS, PYTHON_KEYWORDS, body_terms
from cairn.store.load import node_text

SOURCE = '''\
class Registry:
    """Holds the handlers."""

    limit = 3  # most handlers kept

    def register(self, handler):
        """Add a handler."""
        # remember it for dispatch
        self.handlers.append(handler)
        return "registered"

    def clear(self):
        self.handlers = []


def outer():
    def inner():
        return compute_total
    return inner
'''


def _nodes(tmp_path: Path) -> dict[str, dict[str, object]]:
    (tmp_path / "reg.py").write_text(SOURCE)
    graph = index_repository(tmp_path).graph
    return {
        str(node.attributes["qualified_name"]): dict(node.attributes)
        for node in graph.nodes()
        if node.kind in ("class", "function", "method")
    }


def test_a_function_body_gives_its_words_without_docstring_or_keywords(tmp_path: Path) -> None:
    nodes = _nodes(tmp_path)
    assert nodes["reg.Registry.register"]["body_terms"] == (
        "remember it dispatch handlers append handler registered"  # "for" is a keyword
    )
    assert nodes["reg.Registry.clear"]["body_terms"] == "handlers"
    # A nested definition's words are its own and its enclosing function's.
    assert nodes["reg.outer.inner"]["body_terms"] == "compute_total"
    assert nodes["reg.outer"]["body_terms"] == "inner compute_total"


def test_a_class_body_gives_its_statements_and_member_names(tmp_path: Path) -> None:
    nodes = _nodes(tmp_path)
    assert nodes["reg.Registry"]["body_terms"] == "limit most handlers kept register clear"


def test_body_words_reach_the_searchable_text(tmp_path: Path) -> None:
    (tmp_path / "reg.py").write_text(SOURCE)
    graph = index_repository(tmp_path).graph
    node = next(n for n in graph.nodes() if n.attributes.get("name") == "register")
    assert "dispatch" in node_text(node).split()


def test_body_words_are_bounded_and_distinct() -> None:
    words = [f"w{index}" for index in range(MAX_BODY_TERMS + 10)]
    text = " ".join(["self", "w0", *words, "w1"])
    assert body_terms(text, PYTHON_KEYWORDS) == " ".join(words[:MAX_BODY_TERMS])
    assert body_terms("return None", PYTHON_KEYWORDS) is None


TS_SOURCE = """\
export class Store {
  items: string[] = [];
  // keep the newest first
  add(item: string): void {
    this.items.unshift(item);
  }
}

export const sendMail = async (to: string) => {
  await transport.deliver(to, "welcome aboard");
};
"""

GO_SOURCE = """\
package main

// Greet says hello.
func Greet(name string) string {
\treturn fmt.Sprintf("hello %s", name) // friendly
}
"""


def test_typescript_and_go_bodies_give_their_words(tmp_path: Path) -> None:
    (tmp_path / "app.ts").write_text(TS_SOURCE)
    (tmp_path / "main.go").write_text(GO_SOURCE)
    graph = index_repository(tmp_path).graph
    terms = {
        str(node.attributes["qualified_name"]): node.attributes.get("body_terms")
        for node in graph.nodes()
        if node.kind in ("class", "function", "method")
    }
    assert terms == {
        "app.ts.Store": "items keep the newest first add item unshift",  # "string" is a type
        "app.ts.Store.add": "items unshift item",  # "this" and "void" are keywords
        "app.ts.sendMail": "transport deliver to welcome aboard",  # an arrow's body
        "main.Greet": "fmt Sprintf hello s name friendly",  # "%s" gives "s"
    }
