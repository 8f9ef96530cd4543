"""Symbols by name: what people and agents type (``url_for``, ``Flask.full_dispatch_request``,
``django.db.models.Model``, a document ID) resolved to the nodes of a code graph.

Exact before fuzzy, and never a guess: the tiers are ``id`` (a document ID),
``exact`` (the qualified name, or the name an import gives a Python symbol through the
folders above its topmost package: ``opentelemetry.context.attach`` for
``context.attach`` in ``src/opentelemetry/context/``, a namespace folder), ``suffix``
(the qualified name ends with the dotted name), then ``fuzzy`` (the same last name,
case-insensitively, and for a dotted name its owner too: ``JobSlots.take`` is never
``_Parser.take``; or every dotted part in order: a re-export's path). The best tier
with any match decides; one match there is the answer (labelled with its tier), more
are returned as candidates. Candidates are read in one read cut as the principal, so a
name never reveals a document it may not see. Lookup goes by document ID
(``kind:path#qualname``), which holds the last name, so
no body is decoded until a candidate is read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cairn.errors import ValidationError
from cairn.store.commands import EntityRef
from cairn.store.limits import check_identifier
from cairn.store.reads import ReadCut, read_documents

__all__ = [
    "MAX_CANDIDATES",
    "NAME_COLLECTIONS",
    "TIERS",
    "NameResolution",
    "SymbolMatch",
    "location_of",
    "resolve_last_part",
    "resolve_name",
]

MAX_CANDIDATES = 20
"""Candidates returned for an ambiguous name (the total is counted)."""

MAX_LOOKUP_ROWS = 5_000
"""Rows read for one name before the tiers are applied (a very common last name)."""

NAME_COLLECTIONS = ("symbols", "routes", "files")
"""Where names are looked up by default: the code graph's named families."""

TIERS = ("id", "exact", "suffix", "fuzzy")
"""Match tiers, best first."""

_PYTHON_SUFFIX = ".py"
_PACKAGE_MODULE = "__init__"

_KIND_ORDER = {"class": 0, "function": 1, "method": 2, "route": 3, "variable": 4, "file": 5}


@dataclass(frozen=True, slots=True)
class SymbolMatch:
    """A node a name matched, with what a person needs to tell it apart."""

    ref: EntityRef
    tier: str
    kind: str | None
    qualified_name: str | None
    path: str | None
    range: tuple[int, ...] | None

    @property
    def location(self) -> str | None:
        """``path:line`` where the symbol starts (just the path without a range)."""
        return location_of(self.path, self.range)


def location_of(path: object, found_range: object) -> str | None:
    """``path:line`` of a node whose ``range`` starts at that line, the path alone when
    it has no usable range, None without a path (the document fields as stored)."""
    if not isinstance(path, str) or not path:
        return None
    if isinstance(found_range, list | tuple) and found_range:
        line = found_range[0]
        if isinstance(line, int) and not isinstance(line, bool):
            return f"{path}:{line}"
    return path


@dataclass(frozen=True, slots=True)
class NameResolution:
    """What a name resolved to: one ``match``, or ``candidates`` when it is ambiguous."""

    query: str
    status: str  # one of TIERS, "ambiguous" or "not_found"
    match: SymbolMatch | None
    candidates: tuple[SymbolMatch, ...]
    total: int


def _like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _clean(name: str) -> str:
    text = name.strip()
    return text[:-2] if text.endswith("()") else text


def _candidate_ids(cut: ReadCut, name: str, collections: Sequence[str]) -> list[EntityRef]:
    """Documents whose ID could carry ``name``: its last part after ``#`` or ``.``, a
    file path, or the ID itself (LIKE is case-insensitive: the fuzzy tier needs that)."""
    last = name.rsplit(".", 1)[-1].rsplit("#", 1)[-1]
    patterns = [f"%#{_like(last)}", f"%.{_like(last)}", f"file:%{_like(name)}", _like(name)]
    marks = ", ".join("?" * len(collections))
    rows = cut.conn.execute(
        f"SELECT collection, id FROM documents WHERE deleted = 0 AND collection IN ({marks}) "
        "AND (id LIKE ? ESCAPE '\\' OR id LIKE ? ESCAPE '\\' OR id LIKE ? ESCAPE '\\' "
        "OR id LIKE ? ESCAPE '\\') ORDER BY collection, id LIMIT ?",
        (*collections, *patterns, MAX_LOOKUP_ROWS),
    )
    return [EntityRef(collection, doc_id) for collection, doc_id in rows]


