"""Where a JavaScript or TypeScript import that is not relative points: the ``paths``
and ``baseUrl`` of the nearest ``tsconfig.json`` (or ``jsconfig.json``).

Most TypeScript applications import their own code through aliases their config
declares, ``import { Button } from "@/components/button"`` with ``"paths": {"@/*":
["./src/*"]}``; without reading the config every such import, and every call through
it, looked external. The rules are the compiler's (``moduleResolution`` of ``node``,
``node16`` and ``bundler`` alike, for these options):

- a file's config is the nearest ``tsconfig.json`` above it (``jsconfig.json`` where a
  folder has no ``tsconfig.json``); when that config does not include the file and
  has ``references`` (a "solution" config, as Vite's templates write), the first
  referenced config whose ``files``, ``include`` and ``exclude`` take the file is
  used instead, as the editor's language service picks it; ``extends`` (a path, or a
  list of them, TypeScript 5) merges the configs it names under the file's own
  options, later over earlier; only relative ``extends`` are followed (a package's
  config lives in ``node_modules``, which is not indexed);
- ``baseUrl`` is relative to the config that sets it; ``paths`` to ``baseUrl`` when
  one is set, else to the config that sets ``paths``;
- a specifier matches a ``paths`` pattern exactly, or one with a single ``*`` (the
  longest prefix before the ``*`` wins); each of its substitutions is tried in order,
  then ``baseUrl`` joined with the specifier.

Configs are read as JSON5 (``json5``): comments and trailing commas, as ``tsc`` takes.
"""

from __future__ import annotations

import functools
import json
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from cairn.codegraph.limits import MAX_TSCONFIG_EXTENDS, TSCONFIG_LANGUAGE
from cairn.codegraph.records import FileExtract

__all__ = [
    "PROJECT_CONFIG_NAMES",
    "TSCONFIG_LANGUAGE",
    "ProjectConfigs",
    "extract_tsconfig",
    "is_tsconfig_name",
    "longest_match",
    "repository_path",
]

PROJECT_CONFIG_NAMES = ("tsconfig.json", "jsconfig.json")
"""The names a folder's own config has, in the order the nearest one is looked for
(``tsconfig.*.json`` files count only where an ``extends`` names them)."""

_EXTENDS = "extends"
_BASE_URL = "baseUrl"
_PATHS = "paths"
_FILES = "files"
_INCLUDE = "include"
_EXCLUDE = "exclude"
_REFERENCES = "references"
_FILE_LISTS = (_FILES, _INCLUDE, _EXCLUDE)
"""The lists of paths or patterns that say which files a config takes."""
_EVERYTHING = "**/*"
"""What a config that names neither ``files`` nor ``include`` takes."""
MAX_CACHED_PATTERNS = 1_024
"""``include``/``exclude`` patterns kept compiled."""
_WILDCARD = "*"
_V = TypeVar("_V")


def is_tsconfig_name(name: str) -> bool:
    """Whether a file called ``name`` is a TypeScript or JavaScript project config."""
    return name in PROJECT_CONFIG_NAMES or (name.startswith("tsconfig.") and name.endswith(".json"))


def extract_tsconfig(path: str, data: bytes) -> FileExtract:
    """The module-resolution settings of one config (``extends``, ``baseUrl``,
    ``paths``), each kept as its JSON text in ``constants``; ``ValueError`` when the
    file is no JSON5 object."""
    import json5  # only where a repository has a config: ~12 ms to import

    parsed = json5.loads(data.decode("utf-8-sig"))
    if not isinstance(parsed, dict):
        raise ValueError(f"a project config is a JSON object, not {type(parsed).__name__}")
    settings: list[tuple[str, str]] = []
    extends = parsed.get(_EXTENDS)
    if isinstance(extends, str):
        extends = [extends]
    if isinstance(extends, list) and all(isinstance(item, str) for item in extends):
        settings.append((_EXTENDS, json.dumps(extends)))
    for key in _FILE_LISTS:
        listed = parsed.get(key)
        if isinstance(listed, list) and all(isinstance(item, str) for item in listed):
            settings.append((key, json.dumps(listed)))
    references = parsed.get(_REFERENCES)
    if isinstance(references, list):
        named = [
            r["path"] for r in references if isinstance(r, dict) and isinstance(r.get("path"), str)
        ]
        settings.append((_REFERENCES, json.dumps(named)))
    options = parsed.get("compilerOptions")
    if isinstance(options, dict):
        base_url = options.get(_BASE_URL)
        if isinstance(base_url, str):
            settings.append((_BASE_URL, json.dumps(base_url)))
        paths = options.get(_PATHS)
        if isinstance(paths, dict):
            kept = {
                pattern: targets
                for pattern, targets in paths.items()
                if pattern.count(_WILDCARD) <= 1
                and isinstance(targets, list)
                and all(isinstance(target, str) for target in targets)
            }
            settings.append((_PATHS, json.dumps(kept)))
    return FileExtract(path, TSCONFIG_LANGUAGE, constants=tuple(settings))


