"""The real node's addresses and the CNI configuration containerd hands to the bridge plugin."""

from __future__ import annotations

import ipaddress
from pathlib import Path

from localkube.plane.settings import EXEC_POD_BLOCKS, REAL_NODE_RANGE, SERVICE_CIDR
from localkube.realnode.network import NodeNetwork, cni_config

ALLOWED = ipaddress.IPv4Network("198.18.0.0/15")


def test_every_default_address_and_range_is_inside_the_benchmarking_block() -> None:
    net = NodeNetwork()
    for address in (net.node_ip, net.pod_gateway, net.dns_service_ip):
        assert ipaddress.ip_address(address) in ALLOWED, address
    for cidr in (net.pod_cidr, net.service_cidr):
        assert ipaddress.IPv4Network(cidr).subnet_of(ALLOWED), cidr


def test_pods_service_range_and_node_do_not_overlap() -> None:
    net = NodeNetwork()
    pods, services = ipaddress.ip_network(net.pod_cidr), ipaddress.ip_network(net.service_cidr)
    assert not pods.overlaps(services)
    assert ipaddress.ip_address(net.node_ip) not in pods
    assert ipaddress.ip_address(net.node_ip) not in services


def test_the_nodes_addresses_stay_inside_the_range_kept_for_it() -> None:
    net, kept = NodeNetwork(), ipaddress.IPv4Network(REAL_NODE_RANGE)
    assert ipaddress.IPv4Address(net.node_ip) in kept
    assert ipaddress.IPv4Network(net.pod_cidr).subnet_of(kept)


def test_no_test_kubelet_pod_block_meets_the_real_node_or_the_service_range() -> None:
    """A real node (its bridges, its kube-proxy's Service rules) runs beside the test kubelets."""
    net = NodeNetwork()
    taken = [
        ipaddress.IPv4Network(net.pod_cidr),
        ipaddress.IPv4Network(f"{net.node_ip}/32"),
        ipaddress.IPv4Network(SERVICE_CIDR),
    ]
    assert len(EXEC_POD_BLOCKS) == 254
    for block in map(ipaddress.IPv4Network, EXEC_POD_BLOCKS):
        assert block.subnet_of(ALLOWED)
        assert not any(block.overlaps(other) for other in taken), block


def test_gateway_is_the_first_pod_address_and_dns_the_tenth_service_address() -> None:
    net = NodeNetwork(pod_cidr="198.18.4.0/24", service_cidr="198.19.8.0/22")
    assert net.pod_gateway == "198.18.4.1"
    assert net.dns_service_ip == "198.19.8.10"


def test_the_bridge_is_every_pods_default_gateway_without_masquerade(tmp_path: Path) -> None:
    net = NodeNetwork(pod_bridge="testbr0", pod_cidr="198.18.9.0/24", cni_network="test-net")
    config = cni_config(net, ipam_dir=tmp_path / "ipam")
    assert config["name"] == "test-net"
    (bridge,) = config["plugins"]
    assert bridge["type"] == "bridge"
    assert bridge["bridge"] == "testbr0"
    assert bridge["isGateway"] is True
    assert bridge["isDefaultGateway"] is True  # ClusterIPs are reached through the host
    assert bridge["hairpinMode"] is True
    assert bridge["ipMasq"] is False


def test_leases_stay_inside_the_nodes_state_directory(tmp_path: Path) -> None:
    net = NodeNetwork()
    ipam = cni_config(net, ipam_dir=tmp_path / "ipam")["plugins"][0]["ipam"]
    assert ipam["type"] == "host-local"
    assert ipam["dataDir"] == str(tmp_path / "ipam")
    assert ipam["ranges"] == [[{"subnet": net.pod_cidr, "gateway": net.pod_gateway}]]
