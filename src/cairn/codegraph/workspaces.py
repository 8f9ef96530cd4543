"""Where a JavaScript or TypeScript import of a package of the repository itself points:
the ``package.json`` files of a workspace (npm, Yarn, pnpm, Turborepo, Nx).

In a monorepo, ``import { Button } from "@acme/ui"`` names the folder whose
``package.json`` says ``"name": "@acme/ui"`` (the package manager links it into
``node_modules``). Without reading those files every such import, and every call
through it, looked external. The rules are Node's and TypeScript's, taken only as far
as they name a file that is in the repository (a build output such as ``dist/`` that
is not is never guessed at):

- the package's folder is the one whose ``package.json`` has that name (a name two
  folders claim names neither);
- the package itself (``@acme/ui``): ``exports`` (a path; the ``"."`` entry; or its
  conditions, each target tried in the order written), then ``types``
  (``typings``), ``module``, ``main``, then the folder's ``index`` file;
- a subpath (``@acme/ui/button``): its ``exports`` entry (``"./button"``, or a
  pattern with one ``*``, the longest prefix first), else the path in the folder;
- a ``#`` specifier (``#internal/db``, Node's subpath imports): the ``imports`` entry
  of the nearest ``package.json`` above the importing file, by the same rules (a
  target that is a package name, not a ``./`` path, is left external).

The JavaScript resolver then applies its extension and ``index`` rules to each path.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterable
from typing import Any

from cairn.codegraph.limits import PACKAGE_LANGUAGE
from cairn.codegraph.records import FileExtract
from cairn.codegraph.tsconfig import longest_match, repository_path

__all__ = ["PACKAGE_LANGUAGE", "WorkspacePackages", "extract_package"]

ENTRY_FIELDS = ("exports", "imports", "types", "typings", "module", "main")
"""The fields of a ``package.json`` that say which file a package (or one of its own
``#`` imports) is, kept as JSON."""

_FALLBACK_FIELDS = ("types", "typings", "module", "main")
_WILDCARD = "*"
_PRIVATE = "#"
"""How a package's own subpath imports begin (``package.json`` ``imports``)."""


def extract_package(path: str, data: bytes) -> FileExtract:
    """A ``package.json``'s name (``package``) and entry fields (their JSON text in
    ``constants``); ``ValueError`` when the file is no JSON object."""
    parsed = json.loads(data.decode("utf-8-sig"))
    if not isinstance(parsed, dict):
        raise ValueError(f"a package.json is a JSON object, not {type(parsed).__name__}")
    name = parsed.get("name")
    entries = tuple((field, json.dumps(parsed[field])) for field in ENTRY_FIELDS if field in parsed)
    return FileExtract(
        path, PACKAGE_LANGUAGE, package=name if isinstance(name, str) else None, constants=entries
    )


class WorkspacePackages:
    """The repository's own packages by name; answers which paths a bare specifier of
    one of them may name."""

    def __init__(self, extracts: Iterable[FileExtract]) -> None:
        packages = [e for e in extracts if e.language == PACKAGE_LANGUAGE]
        self._scopes: dict[str, dict[str, Any]] = {
            posixpath.dirname(e.path): {key: json.loads(value) for key, value in e.constants}
            for e in packages
        }
        """Each ``package.json``'s entry fields, by its folder."""
        claims: dict[str, list[str]] = {}
        for extract in packages:
            if extract.package:
                claims.setdefault(extract.package, []).append(posixpath.dirname(extract.path))
        self._packages = {name: held[0] for name, held in claims.items() if len(held) == 1}
        """The folder of each package name only one ``package.json`` claims."""

    def bases(self, path: str, specifier: str) -> list[str]:
        """The repository paths (before extensions and ``index`` files are tried) that
        ``specifier`` names from the file at ``path`` when it is one of the
        repository's packages or a ``#`` import of the file's own package, in order."""
        if specifier.startswith(_PRIVATE):
            return self._imported(path, specifier)
        name, subpath = _split(specifier)
        folder = self._packages.get(name)
        if folder is None:
            return []
        entries = self._scopes[folder]
        targets = _exported(entries.get("exports"), subpath)
        if subpath == ".":
            targets += [t for f in _FALLBACK_FIELDS if isinstance(t := entries.get(f), str)]
        targets.append(subpath)  # the folder itself (its index file), or the path in it
        bases: list[str] = []
        for target in targets:
            base = repository_path(folder, target)  # None: out of the repository
            if base is not None and base not in bases:
                bases.append(base)
        return bases

    def _imported(self, path: str, specifier: str) -> list[str]:
        """What a ``#`` specifier names through the ``imports`` of the nearest
        ``package.json`` above ``path`` (its targets that are ``./`` paths)."""
        folder = posixpath.dirname(path)
        while folder not in self._scopes:
            if not folder:
                return []
            folder = posixpath.dirname(folder)
        imports = self._scopes[folder].get("imports")
        if not isinstance(imports, dict):
            return []
        targets = _mapped(imports, specifier)
        relative = [target for target in targets if target.startswith("./")]
        return [base for t in relative if (base := repository_path(folder, t)) is not None]


def _split(specifier: str) -> tuple[str, str]:
    """``@scope/name/sub/path`` -> (``@scope/name``, ``./sub/path``); ``.`` for none."""
    parts = specifier.split("/")
    count = 2 if specifier.startswith("@") else 1
    name = "/".join(parts[:count])
    rest = "/".join(parts[count:])
    return name, f"./{rest}" if rest else "."


def _exported(exports: Any, subpath: str) -> list[str]:
    """The targets ``exports`` gives ``subpath``, in the order to try."""
    if exports is None:
        return []
    if isinstance(exports, (str, list)) or (
        isinstance(exports, dict) and not any(key.startswith(".") for key in exports)
    ):
        return _targets(exports) if subpath == "." else []  # the package itself only
    return _mapped(exports, subpath) if isinstance(exports, dict) else []


def _mapped(table: dict[str, Any], key: str) -> list[str]:
    """The targets ``exports`` or ``imports`` give ``key``: its own entry, else the
    one-``*`` pattern with the longest prefix, every ``*`` of its targets filled in."""
    if key in table:
        return _targets(table[key])
    found = longest_match(table.items(), key)
    if found is None:
        return []
    matched, value = found
    return [target.replace(_WILDCARD, matched) for target in _targets(value)]


def _targets(value: Any) -> list[str]:
    """Every path a target (a path, a list of fallbacks, or conditions) names, in the
    order written."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [target for item in value for target in _targets(item)]
    if isinstance(value, dict):
        return [target for item in value.values() for target in _targets(item)]
    return []
