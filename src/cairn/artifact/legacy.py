"""Loading v1 node-link JSON (networkx ``node_link_data``, Graphify, Madar) as degraded (§12).

Every v1 node becomes a ``legacy`` node; every link becomes one ``legacy_link`` fact
whose discriminator is the link's fingerprint (SHA-256 of its canonical JSON) plus an
ordinal among byte-identical links, and one occurrence carrying the link's attributes
as metadata and the ``legacy_parallel_facts_unrecoverable`` diagnostic: v1 kept no
discriminators, so which links were behaviourally distinct facts cannot be recovered.
Loads are bounded by size and record count; strict mode refuses v1 outright.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import orjson

from cairn.artifact.atomic import read_bounded
from cairn.artifact.limits import (
    GENERATION_MODE_LEGACY_IMPORT,
    LEGACY_ADAPTER_ID,
    LEGACY_STRATEGY,
    MAX_LEGACY_BYTES,
    MAX_LEGACY_RECORDS,
)
from cairn.artifact.paths import PATH_FIELD_NAMES, is_absolute_path
from cairn.artifact.result import (
    FORMAT_LEGACY_V1,
    REGENERATE_RECOMMENDATION,
    WARNING_LEGACY_PARALLEL_FACTS,
    LoadedArtifact,
)
from cairn.artifact.runtime import gc_paused
from cairn.canonical import canonical_bytes, digest_bytes, nfc
from cairn.errors import (
    ArtifactCorruptError,
    BudgetExceededError,
    CairnError,
    LegacyArtifactError,
)
from cairn.graph.identity import (
    FACT_ID_PREFIX,
    OCCURRENCE_ID_PREFIX,
    fact_identity_payload,
    id_from_payload,
    occurrence_identity_payload,
)
from cairn.graph.model import (
    EndpointIdentity,
    EvidenceOccurrence,
    FactEndpointIdentity,
    Node,
    OccurrenceOwner,
    SemanticFact,
    freeze,
)
from cairn.graph.multigraph import AdmissionOutcome, SemanticGraph
from cairn.graph.receipt import build_receipt
from cairn.graph.registry import LEGACY_FIELDS, LEGACY_RELATION, REGISTRY

__all__ = [
    "LEGACY_KIND",
    "LEGACY_SITE_KIND",
    "REMOVED_PATHS_KEY",
    "decode_legacy_v1",
    "legacy_node_id",
    "load_legacy_v1",
    "looks_like_node_link",
]

LEGACY_KIND = "legacy"
"""Node kind used when a v1 node names none (``kind``, ``type`` or ``file_type``)."""

LEGACY_SITE_KIND = "legacy_link"
"""``site_kind`` of every occurrence made from a v1 link."""

REMOVED_PATHS_KEY = "legacy_absolute_paths_removed"
"""Attribute listing file keys whose absolute paths were dropped (artifacts are portable)."""

_KIND_KEYS = ("kind", "type", "file_type")
_LINK_KEYS = ("links", "edges")


def load_legacy_v1(
    path: str | os.PathLike[str],
    *,
    strict: bool = False,
    max_bytes: int = MAX_LEGACY_BYTES,
    max_records: int = MAX_LEGACY_RECORDS,
) -> LoadedArtifact:
    """Load the v1 node-link file at ``path`` as a degraded graph (refused in strict mode)."""
    if strict:
        raise _strict_refusal()
    data = read_bounded(path, max_bytes, "v1 graph")
    return decode_legacy_v1(data, max_bytes=max_bytes, max_records=max_records)


def decode_legacy_v1(
    data: bytes,
    *,
    strict: bool = False,
    max_bytes: int = MAX_LEGACY_BYTES,
    max_records: int = MAX_LEGACY_RECORDS,
) -> LoadedArtifact:
    """Convert v1 node-link bytes into a degraded ``LoadedArtifact``."""
    if strict:
        raise _strict_refusal()
    if len(data) > max_bytes:
        raise BudgetExceededError(
            f"v1 graph of {len(data)} bytes exceeds the {max_bytes}-byte cap",
            details={"limit_bytes": max_bytes},
        )
    with gc_paused():
        document = _parse(data)
        nodes_raw, links_raw, links_key = _sections(document)
        total = len(nodes_raw) + len(links_raw)
        if total > max_records:
            raise BudgetExceededError(
                f"v1 graph holds {total} nodes and links, over the {max_records}-record cap",
                details={"limit_records": max_records, "records": total},
            )
        try:
            return _convert(document, nodes_raw, links_raw, links_key)
        except ArtifactCorruptError:
            raise
        except (CairnError, TypeError, ValueError) as exc:
            raise ArtifactCorruptError(f"the v1 graph holds a malformed record: {exc}") from exc


def looks_like_node_link(document: Any) -> bool:
    """Whether a parsed JSON value has the node-link shape (``nodes`` plus links/edges)."""
    return (
        isinstance(document, dict)
        and isinstance(document.get("nodes"), list)
        and sum(isinstance(document.get(key), list) for key in _LINK_KEYS) == 1
    )


def _strict_refusal() -> LegacyArtifactError:
    return LegacyArtifactError(
        "strict mode refuses legacy v1 graphs (their facts cannot be verified); "
        + REGENERATE_RECOMMENDATION
    )


def _parse(data: bytes) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ArtifactCorruptError(f"the v1 graph is not valid JSON: {exc}") from exc


def _sections(document: Any) -> tuple[list[Any], list[Any], str]:
    if not looks_like_node_link(document):
        raise ArtifactCorruptError(
            "not a node-link graph: expected an object with a 'nodes' array and exactly one "
            "of 'links' or 'edges'"
        )
    key = next(name for name in _LINK_KEYS if isinstance(document.get(name), list))
    return document["nodes"], document[key], key


def legacy_node_id(value: Any) -> str:
    """A v1 node ID as a string: strings (NFC) as given, other JSON values as canonical JSON.

    So ``1`` becomes ``"1"``; a file holding both ``1`` and ``"1"`` is refused as
    holding one ID twice.
    """
    if isinstance(value, str):
        return nfc(value)
    return canonical_bytes(value).decode("utf-8")


def _strip_absolute(value: Any, where: str, removed: list[str]) -> Any:
    """``value`` without absolute paths under file keys; their locations go to ``removed``."""
    if isinstance(value, dict):
        kept: dict[str, Any] = {}
        for key, item in value.items():
            location = f"{where}.{key}" if where else key
            if key in PATH_FIELD_NAMES and isinstance(item, str) and is_absolute_path(item):
                removed.append(location)
            else:
                kept[key] = _strip_absolute(item, location, removed)
        return kept
    if isinstance(value, list):
        return [
            _strip_absolute(item, f"{where}[{index}]", removed) for index, item in enumerate(value)
        ]
    return value


def _portable(attributes: dict[str, Any]) -> dict[str, Any]:
    removed: list[str] = []
    clean: dict[str, Any] = _strip_absolute(attributes, "", removed)
    if removed:
        clean[REMOVED_PATHS_KEY] = sorted(removed)
    canonical_bytes(clean)  # fails early on values no artifact could hold
    return clean


def _nodes(raw: list[Any]) -> dict[str, Node]:
    nodes: dict[str, Node] = {}
    identity = EndpointIdentity.legacy()
    for index, item in enumerate(raw):
        if not isinstance(item, dict) or "id" not in item:
            raise ArtifactCorruptError(f"v1 node #{index} is not an object with an 'id'")
        node_id = legacy_node_id(item["id"])
        if node_id in nodes:
            raise ArtifactCorruptError(f"v1 node ID {node_id!r} appears twice")
        attributes = _portable({key: value for key, value in item.items() if key != "id"})
        kind = next(
            (
                value
                for key in _KIND_KEYS
                if isinstance(value := attributes.get(key), str) and value.strip()
            ),
            LEGACY_KIND,
        )
        nodes[node_id] = Node(node_id, kind, identity, attributes)
    return nodes


def _link_records(
    raw: list[Any], nodes: Mapping[str, Node]
) -> tuple[list[SemanticFact], list[EvidenceOccurrence]]:
    spec = REGISTRY.get(LEGACY_RELATION)
    assert spec is not None
    legacy = EndpointIdentity.legacy()
    endpoints = FactEndpointIdentity(legacy, legacy)
    owner = OccurrenceOwner(LEGACY_ADAPTER_ID, LEGACY_STRATEGY)
    seen: dict[str, int] = {}
    facts: list[SemanticFact] = []
    occurrences: list[EvidenceOccurrence] = []
    for index, link in enumerate(raw):
        if not isinstance(link, dict) or "source" not in link or "target" not in link:
            raise ArtifactCorruptError(f"v1 link #{index} lacks 'source' or 'target'")
        source, target = legacy_node_id(link["source"]), legacy_node_id(link["target"])
        for role, node_id in (("source", source), ("target", target)):
            if node_id not in nodes:
                raise ArtifactCorruptError(
                    f"v1 link #{index} names {role} node {node_id!r}, which the file lacks"
                )
        fingerprint = digest_bytes(canonical_bytes(link))
        ordinal = seen.get(fingerprint, 0)
        seen[fingerprint] = ordinal + 1
        disc = spec.discriminator(dict(zip(LEGACY_FIELDS, (fingerprint, ordinal), strict=True)))
        fact_id, _ = id_from_payload(
            FACT_ID_PREFIX,
            fact_identity_payload(spec.direction, source, target, LEGACY_RELATION, disc),
        )
        occurrence_id, _ = id_from_payload(
            OCCURRENCE_ID_PREFIX,
            occurrence_identity_payload(
                fact_id,
                owner.adapter_id,
                owner.strategy,
                None,
                None,
                None,
                None,
                LEGACY_SITE_KIND,
                None,
            ),
        )
        attributes = _portable(
            {key: value for key, value in link.items() if key not in ("source", "target")}
        )
        facts.append(
            SemanticFact(
                fact_id,
                spec.direction,
                source,
                target,
                LEGACY_RELATION,
                disc,
                endpoints,
                (occurrence_id,),
            )
        )
        occurrences.append(
            EvidenceOccurrence(
                occurrence_id,
                fact_id,
                owner,
                site_kind=LEGACY_SITE_KIND,
                metadata_variants=(freeze({"legacy_link": attributes}),) if attributes else (),
                diagnostics=(WARNING_LEGACY_PARALLEL_FACTS,),
            )
        )
    return facts, occurrences


def _convert(
    document: dict[str, Any], nodes_raw: list[Any], links_raw: list[Any], links_key: str
) -> LoadedArtifact:
    nodes = _nodes(nodes_raw)
    facts, occurrences = _link_records(links_raw, nodes)
    graph = SemanticGraph.from_records(
        nodes=nodes.values(),
        facts=facts,
        occurrences=occurrences,
        admission_counts={AdmissionOutcome.NEW_FACT.value: len(facts)},
    )
    directed = document.get("directed", True)
    graph_attributes = document.get("graph", {})
    provenance = _portable(
        {
            "source_format": FORMAT_LEGACY_V1,
            "links_key": links_key,
            "directed": directed if isinstance(directed, bool) else True,
            "multigraph": bool(document.get("multigraph", False)),
            "legacy_graph_attributes": graph_attributes
            if isinstance(graph_attributes, dict)
            else {},
            "ignored_keys": sorted(
                set(document) - {"nodes", links_key, "directed", "multigraph", "graph"}
            ),
            "link_count": len(links_raw),
        }
    )
    return LoadedArtifact(
        graph=graph,
        source_format=FORMAT_LEGACY_V1,
        versions=freeze({"graph_artifact": 1}),
        repository_revision=None,
        generation_mode=GENERATION_MODE_LEGACY_IMPORT,
        generated_at=None,
        directed=provenance["directed"],
        provenance=freeze(provenance),
        integrity_receipt=freeze(build_receipt(graph)),
        degraded=True,
        warnings=(WARNING_LEGACY_PARALLEL_FACTS,),
        recommendation=REGENERATE_RECOMMENDATION,
    )
