"""v1 node-link import: networkx, Graphify and Madar shapes load as visibly degraded."""

from __future__ import annotations

import json
from typing import Any

import networkx as nx
import orjson
import pytest
from artifact_support import FIXED_TIME

from cairn.artifact import (
    FORMAT_LEGACY_V1,
    GENERATION_MODE_LEGACY_IMPORT,
    WARNING_LEGACY_PARALLEL_FACTS,
    decode_artifact,
    decode_legacy_v1,
    encode_artifact,
    load_legacy_v1,
)
from cairn.artifact.legacy import REMOVED_PATHS_KEY, legacy_node_id, looks_like_node_link
from cairn.canonical import canonical_bytes, digest_bytes
from cairn.errors import ArtifactCorruptError, BudgetExceededError, LegacyArtifactError
from cairn.graph import EndpointIdentity, IdentityStatus
from cairn.graph.registry import LEGACY_RELATION


def networkx_v1(edges_key: str = "links") -> bytes:
    """A v1 file as networkx writes it: a multigraph with two parallel links."""
    graph = nx.MultiDiGraph()
    graph.add_node("app.py", kind="file", community=0)
    graph.add_node("app.py::main", kind="function")
    graph.add_node("app.py::helper", kind="function")
    graph.add_edge("app.py", "app.py::main", relation="contains")
    graph.add_edge("app.py::main", "app.py::helper", relation="calls", line=3)
    graph.add_edge("app.py::main", "app.py::helper", relation="calls", line=9)
    data = nx.node_link_data(graph, edges=edges_key)
    return json.dumps(data).encode()


@pytest.mark.parametrize("edges_key", ["links", "edges"])
def test_networkx_node_link_loads_degraded(edges_key: str) -> None:
    loaded = decode_legacy_v1(networkx_v1(edges_key))
    graph = loaded.graph
    assert loaded.source_format == FORMAT_LEGACY_V1
    assert loaded.degraded is True
    assert loaded.warnings == (WARNING_LEGACY_PARALLEL_FACTS,)
    assert "regenerate" in (loaded.recommendation or "")
    assert loaded.provenance["links_key"] == edges_key
    # One legacy fact and one legacy occurrence per link; parallel links stay distinct.
    assert (graph.node_count, graph.fact_count, graph.occurrence_count) == (3, 3, 3)
    assert graph.endpoint_pair_count == 2
    assert all(node.identity == EndpointIdentity.legacy() for node in graph.nodes())
    for fact in graph.facts():
        assert fact.relation == LEGACY_RELATION
        assert fact.discriminator.completeness == "legacy"
        assert set(fact.discriminator.value) == {
            "legacy_link_fingerprint",
            "legacy_duplicate_ordinal",
        }
        [occurrence] = graph.occurrences_of(fact.id)
        assert occurrence.diagnostics == (WARNING_LEGACY_PARALLEL_FACTS,)
        assert occurrence.owner.adapter_id == "cairn.legacy_v1"
    calls = graph.facts_between("app.py::main", "app.py::helper")
    lines = sorted(graph.occurrences_of(f.id)[0].metadata["legacy_link"]["line"] for f in calls)
    assert lines == [3, 9]
    cells = loaded.integrity_receipt["endpoint_identity"]["fact_pair_counts"]
    assert cells["legacy"]["legacy"] == 3
    assert graph.node("app.py").kind == "file"
    assert graph.node("app.py").attributes["community"] == 0


def test_fingerprint_is_the_digest_of_the_canonical_link() -> None:
    document = orjson.loads(networkx_v1())
    loaded = decode_legacy_v1(networkx_v1())
    link = document["links"][0]
    expected = digest_bytes(canonical_bytes(link))
    fingerprints = {f.discriminator.value["legacy_link_fingerprint"] for f in loaded.graph.facts()}
    assert expected in fingerprints


def test_identical_duplicate_links_get_ordinals() -> None:
    # Madar-style: "edges", and two byte-identical links nothing can tell apart.
    document = {
        "directed": True,
        "nodes": [{"id": "a"}, {"id": "b"}],
        "edges": [{"source": "a", "target": "b", "type": "calls"}] * 2,
    }
    graph = decode_legacy_v1(json.dumps(document).encode()).graph
    ordinals = sorted(f.discriminator.value["legacy_duplicate_ordinal"] for f in graph.facts())
    assert ordinals == [0, 1]
    assert graph.node("a").kind == "legacy"


