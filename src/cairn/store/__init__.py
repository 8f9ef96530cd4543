"""The durable store: one SQLite file per database, commands with receipts, policies.

Names are imported on first use (PEP 562): ``cairn mcp`` and other light entry points
must not pay for numpy and the whole store just to import a helper such as
``cairn.store.locate``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cairn.store.commands import (
        CommandRequest,
        CommitReceipt,
        CommitToken,
        ConfigureCollection,
        ConfigureGraph,
        ConfigurePolicy,
        ConfigurePrincipal,
        DeleteDocument,
        DeleteFact,
        DocumentAccess,
        EntityRef,
        Metric,
        Mutation,
        MutationOutcome,
        PatchDocument,
        PatchOperation,
        PutDocument,
        PutFact,
        PutVector,
        VectorField,
        VectorSpace,
        command_from_json,
    )
    from cairn.store.database import Database, open
    from cairn.store.load import load_semantic_graph
    from cairn.store.locate import find_database
    from cairn.store.policy import (
        OWNER,
        ApiKeyVerifier,
        Capability,
        FieldPolicy,
        Grant,
        IssuedApiKey,
        Principal,
        issue_api_key,
        make_verifier,
    )

_EXPORTS: dict[str, str] = {
    "ApiKeyVerifier": "cairn.store.policy",
    "Capability": "cairn.store.policy",
    "CommandRequest": "cairn.store.commands",
    "CommitReceipt": "cairn.store.commands",
    "CommitToken": "cairn.store.commands",
    "ConfigureCollection": "cairn.store.commands",
    "ConfigureGraph": "cairn.store.commands",
    "ConfigurePolicy": "cairn.store.commands",
    "ConfigurePrincipal": "cairn.store.commands",
    "Database": "cairn.store.database",
    "DeleteDocument": "cairn.store.commands",
    "DeleteFact": "cairn.store.commands",
    "DocumentAccess": "cairn.store.commands",
    "EntityRef": "cairn.store.commands",
    "FieldPolicy": "cairn.store.policy",
    "Grant": "cairn.store.policy",
    "IssuedApiKey": "cairn.store.policy",
    "Metric": "cairn.store.commands",
    "Mutation": "cairn.store.commands",
    "MutationOutcome": "cairn.store.commands",
    "OWNER": "cairn.store.policy",
    "PatchDocument": "cairn.store.commands",
    "PatchOperation": "cairn.store.commands",
    "Principal": "cairn.store.policy",
    "PutDocument": "cairn.store.commands",
    "PutFact": "cairn.store.commands",
    "PutVector": "cairn.store.commands",
    "VectorField": "cairn.store.commands",
    "VectorSpace": "cairn.store.commands",
    "command_from_json": "cairn.store.commands",
    "find_database": "cairn.store.locate",
    "issue_api_key": "cairn.store.policy",
    "load_semantic_graph": "cairn.store.load",
    "make_verifier": "cairn.store.policy",
    "open": "cairn.store.database",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'cairn.store' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "OWNER",
    "ApiKeyVerifier",
    "Capability",
    "CommandRequest",
    "CommitReceipt",
    "CommitToken",
    "ConfigureCollection",
    "ConfigureGraph",
    "ConfigurePolicy",
    "ConfigurePrincipal",
    "Database",
    "DeleteDocument",
    "DeleteFact",
    "DocumentAccess",
    "EntityRef",
    "FieldPolicy",
    "Grant",
    "IssuedApiKey",
    "Metric",
    "Mutation",
    "MutationOutcome",
    "PatchDocument",
    "PatchOperation",
    "Principal",
    "PutDocument",
    "PutFact",
    "PutVector",
    "VectorField",
    "VectorSpace",
    "command_from_json",
    "find_database",
    "issue_api_key",
    "load_semantic_graph",
    "make_verifier",
    "open",
]
