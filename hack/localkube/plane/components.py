"""The command line of each control plane component, from the plane's settings and state.

Pure: nothing here writes a file or starts a program (``localkube.plane.controlplane`` does),
so the flags each component gets can be read and tested on their own.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from localkube.plane.settings import (
    CONTROLLERS,
    SCHEDULER,
    SERVICE_CIDR,
    WORKLOAD_API,
    WORKLOAD_CONTROLLERS,
    WORKLOAD_FEATURE_GATES,
    ControlPlaneSettings,
    ControlPlaneState,
    PlanePaths,
)


def argv(
    component: str, settings: ControlPlaneSettings, state: ControlPlaneState, paths: PlanePaths
) -> list[str]:
    """``component``'s command line (one of ``COMPONENTS`` or ``SCHEDULER``)."""
    build = {
        "etcd": etcd_argv,
        "kube-apiserver": apiserver_argv,
        "kube-controller-manager": controller_manager_argv,
        SCHEDULER: scheduler_argv,
    }[component]
    return build(settings, state, paths)


def etcd_argv(
    settings: ControlPlaneSettings, state: ControlPlaneState, paths: PlanePaths
) -> list[str]:
    peer = f"http://127.0.0.1:{state.etcd_peer_port}"
    return [
        str(Path(state.bin_dir) / "etcd"),
        "--name=local",
        f"--data-dir={paths.dir / 'etcd'}",
        f"--listen-client-urls={state.etcd_url}",
        f"--advertise-client-urls={state.etcd_url}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=local={peer}",
        "--unsafe-no-fsync=true",
        "--log-level=warn",
    ]


def apiserver_argv(
    settings: ControlPlaneSettings, state: ControlPlaneState, paths: PlanePaths
) -> list[str]:
    pki = paths.pki
    return [
        str(settings.apiserver_binary or Path(state.bin_dir) / "kube-apiserver"),
        f"--etcd-servers={state.etcd_url}",
        f"--bind-address={state.address}",
        f"--advertise-address={state.address}",
        f"--secure-port={state.apiserver_port}",
        *_network_apiserver_args(settings),
        f"--tls-cert-file={pki / 'apiserver.crt'}",
        f"--tls-private-key-file={pki / 'apiserver.key'}",
        f"--client-ca-file={pki / 'ca.crt'}",
        # Logs: dial the node's InternalIP (the test kubelets' 127.0.0.1, not their made-up
        # host names), check the kubelet's certificate against the cluster CA (which signs
        # the kubelets' serving CSRs) and present a client certificate the kubelet checks.
        "--kubelet-preferred-address-types=InternalIP",
        f"--kubelet-certificate-authority={pki / 'ca.crt'}",
        f"--kubelet-client-certificate={pki / 'apiserver-kubelet-client.crt'}",
        f"--kubelet-client-key={pki / 'apiserver-kubelet-client.key'}",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--service-account-key-file={pki / 'sa.pub'}",
        f"--service-account-signing-key-file={pki / 'sa.key'}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--allow-privileged=true",
        "--profiling=false",
        f"--cert-dir={paths.dir / 'apiserver-certs'}",
        "--v=1",
        *_workload_apiserver_args(settings),
        *settings.extra_apiserver_args,
    ]


def _network_apiserver_args(settings: ControlPlaneSettings) -> list[str]:
    if settings.node_address is None:
        # No kubelet and no real Service network: do not publish the API server's own
        # Endpoints (a loopback address is not a valid endpoint).
        return ["--endpoint-reconciler-type=none", "--authorization-mode=RBAC"]
    return [
        "--endpoint-reconciler-type=lease",
        "--authorization-mode=Node,RBAC",
        "--enable-admission-plugins=NodeRestriction",
    ]


def _workload_apiserver_args(settings: ControlPlaneSettings) -> list[str]:
    if not settings.workload_scheduling:
        return []
    return [
        f"--runtime-config={WORKLOAD_API}=true",
        f"--feature-gates={WORKLOAD_FEATURE_GATES}",
    ]


def scheduler_argv(
    settings: ControlPlaneSettings, state: ControlPlaneState, paths: PlanePaths
) -> list[str]:
    """With ``settings.scheduler_config``, kube-scheduler reads ``paths.scheduler_config``
    (:func:`scheduler_configuration`, which the plane writes there before starting it)."""
    if settings.scheduler_config is None:
        client = [f"--kubeconfig={paths.kubeconfig}", "--leader-elect=false"]
    else:
        client = [f"--config={paths.scheduler_config}"]
    return [
        str(Path(state.bin_dir) / SCHEDULER),
        *client,
        f"--authentication-kubeconfig={paths.kubeconfig}",
        f"--authorization-kubeconfig={paths.kubeconfig}",
        "--bind-address=127.0.0.1",
        f"--secure-port={state.scheduler_port}",
        f"--cert-dir={paths.dir / 'scheduler-certs'}",
        *([f"--feature-gates={WORKLOAD_FEATURE_GATES}"] if settings.workload_scheduling else []),
        "--v=1",
        *settings.extra_scheduler_args,
    ]


def scheduler_configuration(config: Mapping[str, Any], *, kubeconfig: Path) -> dict[str, Any]:
    """``config`` with the plane's ``kubeconfig`` and no leader election: what kube-scheduler's
    flags set otherwise, which it ignores once given a file."""
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        **config,
        "clientConnection": {
            **(config.get("clientConnection") or {}),
            "kubeconfig": str(kubeconfig),
        },
        "leaderElection": {"leaderElect": False},
    }


def controller_manager_argv(
    settings: ControlPlaneSettings, state: ControlPlaneState, paths: PlanePaths
) -> list[str]:
    kubeconfig, pki = paths.kubeconfig, paths.pki
    return [
        str(Path(state.bin_dir) / "kube-controller-manager"),
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        f"--controllers={controllers(settings)}",
        "--bind-address=127.0.0.1",
        f"--secure-port={state.controller_manager_port}",
        f"--cert-dir={paths.dir / 'kcm-certs'}",
        f"--root-ca-file={pki / 'ca.crt'}",
        f"--service-account-private-key-file={pki / 'sa.key'}",
        f"--cluster-signing-cert-file={pki / 'ca.crt'}",
        f"--cluster-signing-key-file={pki / 'ca.key'}",
        "--leader-elect=false",
        "--use-service-account-credentials=false",
        "--v=1",
        *([f"--feature-gates={WORKLOAD_FEATURE_GATES}"] if settings.workload_scheduling else []),
        *settings.extra_controller_manager_args,
    ]


def controllers(settings: ControlPlaneSettings) -> str:
    """kube-controller-manager's ``--controllers``."""
    names = [CONTROLLERS, *settings.extra_controllers]
    if settings.workload_scheduling:
        names.append(WORKLOAD_CONTROLLERS)
    return ",".join(names)
