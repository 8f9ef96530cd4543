"""Type annotations type their names (issue 21): a parameter, a return, a variable, an
attribute set in a method and a dataclass field annotated with an in-repository class
make calls on them resolve. Expected edges are read off the source below by hand."""

from __future__ import annotations

from pathlib import Path

from cairn.codegraph import index_repository

SOURCE = """\
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


class User:
    def save(self):
        return 1


class Repo:
    def find(self, key) -> User:
        return lookup(key)

    def maybe(self) -> Optional[User]:
        return None


def lookup(key):
    return key


@dataclass
class Session:
    user: User

    def close(self):
        self.user.save()


class Service:
    def __init__(self, repo: "Repo"):
        self.repo = repo
        self.current: User | None = None

    def run(self, other: User, key: str) -> None:
        other.save()
        self.repo.find(key).save()
        found = self.repo.maybe()
        found.save()
        self.current.save()
        key.upper()
"""


def test_annotations_resolve_calls_on_what_they_type(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(SOURCE)
    graph = index_repository(tmp_path).graph
    calls: dict[tuple[str, str], list[int]] = {}
    for fact in graph.facts():
        if fact.relation == "calls":
            lines = [
                o.source_range.start_line for o in graph.occurrences_of(fact.id) if o.source_range
            ]
            calls[(fact.source, fact.target)] = sorted(lines)
    run, save = "method:m.py#Service.run", "method:m.py#User.save"
    # other: User (38), find() -> User (39), maybe() -> Optional[User] (41),
    # self.current: User | None (42).
    assert calls[(run, save)] == [38, 39, 41, 42]
    # repo: "Repo" (a string annotation) types self.repo.
    assert calls[(run, "method:m.py#Repo.find")] == [39]
    assert calls[(run, "method:m.py#Repo.maybe")] == [40]
    # A dataclass field types the attribute on instances.
    assert calls[("method:m.py#Session.close", save)] == [29]
    # str is a builtin: key.upper() gives no fact; nothing else leaves run.
    assert {target for source, target in calls if source == run} == {
        save,
        "method:m.py#Repo.find",
        "method:m.py#Repo.maybe",
    }
