"""What a local control plane is: its settings, the state ``up`` records, where its files live,
and the address plan it shares with the test kubelets and the real node.

Every other module of the plane reads these; none of them runs anything.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager")
SCHEDULER = "kube-scheduler"
# Kubernetes v1.36's gang scheduling (pkg/features/kube_features.go of the pinned module):
# GenericWorkload serves the Workload and PodGroup kinds and the pods' spec.schedulingGroup,
# GangScheduling enables kube-scheduler's plugin that binds a group's pods all or none,
# TopologyAwareWorkloadScheduling keeps a PodGroup's schedulingConstraints.topology and places
# the group in one domain of its label, WorkloadAwarePreemption keeps priorityClassName and
# disruptionMode and preempts for a group as a whole (without them the API server drops those
# fields silently).
WORKLOAD_FEATURE_GATES = (
    "GenericWorkload=true,GangScheduling=true,"
    "TopologyAwareWorkloadScheduling=true,WorkloadAwarePreemption=true"
)
WORKLOAD_API = "scheduling.k8s.io/v1alpha2"
# The API server stamps a finalizer on every PodGroup; this controller lifts it once no running
# pod uses the group, so a deleted job's PodGroups do not stay forever.
WORKLOAD_CONTROLLERS = "podgroup-protection-controller"
# csrsigning signs the test kubelets' serving certificates (see localkube.kubelet.tls);
# clusterrole-aggregation fills aggregated ClusterRoles (the install's roles for people go into
# admin/edit/view, and with the kubeflow component into Kubeflow's own).
CONTROLLERS = (
    "garbagecollector,namespace,serviceaccount,root-ca-cert-publisher,csrsigning,"
    "clusterrole-aggregation"
)
# Service addresses stay inside 198.18.0.0/15, the range this project's tests may create networks
# in: the real node (localkube.realnode) routes them with kube-proxy. The first is `kubernetes`'s.
SERVICE_CIDR = "198.19.0.0/16"
KUBERNETES_SERVICE_IP = "198.19.0.1"
# The real node's bridges (localkube.realnode.network.NodeNetwork) hold 198.18.0.0/23; the exec-mode
# test kubelets take their pod addresses from the rest of 198.18.0.0/16 (EXEC_POD_BLOCKS). Neither
# may reach into SERVICE_CIDR: a real node's kube-proxy rejects every address there that no Service
# holds, so a test kubelet's pod on such an address could not be probed while a real node runs.
REAL_NODE_RANGE = "198.18.0.0/23"
EXEC_POD_BLOCKS = tuple(
    str(block)
    for block in ipaddress.ip_network("198.18.0.0/16").subnets(new_prefix=24)
    if not block.overlaps(ipaddress.ip_network(REAL_NODE_RANGE))
)
# What running the install (manifests/) needs beyond CONTROLLERS: Deployments make ReplicaSets
# make Pods; a Service's EndpointSlice lists its ready pods (the API server routes webhook calls
# to them with --enable-aggregator-routing); PodDisruptionBudgets get their status.
INSTALL_CONTROLLERS = ("deployment", "replicaset", "endpointslice", "disruption")


@dataclass(frozen=True)
class ControlPlaneSettings:
    """Where a control plane keeps its files and how long it may take to start."""

    state_dir: Path
    """Everything of this control plane: certs, etcd data, logs, kubeconfig, state.json."""
    bin_dir: Path | None = None
    """Built binaries; None builds (or finds cached) ones with ``hack/build-binaries.sh``."""
    apiserver_binary: Path | None = None
    """A kube-apiserver of another release than ``bin_dir``'s (``hack/build-kube-apiserver.sh``,
    for ``make test-kube-versions``); None: ``bin_dir``'s."""
    start_timeout: float = 60.0
    """Seconds to wait for ``/readyz``: a cold start on 2 busy cores takes ~5-10 s."""
    extra_apiserver_args: tuple[str, ...] = ()
    """Flags for tests that need a different API server configuration."""
    extra_controller_manager_args: tuple[str, ...] = ()
    """Flags for kube-controller-manager, e.g. a shorter node grace period for a real node."""
    extra_controllers: tuple[str, ...] = ()
    """kube-controller-manager controllers beyond ``CONTROLLERS``: e.g. ``INSTALL_CONTROLLERS``
    for a plane that runs the operator from its Deployments."""
    workload_scheduling: bool = False
    """Run kube-scheduler and serve ``scheduling.k8s.io/v1alpha2`` with the gang-scheduling
    feature gates. Pods are then bound by the scheduler, so test kubelets on this plane must be
    started with ``bind=False`` and nodes need capacity for what the pods request."""
    scheduler: bool = False
    """Run kube-scheduler as released, without the alpha gang features (``workload_scheduling``
    implies it): for pods placed on simulated nodes (``localkube.thirdparty.kwok``)."""
    extra_scheduler_args: tuple[str, ...] = ()
    """Flags for kube-scheduler, e.g. a client rate that keeps up with thousands of pods."""
    node_address: str | None = None
    """Serve on this address instead of loopback, for a real kubelet and its pods
    (``localkube.realnode``): kube-apiserver listens and advertises there, publishes itself as the
    ``kubernetes`` Service's endpoint (so in-cluster clients reach it through kube-proxy), and
    authorizes kubelets as a cluster does (``Node,RBAC`` with ``NodeRestriction``)."""
    scheduler_config: Mapping[str, Any] | None = None
    """A ``KubeSchedulerConfiguration`` (``kubescheduler.config.k8s.io/v1``) for kube-scheduler's
    ``--config``, for what only the file can set (plugin arguments, profiles). The plane fills in
    ``clientConnection.kubeconfig`` and turns leader election off, as its flags do otherwise:
    kube-scheduler ignores ``--kubeconfig``, ``--kube-api-qps`` and ``--leader-elect`` once it
    is given a file."""


