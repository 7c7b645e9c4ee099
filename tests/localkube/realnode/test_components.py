"""The kubelet, kube-proxy and CoreDNS configurations of the real node."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from localkube.realnode.components import (
    CLUSTER_DOMAIN,
    NodePaths,
    corefile,
    dns_objects,
    kube_proxy_config,
    kubelet_config,
)
from localkube.realnode.network import NodeNetwork

NET = NodeNetwork()


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


@pytest.fixture
def paths(tmp_path: Path) -> NodePaths:
    return NodePaths(tmp_path / "node")


def kubelet(paths: NodePaths) -> dict[str, Any]:
    return kubelet_config(
        NET, paths, client_ca=paths.pki / "ca.crt", cgroup_root="/test-node", healthz_port=10248
    )


def test_every_path_the_kubelet_writes_is_inside_the_nodes_state(paths: NodePaths) -> None:
    absolute = [s for s in strings(kubelet(paths)) if s.startswith("/") and s != "/test-node"]
    absolute += [kubelet(paths)["containerRuntimeEndpoint"].removeprefix("unix://")]
    assert absolute
    for path in absolute:
        assert Path(path).is_relative_to(paths.root), path


def test_the_kubelet_listens_on_the_node_address_only_with_authentication(
    paths: NodePaths,
) -> None:
    config = kubelet(paths)
    assert config["address"] == NET.node_ip
    assert config["healthzBindAddress"] == NET.node_ip
    assert config["readOnlyPort"] == 0
    assert config["authentication"]["anonymous"]["enabled"] is False
    assert config["authorization"]["mode"] == "Webhook"


def test_the_serving_certificate_is_not_the_client_certificate(paths: NodePaths) -> None:
    """The kubelet's client credentials are ``kubelet.crt``; its serving pair must differ."""
    config = kubelet(paths)
    assert Path(config["tlsCertFile"]).name not in ("kubelet.crt", "ca.crt")
    assert Path(config["tlsPrivateKeyFile"]).name != "kubelet.key"


def test_cgroups_live_under_the_nodes_own_root_with_cgroupfs_on_v1(paths: NodePaths) -> None:
    config = kubelet(paths)
    assert config["cgroupDriver"] == "cgroupfs"
    assert config["cgroupRoot"] == "/test-node"
    assert config["failCgroupV1"] is False


def test_imported_images_are_never_garbage_collected_nor_evicted_for_disk(
    paths: NodePaths,
) -> None:
    config = kubelet(paths)
    assert config["imageGCHighThresholdPercent"] == 100
    assert all(config["evictionHard"][k] == "0%" for k in ("nodefs.available", "imagefs.available"))


def test_the_kubelet_adds_no_iptables_chains_beside_an_nftables_kube_proxy(
    paths: NodePaths, tmp_path: Path
) -> None:
    assert kubelet(paths)["makeIPTablesUtilChains"] is False
    proxy = kube_proxy_config(
        NET, kubeconfig=tmp_path / "kubeconfig", node_name="node", healthz_port=1, metrics_port=2
    )
    assert proxy["mode"] == "nftables"


def test_pods_resolve_through_the_dns_service_in_the_cluster_domain(paths: NodePaths) -> None:
    config = kubelet(paths)
    assert config["clusterDNS"] == [NET.dns_service_ip]
    assert config["clusterDomain"] == CLUSTER_DOMAIN


def test_kube_proxy_uses_nftables_on_the_node_address_for_the_pod_range(tmp_path: Path) -> None:
    config = kube_proxy_config(
        NET, kubeconfig=tmp_path / "k", node_name="n", healthz_port=1, metrics_port=2
    )
    assert config["mode"] == "nftables"
    assert config["bindAddress"] == NET.node_ip
    assert config["healthzBindAddress"] == f"{NET.node_ip}:1"
    assert config["metricsBindAddress"] == f"{NET.node_ip}:2"
    assert config["clusterCIDR"] == NET.pod_cidr
    assert config["nodePortAddresses"] == [f"{NET.node_ip}/32"]
    assert config["nftables"]["masqueradeAll"] is True
    assert config["hostnameOverride"] == "n"


def test_coredns_binds_the_node_address_and_never_forwards(tmp_path: Path) -> None:
    text = corefile(NET, kubeconfig=tmp_path / "coredns.kubeconfig", ready_port=8181)
    binds = re.findall(r"^\s*bind (\S+)$", text, re.MULTILINE)
    assert binds and set(binds) == {NET.node_ip}
    assert f"ready {NET.node_ip}:8181" in text
    assert f"kubeconfig {tmp_path / 'coredns.kubeconfig'}" in text
    assert "forward" not in text
    assert "rcode NXDOMAIN" in text
    assert text.count("{") == text.count("}")


def test_kube_dns_points_at_coredns_on_the_node_with_matching_ports() -> None:
    objects = {o["kind"]: o for o in dns_objects(NET)}
    service, endpoints = objects["Service"], objects["EndpointSlice"]
    assert service["spec"]["clusterIP"] == NET.dns_service_ip
    assert "selector" not in service["spec"]
    assert endpoints["metadata"]["labels"]["kubernetes.io/service-name"] == "kube-dns"
    assert endpoints["metadata"]["namespace"] == service["metadata"]["namespace"]
    assert endpoints["endpoints"][0]["addresses"] == [NET.node_ip]
    ports = {(p["name"], p["protocol"]) for p in service["spec"]["ports"]}
    assert ports == {(p["name"], p["protocol"]) for p in endpoints["ports"]}
    assert ports == {("dns", "UDP"), ("dns-tcp", "TCP")}


def test_coredns_may_only_read_what_it_serves() -> None:
    objects = {o["kind"]: o for o in dns_objects(NET)}
    verbs = {v for rule in objects["ClusterRole"]["rules"] for v in rule["verbs"]}
    assert verbs == {"list", "watch"}
    binding = objects["ClusterRoleBinding"]
    assert binding["roleRef"]["name"] == objects["ClusterRole"]["metadata"]["name"]
    assert binding["subjects"][0]["name"] == "system:coredns"
