"""The real node's addresses and the two bridges that carry them.

Every address lives in 198.18.0.0/15, the benchmarking range this project's tests may use: the
node address sits alone on a bridge of its own (the kubelet refuses a loopback node IP and this
kernel has no dummy interfaces), pods get addresses from the CNI bridge's subnet with the bridge
as their default gateway (so ClusterIPs, which kube-proxy translates on the host, are reachable),
and Service addresses come from the control plane's ``SERVICE_CIDR``. The bridges are named and
addressed the same on every run, so a run cleans up what a killed one left.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localkube.plane.settings import SERVICE_CIDR

IP_FORWARD = Path("/proc/sys/net/ipv4/ip_forward")


class NodeNetworkError(RuntimeError):
    """A bridge or address could not be set up; the message has the command's error."""


@dataclass(frozen=True)
class NodeNetwork:
    """Names and addresses of the real node's network (one real node per machine)."""

    node_bridge: str = "mxjnode0"
    """Holds ``node_ip``: the kubelet's, kube-apiserver's and CoreDNS's address."""
    node_ip: str = "198.18.0.1"
    pod_bridge: str = "mxjcni0"
    """The CNI bridge plugin's bridge: every pod's veth is a port of it."""
    pod_cidr: str = "198.18.1.0/24"
    service_cidr: str = SERVICE_CIDR
    cni_network: str = "mxjob-node"
    """The CNI network's name; libcni names its cache files after it."""

    @property
    def pod_gateway(self) -> str:
        return str(next(ipaddress.ip_network(self.pod_cidr).hosts()))

    @property
    def dns_service_ip(self) -> str:
        """``kube-dns``'s ClusterIP: the tenth address of the Service range, as kubeadm does."""
        return str(ipaddress.ip_network(self.service_cidr).network_address + 10)


def cni_config(network: NodeNetwork, *, ipam_dir: Path) -> dict[str, Any]:
    """The CNI conflist containerd hands to the bridge plugin.

    ``isDefaultGateway`` (which adds the pods' default route itself) routes pod traffic to
    ClusterIPs through the host, where kube-proxy's rules translate it; ``hairpinMode`` lets a
    pod reach itself through its own Service; ``ipMasq`` stays off (nothing here leaves the
    machine). host-local keeps its leases in ``ipam_dir``, inside the node's state, not in
    ``/var/lib/cni``.
    """
    return {
        "cniVersion": "1.0.0",
        "name": network.cni_network,
        "plugins": [
            {
                "type": "bridge",
                "bridge": network.pod_bridge,
                "isGateway": True,
                "isDefaultGateway": True,
                "hairpinMode": True,
                "ipMasq": False,
                "ipam": {
                    "type": "host-local",
                    "dataDir": str(ipam_dir),
                    "ranges": [[{"subnet": network.pod_cidr, "gateway": network.pod_gateway}]],
                },
            },
        ],
    }


def write_cni_config(network: NodeNetwork, *, conf_dir: Path, ipam_dir: Path) -> None:
    conf_dir.mkdir(parents=True, exist_ok=True)
    ipam_dir.mkdir(parents=True, exist_ok=True)
    path = conf_dir / f"10-{network.cni_network}.conflist"
    path.write_text(json.dumps(cni_config(network, ipam_dir=ipam_dir), indent=2) + "\n")


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if check and result.returncode != 0:
        raise NodeNetworkError(f"ip {' '.join(args)}: {result.stderr.strip()}")
    return result


def link_exists(name: str) -> bool:
    return _ip("link", "show", "dev", name, check=False).returncode == 0


def create_node_bridge(network: NodeNetwork) -> None:
    """The node address on a bridge of its own, up (its local route exists only while up)."""
    if not link_exists(network.node_bridge):
        _ip("link", "add", network.node_bridge, "type", "bridge")
    _ip("addr", "replace", f"{network.node_ip}/32", "dev", network.node_bridge)
    _ip("link", "set", network.node_bridge, "up")


def delete_bridges(network: NodeNetwork) -> None:
    """Remove both bridges; veths still attached go with the pod bridge."""
    for name in (network.pod_bridge, network.node_bridge):
        if link_exists(name):
            _ip("link", "delete", name, check=False)


def read_ip_forward() -> str:
    """The host's ``net.ipv4.ip_forward``: the bridge plugin turns it on for its gateway."""
    return IP_FORWARD.read_text().strip()


def restore_ip_forward(value: str) -> None:
    with contextlib.suppress(OSError):
        if read_ip_forward() != value:
            IP_FORWARD.write_text(value + "\n")