def test_graphify_style_absolute_paths_are_dropped_and_recorded() -> None:
    document = {
        "directed": False,
        "multigraph": False,
        "graph": {"source": "graphify"},
        "nodes": [
            {"id": "n1", "file_type": "code", "source_file": "/home/me/repo/a.py", "label": "A"},
            {"id": "n2", "file_type": "code", "source_file": "b.py"},
        ],
        "links": [
            {"source": "n1", "target": "n2", "relation": "calls", "source_file": "C:\\r\\a.py"}
        ],
        "hyperedges": [],
    }
    loaded = decode_legacy_v1(json.dumps(document).encode())
    node = loaded.graph.node("n1")
    assert "source_file" not in node.attributes
    assert node.attributes[REMOVED_PATHS_KEY] == ("source_file",)
    assert node.kind == "code"
    assert loaded.graph.node("n2").attributes["source_file"] == "b.py"
    [occurrence] = loaded.graph.occurrences()
    link = occurrence.metadata["legacy_link"]
    assert "source_file" not in link and link[REMOVED_PATHS_KEY] == ("source_file",)
    assert loaded.directed is False
    assert loaded.provenance["ignored_keys"] == ("hyperedges",)
    # And the converted graph can be written: no absolute path reaches the artifact.
    encode_artifact(loaded.graph, generated_at=FIXED_TIME)


def test_non_string_node_ids_become_canonical_strings() -> None:
    graph = nx.Graph()
    graph.add_edge(1, 2)
    loaded = decode_legacy_v1(json.dumps(nx.node_link_data(graph, edges="links")).encode())
    assert loaded.graph.node_ids() == ("1", "2")
    assert legacy_node_id([1, "x"]) == '[1,"x"]'
    assert legacy_node_id("e\u0301") == "\u00e9"
    clash = {"nodes": [{"id": 1}, {"id": "1"}], "links": []}
    with pytest.raises(ArtifactCorruptError, match="twice"):
        decode_legacy_v1(json.dumps(clash).encode())


def test_strict_mode_rejects_v1(tmp_path) -> None:
    path = tmp_path / "graph.json"
    path.write_bytes(networkx_v1())
    with pytest.raises(LegacyArtifactError):
        load_legacy_v1(path, strict=True)
    with pytest.raises(LegacyArtifactError):
        decode_legacy_v1(networkx_v1(), strict=True)
    assert load_legacy_v1(path).degraded


def test_size_and_record_caps_are_explicit(tmp_path) -> None:
    data = networkx_v1()
    with pytest.raises(BudgetExceededError, match="cap"):
        decode_legacy_v1(data, max_bytes=len(data) - 1)
    with pytest.raises(BudgetExceededError, match="record cap"):
        decode_legacy_v1(data, max_records=5)  # 3 nodes + 3 links
    assert decode_legacy_v1(data, max_records=6).graph.fact_count == 3
    path = tmp_path / "big.json"
    path.write_bytes(data)
    with pytest.raises(BudgetExceededError):
        load_legacy_v1(path, max_bytes=10)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (b"not json", "not valid JSON"),
        (b"[]", "not a node-link graph"),
        (b'{"nodes": []}', "not a node-link graph"),
        (b'{"nodes": [], "links": [], "edges": []}', "not a node-link graph"),
        (b'{"nodes": [{"name": "x"}], "links": []}', "'id'"),
        (b'{"nodes": [{"id": "a"}], "links": [{"source": "a"}]}', "lacks"),
        (b'{"nodes": [{"id": "a"}], "links": [{"source": "a", "target": "b"}]}', "lacks"),
        (b'{"nodes": [{"id": " "}], "links": []}', "malformed"),
        (b'{"nodes": [{"id": "a", "n": 36028797018963968}], "links": []}', "malformed"),
    ],
)
def test_malformed_v1_is_corrupt(document: bytes, message: str) -> None:
    with pytest.raises(ArtifactCorruptError, match=message):
        decode_legacy_v1(document)


def test_looks_like_node_link() -> None:
    assert looks_like_node_link({"nodes": [], "links": []})
    assert looks_like_node_link({"nodes": [], "edges": []})
    assert not looks_like_node_link({"nodes": {}, "links": []})
    assert not looks_like_node_link([])


def test_import_to_v2_stays_degraded_and_is_deterministic() -> None:
    loaded = decode_legacy_v1(networkx_v1())
    data = encode_artifact(
        loaded.graph,
        generation_mode=GENERATION_MODE_LEGACY_IMPORT,
        generated_at=FIXED_TIME,
        provenance=dict(_plain(loaded.provenance)),
    )
    again = decode_legacy_v1(networkx_v1())
    assert data == encode_artifact(
        again.graph,
        generation_mode=GENERATION_MODE_LEGACY_IMPORT,
        generated_at=FIXED_TIME,
        provenance=dict(_plain(again.provenance)),
    )
    v2 = decode_artifact(data)
    assert v2.degraded and v2.warnings == (WARNING_LEGACY_PARALLEL_FACTS,)
    assert v2.generation_mode == GENERATION_MODE_LEGACY_IMPORT
    assert all(n.identity.status is IdentityStatus.LEGACY for n in v2.graph.nodes())
    with pytest.raises(LegacyArtifactError):
        decode_artifact(data, strict=True)


def _plain(value: Any) -> Any:
    from cairn.graph.model import thaw

    return thaw(value)
