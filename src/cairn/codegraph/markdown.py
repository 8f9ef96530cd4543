"""The Markdown adapter: heading sections, links to files and sections, symbol mentions.

Local extraction (``extract_markdown``) finds ATX and setext headings outside fenced
code, inline and reference-style links, and inline code spans, each with its 1-based
range and the section it sits in. The global phase (``MarkdownResolver``) names sections
by their heading path (``section:docs/guide.md#Install/Quick start``), resolves relative
links against the files and sections that exist, and turns code spans that name exactly
one known symbol into ``mentions`` facts. Ambiguous names are skipped, never guessed.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import unquote

from cairn.codegraph.emit import GraphEmitter, file_id, partial_marks, symbol_id
from cairn.codegraph.records import FileExtract, LinkSite, MentionSite, Range, SectionRecord
from cairn.graph import EndpointIdentity, IdentityReason

__all__ = ["ADAPTER_ID", "STRATEGY", "MarkdownResolver", "extract_markdown", "slugify"]

ADAPTER_ID = "cairn.markdown"
STRATEGY = "markdown"
LANGUAGE = "markdown"
COLLISION_SEPARATOR = "~"
MENTION_KINDS = frozenset({"class", "function", "method", "variable", "route"})

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(`+)(?!`)(.+?)(?<!`)\1(?!`)")
_INLINE_LINK = re.compile(
    r"(?<!!)\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^()\s<>]+)>?(?:\s+[\"'(][^)]*)?\)"
)
_REF_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_SLUG_DROP = re.compile(r"[^\w\- ]", re.UNICODE)
_IDENTIFIER_PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$")
_ROUTE_TEXT = re.compile(r"^[A-Z]+ /\S*$")


def slugify(title: str) -> str:
    """GitHub-style anchor of a heading: lower case, punctuation dropped, spaces -> ``-``."""
    return _SLUG_DROP.sub("", title.strip().lower()).replace(" ", "-")


def _clean_title(raw: str) -> str:
    text = re.sub(r"`([^`]*)`", r"\1", raw)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return " ".join(text.split())


class _Parser:
    def __init__(self, path: str, lines: list[str]) -> None:
        self.path = path
        self.lines = lines
        self.headings: list[tuple[int, int, str]] = []  # (line, level, title)
        self.links: list[tuple[int, str, Range]] = []
        self.spans: list[tuple[int, str, Range]] = []

    def run(self) -> None:
        fence: str | None = None
        start = self._front_matter_end()
        previous_text: int | None = None
        for index in range(start, len(self.lines)):
            line = self.lines[index]
            number = index + 1
            fence_match = _FENCE.match(line)
            if fence is not None:
                closing = fence_match.group(1) if fence_match else ""
                if closing[:1] == fence[0] and len(closing) >= len(fence):
                    fence = None
                continue
            if fence_match:
                fence = fence_match.group(1)
                previous_text = None
                continue
            atx = _ATX.match(line)
            if atx:
                self.headings.append((number, len(atx.group(1)), _clean_title(atx.group(2) or "")))
                previous_text = None
                continue
            setext = _SETEXT.match(line)
            if setext and previous_text is not None:
                level = 1 if setext.group(1)[0] == "=" else 2
                title = _clean_title(self.lines[previous_text - 1])
                self.headings.append((previous_text, level, title))
                self._drop_inline(previous_text)
                previous_text = None
                continue
            previous_text = number if line.strip() and not line.startswith("    ") else None
            self._inline(number, line)

    def _front_matter_end(self) -> int:
        if self.lines and self.lines[0].strip() == "---":
            for index in range(1, len(self.lines)):
                if self.lines[index].strip() in ("---", "..."):
                    return index + 1
        return 0

    def _drop_inline(self, number: int) -> None:
        self.links = [link for link in self.links if link[0] != number]
        self.spans = [span for span in self.spans if span[0] != number]

    def _inline(self, number: int, line: str) -> None:
        masked = list(line)
        for match in _CODE_SPAN.finditer(line):
            text = match.group(2).strip()
            rng = (number, match.start() + 1, number, match.end())
            self.spans.append((number, text, rng))
            for i in range(match.start(), match.end()):
                masked[i] = " "
        plain = "".join(masked)
        for match in _INLINE_LINK.finditer(plain):
            rng = (number, match.start() + 1, number, match.end())
            self.links.append((number, match.group(1), rng))
        ref = _REF_DEF.match(plain)
        if ref:
            self.links.append((number, ref.group(1), (number, 1, number, max(1, len(line)))))


def _decoded(data: bytes) -> tuple[str, tuple[str, int] | None]:
    """A document's text, and what stopped it decoding whole: bytes that are not UTF-8
    (a Latin-1 or cp1252 README) become U+FFFD, and the error with the line of the first
    one is returned, so the document is indexed partially and says so, never dropped."""
    try:
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        return data.decode("utf-8-sig", "replace"), (f"UnicodeDecodeError: {exc.reason}", line)


def extract_markdown(path: str, data: bytes) -> FileExtract:
    """Local extraction of one Markdown document; bytes that are not UTF-8 make it a
    partial extract (``parse_error``) of the text with them replaced."""
    text, error = _decoded(data)
    lines = text.splitlines()
    parser = _Parser(path, lines)
    parser.run()
    sections: list[SectionRecord] = []
    stack: list[tuple[int, str]] = []
    starts = [line for line, _, _ in parser.headings]
    for position, (line, level, title) in enumerate(parser.headings):
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title or "(untitled)"))
        end_line = len(lines)
        for later_line, later_level, _ in parser.headings[position + 1 :]:
            if later_level <= level:
                end_line = later_line - 1
                break
        end_line = max(end_line, line)
        end_col = max(1, len(lines[end_line - 1])) if lines else 1
        sections.append(
            SectionRecord(
                tuple(t for _, t in stack),
                title,
                level,
                slugify(title),
                (line, 1, end_line, end_col),
            )
        )

    def section_of(line: int) -> int:
        found = -1
        for index, start in enumerate(starts):
            if start <= line:
                found = index
            else:
                break
        return found

    links = tuple(LinkSite(section_of(n), target, rng) for n, target, rng in parser.links)
    mentions = tuple(MentionSite(section_of(n), text, rng) for n, text, rng in parser.spans)
    return FileExtract(
        path=path,
        language=LANGUAGE,
        sections=tuple(sections),
        links=links,
        mentions=mentions,
        parse_error=error,
    )


def _escape(title: str) -> str:
    return title.replace("%", "%25").replace("/", "%2F")


class MarkdownResolver:
    """Emits section nodes, containment, ``references`` and ``mentions`` facts."""

    def __init__(
        self, extracts: Sequence[FileExtract], emitter: GraphEmitter, paths: Sequence[str]
    ) -> None:
        self.extracts = sorted(extracts, key=lambda e: e.path)
        self.emit = emitter
        self.paths = set(paths)
        self.section_ids: dict[str, list[str]] = {}
        self.slugs: dict[str, dict[str, str]] = {}
        self.unresolved_links = 0

    def run(self) -> None:
        """Emit everything for every document, in path order."""
        for extract in self.extracts:
            self._sections(extract)
        texts = [_mention_texts(extract) for extract in self.extracts]
        index = self._mention_index({text for each in texts for text in each if text is not None})
        for extract, named in zip(self.extracts, texts, strict=True):
            self._links(extract)
            self._mentions(extract, named, index)

    def _fact(
        self,
        source: str,
        target: str,
        relation: str,
        disc: dict[str, Any] | None,
        path: str,
        rng: Range,
        site: str,
        strategy: str = STRATEGY,
    ) -> None:
        self.emit.fact(
            source,
            target,
            relation,
            disc,
            adapter=ADAPTER_ID,
            strategy=strategy,
            path=path,
            rng=rng,
            site_kind=site,
        )

    def _sections(self, extract: FileExtract) -> None:
        path = extract.path
        partial, section_partial = partial_marks(extract.parse_error)
        document = self.emit.node(
            file_id(path),
            "file",
            {
                "name": path.rsplit("/", 1)[-1],
                "path": path,
                "language": LANGUAGE,
                "partial_parse": partial,
            },
        )
        keys = ["/".join(_escape(t) for t in s.heading_path) for s in extract.sections]
        totals: dict[str, int] = {}
        for key in keys:
            totals[key] = totals.get(key, 0) + 1
        seen: dict[str, int] = {}
        ids: list[str] = []
        slugs: dict[str, str] = {}
        slug_counts: dict[str, int] = {}
        parents: list[tuple[int, str]] = []
        for section, key in zip(extract.sections, keys, strict=True):
            ordinal = seen.get(key, 0) + 1
            seen[key] = ordinal
            identity = EndpointIdentity.stable()
            node_key = key
            if totals[key] > 1:
                identity = EndpointIdentity.context_bound(IdentityReason.COLLISION_SUFFIX_DERIVED)
                if ordinal > 1:
                    node_key = f"{key}{COLLISION_SEPARATOR}{ordinal}"
            node_id = symbol_id("section", path, node_key)
            self.emit.node(
                node_id,
                "section",
                {
                    "name": section.title,
                    "qualified_name": " / ".join(section.heading_path),
                    "path": path,
                    "range": list(section.range),
                    "language": LANGUAGE,
                    "level": section.level,
                    "partial_parse": section_partial,
                },
                identity=identity,
            )
            ids.append(node_id)
            count = slug_counts.get(section.slug, 0)
            slug_counts[section.slug] = count + 1
            slugs.setdefault(section.slug if count == 0 else f"{section.slug}-{count}", node_id)
            while parents and parents[-1][0] >= section.level:
                parents.pop()
            parent = parents[-1][1] if parents else document
            parents.append((section.level, node_id))
            self._fact(parent, node_id, "contains", None, path, section.range, "definition")
        self.section_ids[path] = ids
        self.slugs[path] = slugs

    def _source(self, extract: FileExtract, section: int) -> str:
        if section < 0:
            return file_id(extract.path)
        return self.section_ids[extract.path][section]

    def _links(self, extract: FileExtract) -> None:
        directory = posixpath.dirname(extract.path)
        for link in extract.links:
            resolved = self._link_target(directory, extract.path, link.target)
            if resolved is None:
                self.unresolved_links += 1
                continue
            target, kind = resolved
            source = self._source(extract, link.section)
            if source == target:
                continue
            disc = {"link_kind": kind}
            self._fact(source, target, "references", disc, extract.path, link.range, "link")

    def _link_target(self, directory: str, path: str, raw: str) -> tuple[str, str] | None:
        if _SCHEME.match(raw) or raw.startswith("//"):
            return None
        target, _, anchor = unquote(raw).partition("#")
        target = target.split("?", 1)[0]
        if not target:
            node = self.slugs.get(path, {}).get(anchor)
            return (node, "section") if node else None
        joined = target.lstrip("/") if target.startswith("/") else posixpath.join(directory, target)
        normal = posixpath.normpath(joined)
        if normal.startswith("..") or normal in (".", ""):
            return None
        if not self.emit.graph.has_node(file_id(normal)):
            return None
        if anchor:
            node = self.slugs.get(normal, {}).get(anchor)
            if node:
                return node, "file_section"
        return file_id(normal), "file"

    def _mention_index(self, wanted: set[str]) -> dict[str, dict[str, set[str]]]:
        """The nodes each of the ``wanted`` mention texts names, by qualified name, local
        ID and name (only those texts: a repository's few code spans need not index its
        every symbol, and most have none)."""
        index: dict[str, dict[str, set[str]]] = {"qualified": {}, "local": {}, "name": {}}
        if not wanted:
            return index
        for node in self.emit.graph.nodes():
            if node.kind not in MENTION_KINDS:
                continue
            attrs = node.attributes
            qualified = attrs.get("qualified_name")
            if isinstance(qualified, str) and qualified in wanted:
                index["qualified"].setdefault(qualified, set()).add(node.id)
            local = node.id.split("#", 1)[-1]
            if local in wanted:
                index["local"].setdefault(local, set()).add(node.id)
            name = attrs.get("name")
            if isinstance(name, str) and name in wanted:
                index["name"].setdefault(name, set()).add(node.id)
        return index

    def _mentions(
        self,
        extract: FileExtract,
        texts: Sequence[str | None],
        index: dict[str, dict[str, set[str]]],
    ) -> None:
        """A ``mentions`` fact for each mention whose text (``texts``, as
        ``_mention_texts`` gives them) names one symbol."""
        for mention, text in zip(extract.mentions, texts, strict=True):
            if text is None:
                continue
            target = None
            for level in ("qualified", "local", "name"):
                found = index[level].get(text)
                if found:
                    if len(found) == 1:
                        target = next(iter(found))
                    break
            if target is None:
                continue
            source = self._source(extract, mention.section)
            self._fact(
                source,
                target,
                "mentions",
                None,
                extract.path,
                mention.range,
                "mention",
                "code_span",
            )


def _mention_texts(extract: FileExtract) -> list[str | None]:
    """Each mention's text as a symbol could be named by it (``()`` dropped), or None
    where it cannot name one (not an identifier path or route)."""
    texts: list[str | None] = []
    for mention in extract.mentions:
        text = mention.text.removesuffix("()")
        named = _IDENTIFIER_PATH.match(text) or _ROUTE_TEXT.match(text)
        texts.append(text if named else None)
    return texts
