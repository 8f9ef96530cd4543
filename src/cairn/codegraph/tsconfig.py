"""Where a JavaScript or TypeScript import that is not relative points: the ``paths``
and ``baseUrl`` of the nearest ``tsconfig.json`` (or ``jsconfig.json``).

Most TypeScript applications import their own code through aliases their config
declares, ``import { Button } from "@/components/button"`` with ``"paths": {"@/*":
["./src/*"]}``; without reading the config every such import, and every call through
it, looked external. The rules are the compiler's (``moduleResolution`` of ``node``,
``node16`` and ``bundler`` alike, for these options):

- a file's config is the nearest ``tsconfig.json`` above it (``jsconfig.json`` where a
  folder has no ``tsconfig.json``); ``extends`` (a path, or a list of them, TypeScript
  5) merges the configs it names under the file's own options, later over earlier;
  only relative ``extends`` are followed (a package's config lives in ``node_modules``,
  which is not indexed);
- ``baseUrl`` is relative to the config that sets it; ``paths`` to ``baseUrl`` when
  one is set, else to the config that sets ``paths``;
- a specifier matches a ``paths`` pattern exactly, or one with a single ``*`` (the
  longest prefix before the ``*`` wins); each of its substitutions is tried in order,
  then ``baseUrl`` joined with the specifier.

Configs are read as JSON5 (``json5``): comments and trailing commas, as ``tsc`` takes.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from cairn.codegraph.limits import MAX_TSCONFIG_EXTENDS
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

TSCONFIG_LANGUAGE = "tsconfig"
"""The language of ``tsconfig.json``, ``tsconfig.*.json`` and ``jsconfig.json`` files."""

PROJECT_CONFIG_NAMES = ("tsconfig.json", "jsconfig.json")
"""The names a folder's own config has, in the order the nearest one is looked for
(``tsconfig.*.json`` files count only where an ``extends`` names them)."""

_EXTENDS = "extends"
_BASE_URL = "baseUrl"
_PATHS = "paths"
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

    def __bool__(self) -> bool:
        return bool(self._settings)

    def bases(self, directory: str, specifier: str) -> list[str]:
        """The repository paths (before extensions and ``index`` files are tried) that
        ``specifier`` may name from a file in ``directory``, in the order to try."""
        config = self._config_of(directory)
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
            options = _Options(base_url, options.paths, options.paths_base)
        if _PATHS in settings:
            declared = settings[_PATHS].items()
            paths = tuple((pattern, tuple(targets)) for pattern, targets in declared)
            options = _Options(options.base_url, paths, folder)
        self._options[config] = options
        return options


def _merged(under: _Options, over: _Options) -> _Options:
    """``over``'s options where it sets them, else ``under``'s."""
    base_url = over.base_url if over.base_url is not None else under.base_url
    if over.paths is not None:
        return _Options(base_url, over.paths, over.paths_base)
    return _Options(base_url, under.paths, under.paths_base)


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
    exact: Mapping[str, Sequence[str]] = {p: t for p, t in paths if _WILDCARD not in p}
    if specifier in exact:
        return list(exact[specifier])
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