@dataclass(frozen=True, slots=True)
class _Options:
    """What a config chain resolves a specifier by: ``baseUrl`` and where ``paths``
    are relative to, both repository paths."""

    base_url: str | None = None
    paths: tuple[tuple[str, tuple[str, ...]], ...] | None = None
    paths_base: str | None = None
    lists: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """``files``, ``include``, ``exclude`` as repository paths and patterns, where set."""


class ProjectConfigs:
    """The project configs of a repository, by path; answers which paths a specifier
    that is not relative may name from a folder."""

    def __init__(self, extracts: Iterable[FileExtract]) -> None:
        self._settings: dict[str, dict[str, Any]] = {
            extract.path: {key: json.loads(value) for key, value in extract.constants}
            for extract in extracts
            if extract.language == TSCONFIG_LANGUAGE
        }
        self._options: dict[str, _Options] = {}
        self._nearest: dict[str, str | None] = {}
        self._projects: dict[str, str | None] = {}

    def bases(self, path: str, specifier: str) -> list[str]:
        """The repository paths (before extensions and ``index`` files are tried) that
        ``specifier`` may name from the file at ``path``, in the order to try."""
        config = self._project_of(path)
        if config is None:
            return []
        options = self._options_of(config, 0)
        joined: list[str | None] = []
        if options.paths is not None:
            root = options.base_url if options.base_url is not None else options.paths_base
            assert root is not None  # paths_base is set with paths
            targets = _substitutions(options.paths, specifier)
            joined += [repository_path(root, target) for target in targets]
        if options.base_url is not None:
            joined.append(repository_path(options.base_url, specifier))
        return [base for base in joined if base is not None]

    def _project_of(self, path: str) -> str | None:
        """The config of the file at ``path``: the nearest one, or the first config it
        references that takes the file where the nearest one does not."""
        if path not in self._projects:
            self._projects[path] = self._choose_project(path)
        return self._projects[path]

    def _choose_project(self, path: str) -> str | None:
        config = self._config_of(posixpath.dirname(path))
        if config is None:
            return None
        references = self._settings[config].get(_REFERENCES, ())
        if not references or self._takes(config, path):
            return config
        folder = posixpath.dirname(config)
        for reference in references:
            target = repository_path(folder, reference)
            if target is not None and not target.endswith(".json"):
                target = posixpath.join(target, PROJECT_CONFIG_NAMES[0])
            if target in self._settings and self._takes(target, path):
                return target
        return config

    def _takes(self, config: str, path: str) -> bool:
        """Whether ``config`` takes the file at ``path`` (``files``, or ``include`` and
        not ``exclude``; everything under its folder when it names neither list)."""
        lists = self._options_of(config, 0).lists
        if path in lists.get(_FILES, ()):
            return True
        if _FILES in lists or _INCLUDE in lists:
            include = lists.get(_INCLUDE, ())
        else:
            include = (posixpath.join(posixpath.dirname(config), _EVERYTHING),)
        return any(_matches(p, path) for p in include) and not any(
            _matches(p, path) for p in lists.get(_EXCLUDE, ())
        )

    def _config_of(self, directory: str) -> str | None:
        """The nearest project config at or above ``directory``."""
        if directory in self._nearest:
            return self._nearest[directory]
        found: str | None = None
        for name in PROJECT_CONFIG_NAMES:
            candidate = posixpath.join(directory, name) if directory else name
            if candidate in self._settings:
                found = candidate
                break
        if found is None and directory:
            found = self._config_of(posixpath.dirname(directory))
        self._nearest[directory] = found
        return found

    def _options_of(self, config: str, depth: int) -> _Options:
        """The options of ``config`` over those of the configs it extends."""
        known = self._options.get(config)
        if known is not None:
            return known
        settings = self._settings.get(config)
        if settings is None or depth > MAX_TSCONFIG_EXTENDS:
            return _Options()  # a config not in the index, or an ``extends`` cycle
        folder = posixpath.dirname(config)
        options = _Options()
        for parent in settings.get(_EXTENDS, ()):
            target = _extended(folder, parent)
            if target is not None:
                options = _merged(options, self._options_of(target, depth + 1))
        if _BASE_URL in settings:
            base_url = repository_path(folder, settings[_BASE_URL])
            options = replace(options, base_url=base_url)
        if _PATHS in settings:
            declared = settings[_PATHS].items()
            paths = tuple((pattern, tuple(targets)) for pattern, targets in declared)
            options = replace(options, paths=paths, paths_base=folder)
        own = {key: _under(folder, settings[key]) for key in _FILE_LISTS if key in settings}
        if own:  # each list a config sets replaces the one it extends
            options = replace(options, lists={**options.lists, **own})
        self._options[config] = options
        return options


