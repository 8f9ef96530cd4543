"""What the Python and the JS/TS/Go resolvers share: the values a reference resolves
to, class orders cached per class with a cycle guard, and the walk of a reference's
attributes that decides its dispatch kind. (Each compares its own depth guard,
``MAX_PYTHON_RESOLUTION_DEPTH`` or ``MAX_RESOLUTION_DEPTH``, inline: the check runs
~300k times a build.)

Each language keeps its own rules as hooks: how a class's bases resolve
(``bases_of``), how bases are linearised (``linearise``: depth-first here, C3 for
Python), and what ``value.attr`` is (``getattr``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = [
    "ClassOrder",
    "ResolverFrame",
    "VExternal",
    "VInstance",
    "VModule",
    "VSymbol",
    "distinct",
]

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class VModule:
    """A module: in the repository (``path`` set) or outside it."""

    name: str
    path: str | None


@dataclass(frozen=True, slots=True)
class VSymbol:
    """An in-repository symbol node."""

    node_id: str
    kind: str
    path: str
    qualname: str
    canonical: str
    bound: bool = False
    """A method read from an instance (``obj.m``): calling it passes ``obj`` first."""


@dataclass(frozen=True, slots=True)
class VInstance:
    """An instance of an in-repository class or of an external class."""

    cls: VSymbol | None
    external: str | None
    origin: str | None


@dataclass(frozen=True, slots=True)
class VExternal:
    """A symbol outside the repository, by dotted name."""

    dotted: str


ClassOrder = tuple[VSymbol | VExternal, ...]
"""A class and its bases in lookup order; an external base ends its branch."""


def distinct(values: Iterable[_T]) -> tuple[_T, ...]:
    """``values`` without repeats, in first-seen order: one hash per value, where a
    ``not in`` scan of a growing list compared every pair (17% of Python resolution)."""
    return tuple(dict.fromkeys(values))


class ResolverFrame(ABC):
    """The resolution frame both resolvers build on (see the module docstring)."""

    def __init__(self) -> None:
        self._mro_cache: dict[str, ClassOrder] = {}

    # ----------------------------------------------------------------- hooks
    @abstractmethod
    def bases_of(self, cls: VSymbol) -> list[VSymbol | VExternal]:
        """The resolved direct bases of an in-repository class, in declaration order."""

    @abstractmethod
    def getattr(self, value: Any, attr: str, depth: int) -> tuple[Any, ...]:
        """The values of ``value.attr``; empty when it cannot be resolved exactly."""

    def linearise(
        self,
        cls: VSymbol,
        bases: Sequence[VSymbol | VExternal],
        orders: Sequence[ClassOrder],
    ) -> ClassOrder:
        """The lookup order of ``cls`` from its bases and their orders: depth-first,
        left to right, each class once (extends and embedding chains)."""
        order: list[VSymbol | VExternal] = [cls]
        for chain in orders:
            order.extend(item for item in chain if item not in order)
        return tuple(order)

    def step_dispatch(self, attr: str, before: tuple[Any, ...], dispatch: str) -> str:
        """The dispatch of a call reached through ``.attr`` from the values ``before``
        (reached with ``dispatch``): a ``method`` from an instance, else ``attribute``."""
        return "method" if any(isinstance(value, VInstance) for value in before) else "attribute"

    # ---------------------------------------------------------------- shared
    def mro(self, cls: VSymbol) -> ClassOrder:
        """The lookup order of ``cls``, computed once per class (a class reached again
        while its own order is computed counts as itself alone: cycles end there)."""
        cached = self._mro_cache.get(cls.node_id)
        if cached is not None:
            return cached
        self._mro_cache[cls.node_id] = (cls,)  # cycle guard
        bases = self.bases_of(cls)
        orders = [self.mro(base) if isinstance(base, VSymbol) else (base,) for base in bases]
        result = self.linearise(cls, bases, orders)
        self._mro_cache[cls.node_id] = result
        return result

    def walk_attributes(
        self, current: tuple[Any, ...], attrs: Sequence[str], dispatch: str, depth: int
    ) -> tuple[tuple[Any, str], ...]:
        """Follow ``attrs`` from the values ``current`` (reached with ``dispatch``):
        each step keeps every distinct value in order; a step from an instance is a
        ``method`` dispatch, from anything else an ``attribute`` one. Nothing when a
        step finds nothing."""
        for attr in attrs:
            before = current
            current = distinct(
                found for value in current for found in self.getattr(value, attr, depth + 1)
            )
            dispatch = self.step_dispatch(attr, before, dispatch)
            if not current:
                return ()
        return tuple((value, dispatch) for value in current)
