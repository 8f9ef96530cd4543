"""Finding a project's database file the way git finds its repository (design §4).

Every command that reads a database takes ``--db PATH``; without it, the database is
``.cairn/cairn.db`` in the current directory or the nearest parent that has one.
"""

from __future__ import annotations

import os
from pathlib import Path

from cairn.errors import NotFoundError

__all__ = [
    "DATABASE_DIRECTORY",
    "DATABASE_FILE",
    "database_path",
    "find_database",
    "resolve_database",
]

DATABASE_DIRECTORY = ".cairn"
"""The per-project folder holding ``graph.cairn`` and the database."""

DATABASE_FILE = "cairn.db"
"""The database file inside ``DATABASE_DIRECTORY``."""


def database_path(root: str | os.PathLike[str]) -> Path:
    """Where the database of the project at ``root`` lives (whether or not it exists)."""
    return Path(root) / DATABASE_DIRECTORY / DATABASE_FILE


def find_database(start: str | os.PathLike[str] | None = None) -> Path:
    """The nearest ``.cairn/cairn.db`` at or above ``start`` (default: the working directory).

    ``NotFoundError`` when neither ``start`` nor any parent holds one.
    """
    here = Path(start if start is not None else Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = database_path(folder)
        if candidate.is_file():
            return candidate
    raise NotFoundError(
        f"no {DATABASE_DIRECTORY}/{DATABASE_FILE} in {str(here)!r} or its parents; "
        "pass --db PATH or run `cairn index` first",
        details={"start": str(here)},
    )


def resolve_database(
    db: str | os.PathLike[str] | None, *, artifact: str | os.PathLike[str] | None = None
) -> Path:
    """The database a command uses: ``--db`` if given, else the nearest one (``find_database``).

    With ``artifact`` (``cairn load``) and no database found, an artifact that lives in
    a ``.cairn`` folder gets the database next to it (created on open).
    """
    if db is not None:
        return Path(db)
    try:
        return find_database()
    except NotFoundError:
        if artifact is not None:
            folder = Path(artifact).resolve().parent
            if folder.name == DATABASE_DIRECTORY:
                return folder / DATABASE_FILE
        raise