def _under(folder: str, listed: Iterable[str]) -> tuple[str, ...]:
    """The paths or patterns of a config's list as repository paths (those that leave
    the repository dropped)."""
    return tuple(path for item in listed if (path := repository_path(folder, item)) is not None)


def _merged(under: _Options, over: _Options) -> _Options:
    """``over``'s options where it sets them, else ``under``'s."""
    base_url = over.base_url if over.base_url is not None else under.base_url
    paths = over if over.paths is not None else under
    return _Options(base_url, paths.paths, paths.paths_base, {**under.lists, **over.lists})


@functools.lru_cache(maxsize=MAX_CACHED_PATTERNS)
def _pattern(pattern: str) -> re.Pattern[str]:
    """A config's ``include``/``exclude`` pattern as a regular expression over
    repository paths: ``*`` and ``?`` within one folder, ``**/`` any folders; a last
    part with no wildcard and no ``.`` is a folder, taking every file under it."""
    parts = pattern.split("/") if pattern else []
    pieces: list[str] = []
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        if part == "**":
            pieces.append("[^/]+(?:/[^/]+)*" if last else "(?:[^/]+/)*")
            continue
        piece = "".join(
            "[^/]*" if char == "*" else "[^/]" if char == "?" else re.escape(char) for char in part
        )
        pieces.append(piece if last else piece + "/")
    folder = not parts or ("*" not in parts[-1] and "?" not in parts[-1] and "." not in parts[-1])
    if folder:
        pieces.append("/.+" if parts else ".+")
    return re.compile("".join(pieces) + r"\Z")


def _matches(pattern: str, path: str) -> bool:
    return _pattern(pattern).match(path) is not None


def _extended(folder: str, parent: str) -> str | None:
    """The repository path of a relative ``extends`` target, or None for a package's."""
    if not parent.startswith(("./", "../")):
        return None
    target = repository_path(folder, parent)
    if target is None:
        return None
    return target if target.endswith(".json") else f"{target}.json"


def _substitutions(paths: Sequence[tuple[str, Sequence[str]]], specifier: str) -> list[str]:
    """The targets of the pattern ``specifier`` matches, ``*`` filled in; the exact
    pattern first, else the wildcard one with the longest prefix."""
    for pattern, targets in paths:
        if pattern == specifier and _WILDCARD not in pattern:
            return list(targets)
    found = longest_match(paths, specifier)
    if found is None:
        return []
    matched, targets = found
    return [target.replace(_WILDCARD, matched, 1) for target in targets]


def longest_match(patterns: Iterable[tuple[str, _V]], text: str) -> tuple[str, _V] | None:
    """What the ``*`` of the one-wildcard pattern matching ``text`` with the longest
    prefix before its ``*`` stands for, and that pattern's value (the first such
    pattern of equals); None when none matches (how ``tsc`` picks among ``paths`` and
    Node among ``exports`` subpath patterns)."""
    best: tuple[int, str, _V] | None = None
    for pattern, value in patterns:
        if pattern.count(_WILDCARD) != 1:
            continue
        prefix, _, suffix = pattern.partition(_WILDCARD)
        if (
            len(text) >= len(prefix) + len(suffix)
            and text.startswith(prefix)
            and text.endswith(suffix)
            and (best is None or len(prefix) > best[0])
        ):
            best = (len(prefix), text[len(prefix) : len(text) - len(suffix)], value)
    return None if best is None else (best[1], best[2])


def repository_path(folder: str, relative: str) -> str | None:
    """``relative`` from ``folder`` as a repository path, or None when it leaves the
    repository (or is absolute)."""
    if relative.startswith("/"):
        return None
    joined = posixpath.normpath(posixpath.join(folder, relative))
    if joined == ".":
        return ""
    return None if joined == ".." or joined.startswith("../") else joined