@dataclass
class ControlPlaneState:
    """What ``up`` started: persisted in ``state.json`` so ``down`` works from another process."""

    bin_dir: str
    etcd_port: int
    etcd_peer_port: int
    apiserver_port: int
    controller_manager_port: int
    pids: dict[str, int] = field(default_factory=dict)
    scheduler_port: int = 0
    """kube-scheduler's secure port; 0 when this plane runs no scheduler."""
    address: str = "127.0.0.1"
    """Where kube-apiserver listens (``ControlPlaneSettings.node_address`` or loopback)."""

    @property
    def server(self) -> str:
        return f"https://{self.address}:{self.apiserver_port}"

    @property
    def etcd_url(self) -> str:
        return f"http://127.0.0.1:{self.etcd_port}"

    def ports_of(self, component: str) -> tuple[int, ...]:
        """The ports ``component`` listens on (what it needs back when started again)."""
        return {
            "etcd": (self.etcd_port, self.etcd_peer_port),
            "kube-apiserver": (self.apiserver_port,),
            "kube-controller-manager": (self.controller_manager_port,),
            SCHEDULER: (self.scheduler_port,) if self.scheduler_port else (),
        }[component]


@dataclass(frozen=True)
class PlanePaths:
    """Where a control plane's files are, below its state directory."""

    dir: Path

    @property
    def pki(self) -> Path:
        return self.dir / "pki"

    @property
    def logs(self) -> Path:
        return self.dir / "logs"

    @property
    def kubeconfig(self) -> Path:
        """The admin's kubeconfig, which every component of the plane uses too."""
        return self.dir / "kubeconfig"

    @property
    def kubectl(self) -> Path:
        return self.dir / "bin" / "kubectl"

    @property
    def state_file(self) -> Path:
        return self.dir / "state.json"

    @property
    def scheduler_config(self) -> Path:
        """kube-scheduler's ``--config`` when ``ControlPlaneSettings.scheduler_config`` is set."""
        return self.dir / "scheduler-config.json"

    def log(self, component: str) -> Path:
        return self.logs / f"{component}.log"