def _in_order(parts: Sequence[str], within: Sequence[str]) -> bool:
    it = iter(within)
    return all(any(part == item for item in it) for part in parts)


def _tier(name: str, ref: EntityRef, qualified: str | None, path: str | None) -> str | None:
    if ref.id == name:
        return "id"
    candidates = [qualified] if qualified else []
    if path:
        candidates.append(path)
    if name in candidates or (qualified and path and _through_folders(name, ref, qualified, path)):
        return "exact"
    if any(text.endswith(("." + name, "/" + name)) for text in candidates):
        return "suffix"
    wanted = name.lower().split(".")
    for text in candidates:
        parts = text.lower().replace("/", ".").split(".")
        if parts and wanted[-1] == parts[-1] and _in_order(wanted, parts):
            return "fuzzy"
    # The same last name; a dotted name's owner (``JobSlots`` of ``JobSlots.take``) must
    # name it too, or another class's method would answer for one that does not exist.
    parts = ref.id.split(":", 1)[-1].lower().replace("/", ".").replace("#", ".").split(".")
    return "fuzzy" if parts[-1] == wanted[-1] and _in_order(wanted[-2:], parts) else None


def _through_folders(name: str, ref: EntityRef, qualified: str, path: str) -> bool:
    """Whether ``name`` is ``qualified`` named from folders above its module's topmost
    package, those folders' names in order (``cairn.codegraph.resolve.module_aliases``)."""
    if not path.endswith(_PYTHON_SUFFIX) or not name.endswith("." + qualified):
        return False
    qualname = ref.id.rsplit("#", 1)[1] if "#" in ref.id else ""
    module = qualified.removesuffix("." + qualname) if qualname else qualified
    parts = path[: -len(_PYTHON_SUFFIX)].split("/")
    if parts[-1] == _PACKAGE_MODULE:
        parts = parts[:-1]
    folders = parts[: len(parts) - len(module.split("."))]
    above = name[: -len(qualified) - 1].split(".")
    return len(above) <= len(folders) and folders[len(folders) - len(above) :] == above


def _sort_key(item: SymbolMatch) -> tuple[int, int, str, str]:
    rank = _KIND_ORDER.get(item.kind or "", len(_KIND_ORDER))
    return (TIERS.index(item.tier), rank, item.qualified_name or "", item.ref.id)


def resolve_name(
    cut: ReadCut, name: str, *, collections: Sequence[str] = NAME_COLLECTIONS
) -> NameResolution:
    """Resolve ``name`` among the documents of ``collections`` the cut's principal may
    read (``ValidationError`` for a name that is not one)."""
    if not isinstance(name, str) or not name.strip():
        raise ValidationError("a name must be a non-blank string", details={"field": "name"})
    query = _clean(name)
    check_identifier(query, "name")
    for collection in collections:
        check_identifier(collection, "collection")
    refs = _candidate_ids(cut, query, collections)
    matches: list[SymbolMatch] = []
    for ref, document in zip(refs, read_documents(cut, refs), strict=True):
        if document is None:
            continue  # not visible to this principal (or not live): never a candidate
        body = document.body
        qualified = body.get("qualified_name")
        path = body.get("path")
        tier = _tier(query, ref, qualified if isinstance(qualified, str) else None,
                     path if isinstance(path, str) else None)  # fmt: skip
        if tier is None:
            continue
        found_range = body.get("range")
        matches.append(
            SymbolMatch(
                ref,
                tier,
                body.get("kind"),
                qualified if isinstance(qualified, str) else None,
                path if isinstance(path, str) else None,
                tuple(found_range) if isinstance(found_range, list | tuple) else None,
            )
        )
    if not matches:
        return NameResolution(query, "not_found", None, (), 0)
    best = min(TIERS.index(item.tier) for item in matches)
    top = sorted((item for item in matches if TIERS.index(item.tier) == best), key=_sort_key)
    if len(top) == 1:
        return NameResolution(query, top[0].tier, top[0], (), 1)
    return NameResolution(query, "ambiguous", None, tuple(top[:MAX_CANDIDATES]), len(top))


def resolve_last_part(cut: ReadCut, name: str) -> NameResolution | None:
    """What a dotted ``name``'s last part alone resolves to (``take`` of
    ``JobSlots.take``): what to offer when nothing answers to the whole; None for a name
    with no owner part."""
    owner, dot, last = _clean(name).rpartition(".")
    if not dot or not owner.strip() or not last.strip():
        return None
    return resolve_name(cut, last)
