"""What the real node is: its settings, the state ``up`` records in ``node.json``, the claim that
makes it the machine's one real node, and the error every step raises.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from localkube.realnode.network import NodeNetwork

CLAIM = Path("/run/mxjob-operator/real-node.json")
"""Which state directory's node runs on this machine (one at a time)."""
KUBE_PROXY_TABLE = "kube-proxy"
NETWORK_POLICY_TABLE = "kube-network-policies"
"""The ``inet`` table of kube-network-policies (localkube.thirdparty.network_policies), when a test
runs it: deleted with the node, since one left behind would drop its pods' traffic."""
PROGRAMS = ("containerd", "kubelet", "coredns", "kube-proxy")


class RealNodeError(RuntimeError):
    """The real node cannot run here or did not start; the message says exactly why."""


@dataclass(frozen=True)
class RealNodeSettings:
    """How the real node is named and where it lives."""

    state_dir: Path
    """Everything of the node: containerd's root and state, the kubelet's, logs, certificates."""
    node_name: str = "mxjob-node"
    network: NodeNetwork = field(default_factory=NodeNetwork)
    cgroup_root: str = "/mxjob-node"
    """The kubelet's ``cgroupRoot``: every pod's cgroup lives below it, removed by ``down``."""
    ready_timeout: float = 120.0


@dataclass
class RealNodeState:
    """What ``up`` started, in ``node.json`` so ``down`` works from another process."""

    pids: dict[str, int] = field(default_factory=dict)
    ip_forward_before: str = "0"
    timings: dict[str, float] = field(default_factory=dict)
    """Seconds each start-up step took (containerd, images, kubelet Ready, DNS, kube-proxy)."""
    imported: list[str] = field(default_factory=list)
    """The file names of the archives imported; each names its image's inputs digest, so a node
    can be reused only while they are the images ``make images`` would give now."""
