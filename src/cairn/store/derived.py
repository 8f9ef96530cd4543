"""``DerivedState``: how the store asks a layer above to persist what it derives.

The store keeps the truth and knows nothing of the structures built from it (the
index's columns live above it, in ``cairn.index``). A bulk load is the one place that
should leave derived data persisted beside the truth, so the next cold open maps it
instead of rebuilding it; ``load_semantic_graph`` asks the handle it was given through
this protocol, and a handle without derived state (``cairn.store.open``) is skipped.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["DerivedState"]


@runtime_checkable
class DerivedState(Protocol):
    """A database handle that derives state from the truth and can persist it in the file."""

    def derived_behind(self) -> bool:
        """Whether the derived state persisted in the file is older than the position."""
        ...

    def checkpoint_derived(self) -> int:
        """Persist the derived state at the current position and return that position."""
        ...
