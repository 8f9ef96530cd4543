"""``WatchBeside``: a ``cairn watch`` run on a thread of a serving process.

``cairn mcp --watch PATH`` and ``cairn serve --watch PATH`` serve ``PATH/.cairn/cairn.db``
and keep it fresh in the same process: an agent's edit is searchable through the server
a moment after it is saved, with no second command to start and stop. The watch is
``watch_repository`` itself (the same rounds, handoff socket and records); this module
only runs it beside a server: on a daemon thread, its records and the error that ends it
handed to the caller (a server writes them as log lines on stderr), stopped when the
server stops. An error that ends the watch (another ``cairn watch`` already keeps the
folder, a first index that failed) never stops the server: it goes on serving what the
database holds, and says why it is no longer kept fresh.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from cairn.codegraph.console import index_folder
from cairn.errors import CairnError, ValidationError, os_error
from cairn.store.locate import DATABASE_FILE

__all__ = ["INTERRUPT_GRACE_S", "STOP_GRACE_S", "WatchBeside"]

STOP_GRACE_S = 30.0
"""How long a stopping server waits for the watch's running round to end. A round is
atomic where it writes (the load commits as one command, graph.cairn is swapped in
whole), so a process that ends during one loses nothing; the wait only spares the next
start from redoing it. A first index of a large tree can take longer than this."""

INTERRUPT_GRACE_S = 2.0
"""How long a server stopped by Ctrl-C waits for its watch: enough for an idle watch to
see the stop (it looks every 20 ms) and stamp its last round, not for a round to end."""

EndReport = Callable[[BaseException], None]
"""Told the error that ended the watch early (the server goes on without it)."""


class WatchBeside:
    """A ``watch_repository`` of ``path`` on a daemon thread, for a server of its database.

    ``on_round`` gets every round record (round 0 is the first, full index) and
    ``on_end`` the error that ended the watch before it was stopped; ``options`` are
    ``watch_repository``'s (``workers``, ``excludes``, ``embedder``, ...). Use as a
    context manager, or ``start`` and ``stop``.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        on_round: Callable[[Mapping[str, Any]], None],
        on_end: EndReport,
        **options: Any,
    ) -> None:
        root = Path(path).resolve()
        if not root.is_dir():
            raise ValidationError(f"--watch {path}: not a directory", details={"path": str(path)})
        self.root = root
        self.database = index_folder(root, options.get("out")) / DATABASE_FILE
        self._on_round = on_round
        self._on_end = on_end
        self._options = options
        self._stop = threading.Event()
        self._first = threading.Event()  # set by round 0's record, or when the watch ends
        self.error: BaseException | None = None  # a CairnError, unless a bug
        self._thread = threading.Thread(target=self._run, name="cairn-watch", daemon=True)

    def start(self) -> WatchBeside:
        """Start the watch (its first index runs on the thread)."""
        self._thread.start()
        return self

    def _run(self) -> None:
        from cairn.codegraph.watch import watch_repository

        try:
            watch_repository(self.root, on_round=self._round, stop=self._stop, **self._options)
        except OSError as exc:  # the folder unreadable, inotify out of watches, ...
            self._ended(os_error(exc, f"watching {self.root}", self.root))
        except CairnError as exc:
            self._ended(exc)
        except BaseException as exc:  # a bug: said, never silently swallowed
            self._ended(exc)
            raise
        finally:
            self._first.set()

    def _ended(self, error: BaseException) -> None:
        self.error = error
        self._on_end(error)

    def _round(self, record: Mapping[str, Any]) -> None:
        try:
            self._on_round(record)
        finally:
            if record.get("round") == 0:
                self._first.set()

    def indexing(self) -> str | None:
        """While the first index runs, a sentence that says so (for a request that finds
        no database yet); else None."""
        if self._first.is_set() or not self._thread.is_alive():
            return None
        return (
            f"the first index of {self.root} is still running (--watch): ask again once it is done"
        )

    def wait_first(self, timeout: float | None = None) -> bool:
        """Wait for the first index (or the watch's end); whether it is done."""
        return self._first.wait(timeout)

    def stop(self, grace: float | None = None) -> bool:
        """Ask the watch to stop after the round it is running; wait up to ``grace``
        seconds (``STOP_GRACE_S`` unless given). Whether it stopped: if not, a round is
        still running, its pool's workers included, and the process must end without
        joining them (``cairn.orphans.leave_at_once``), or its exit waits for them while
        the round waits for the exit."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(STOP_GRACE_S if grace is None else grace)
        return not self._thread.is_alive()

    def __enter__(self) -> WatchBeside:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
