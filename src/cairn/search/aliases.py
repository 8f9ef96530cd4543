"""The wire aliases of every public contract: ``cairn.contract.<kebab-type-name>.v1``.

This table is the one place aliases live. An alias is never changed or reused; a new
version of a contract gets a new alias (``.v2``) next to the old one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

__all__ = ["ALIAS_PATTERN", "CONTRACT_ALIASES", "alias_of", "kebab"]

ALIAS_PATTERN = re.compile(r"^cairn\.contract\.[a-z0-9]+(?:-[a-z0-9]+)*\.v[1-9][0-9]*$")


def kebab(type_name: str) -> str:
    """``GraphSearchRequest`` -> ``graph-search-request``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "-", type_name).lower()


CONTRACT_ALIASES: Mapping[str, str] = MappingProxyType(
    {
        name: f"cairn.contract.{kebab(name)}.v1"
        for name in (
            "BranchContribution",
            "DocumentResult",
            "EntityRef",
            "GraphContextDocument",
            "GraphExpansion",
            "GraphExpansionResult",
            "GraphRetriever",
            "GraphScope",
            "GraphSearchRequest",
            "GraphSearchResult",
            "GraphWalkSpec",
            "QueryRequest",
            "RankedDocument",
            "SearchExplanation",
            "SearchRequest",
            "SqlGraphSearchRequest",
            "VectorSpace",
        )
    }
)


def alias_of(type_name: str) -> str:
    """The wire alias of a contract type name (``KeyError`` for non-contracts)."""
    return CONTRACT_ALIASES[type_name]
