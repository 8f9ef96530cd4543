"""Masks over column slots for one read cut: row policy, allowed IDs, live slots.

The text and vector branches and the engine narrow candidates with these boolean masks
over slot numbers; row policy is vectorised over the owner and project codes the
columns keep per slot.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np
import numpy.typing as npt

from cairn.index.cut import IndexCut
from cairn.store.commands import EntityRef

__all__ = ["live_slots", "slot_mask", "visible_everything", "visible_mask"]


def visible_everything(cut: IndexCut, collection: str) -> bool:
    """Whether the row policy lets the principal see every row of ``collection``."""
    principal = cut.principal
    return not principal.restrict_rows or principal.is_admin(cut.database, collection)


def visible_mask(cut: IndexCut, collection: str, size: int) -> npt.NDArray[np.bool_]:
    """Row policy over every slot, vectorised over the owner and project codes."""
    principal = cut.principal
    if visible_everything(cut, collection):
        return np.ones(size, dtype=bool)
    view = cut.columns
    mask = np.zeros(size, dtype=bool)
    if principal.owner_id is not None:
        mask |= view.owner[:size] == view.code(principal.owner_id)
    projects = [view.code(name) for name in sorted(principal.projects)]
    if projects:
        mask |= np.isin(view.project[:size], projects)
    return mask


def slot_mask(cut: IndexCut, collection: str, ids: Collection[str]) -> npt.NDArray[np.bool_]:
    """Mask over slots: the slots alive at the cut of the documents ``collection``/``ids``."""
    view = cut.columns
    mask = np.zeros(len(view.birth), dtype=bool)
    nodes = [
        node
        for node in (view.nodes.get((collection, doc_id)) for doc_id in ids)
        if node is not None
    ]
    if nodes:
        live = view.live_slots()
        found = live[[node for node in nodes if node < len(live)]]
        found = found[(found > 0) & (found < len(mask))]
        mask[found] = True
    return mask


def live_slots(cut: IndexCut, refs: Sequence[EntityRef]) -> list[int]:
    """The slot alive at the cut of each ref's document (0 when it has none)."""
    view = cut.columns
    live = view.live_slots()
    found: list[int] = []
    for ref in refs:
        node = view.nodes.get((ref.collection, ref.id))
        found.append(0 if node is None or node >= len(live) else int(live[node]))
    return found
