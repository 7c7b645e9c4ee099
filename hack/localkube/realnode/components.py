"""What the real node runs beside containerd, as configurations: kubelet, kube-proxy, CoreDNS.

Pure functions from the node's paths and network to the files each program reads, so what each
setting is for can be read (and tested) apart from starting anything. Every path is inside the
node's state directory and every listener on the node address, so nothing collides with the
host's own or with another control plane's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localkube.realnode.network import NodeNetwork

CLUSTER_DOMAIN = "cluster.local"
KUBELET_PORT = 10250


@dataclass(frozen=True)
class NodePaths:
    """Where the real node keeps each program's files."""

    root: Path

    @property
    def containerd(self) -> Path:
        return self.root / "containerd"

    @property
    def kubelet_root(self) -> Path:
        return self.root / "kubelet"

    @property
    def pod_logs(self) -> Path:
        return self.root / "pod-logs"

    @property
    def volume_plugins(self) -> Path:
        return self.root / "volume-plugins"

    @property
    def ipam(self) -> Path:
        return self.root / "ipam"

    @property
    def pki(self) -> Path:
        return self.root / "pki"

    @property
    def logs(self) -> Path:
        return self.root / "logs"


def kubelet_config(
    network: NodeNetwork, paths: NodePaths, *, client_ca: Path, cgroup_root: str, healthz_port: int
) -> dict[str, Any]:
    """The ``KubeletConfiguration``.

    cgroupfs under a cgroup root of the node's own (torn down with it); cgroup v1 accepted (this
    machine's hierarchies are hybrid); no eviction or image garbage collection that a busy disk
    could trigger (imported images cannot be pulled again); the serving certificate is issued by
    the control plane's CA, which kube-apiserver checks before it fetches logs. No iptables
    chains: the kubelet makes them (a hint and a martian-packet rule) for an iptables-mode
    kube-proxy, which this node does not run (:func:`kube_proxy_config` is nftables), and they
    would outlive the node in the host's own ``filter`` table.
    """
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": network.node_ip,
        "port": KUBELET_PORT,
        "readOnlyPort": 0,
        "healthzBindAddress": network.node_ip,
        "healthzPort": healthz_port,
        "tlsCertFile": str(paths.pki / "kubelet-serving.crt"),
        "tlsPrivateKeyFile": str(paths.pki / "kubelet-serving.key"),
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(client_ca)},
        },
        "authorization": {"mode": "Webhook"},
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": cgroup_root,
        "cgroupsPerQOS": True,
        "enforceNodeAllocatable": ["pods"],
        "failCgroupV1": False,
        "failSwapOn": False,
        "clusterDNS": [network.dns_service_ip],
        "clusterDomain": CLUSTER_DOMAIN,
        "resolvConf": "",
        "podLogsDir": str(paths.pod_logs),
        "volumePluginDir": str(paths.volume_plugins),
        "containerRuntimeEndpoint": f"unix://{paths.containerd / 'containerd.sock'}",
        "evictionHard": {
            "memory.available": "100Mi",
            "nodefs.available": "0%",
            "imagefs.available": "0%",
            "nodefs.inodesFree": "0%",
        },
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "maxPods": 60,
        "serializeImagePulls": False,
        "protectKernelDefaults": False,
        "makeIPTablesUtilChains": False,
        "registerNode": True,
        "nodeStatusReportFrequency": "10s",
        "nodeStatusUpdateFrequency": "5s",
        "syncFrequency": "10s",
        "fileCheckFrequency": "0s",
        "shutdownGracePeriod": "0s",
        "logging": {"format": "text"},
    }


def kube_proxy_config(
    network: NodeNetwork, *, kubeconfig: Path, node_name: str, healthz_port: int, metrics_port: int
) -> dict[str, Any]:
    """The ``KubeProxyConfiguration``: nftables mode, Services only on the node address.

    ``masqueradeAll`` sends the replies of a pod that a Service sent to a pod on the same bridge
    back through the host (without br_netfilter, bridged replies would skip the reverse
    translation). The conntrack sizes are left as the host has them (0: do not touch).
    """
    return {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "mode": "nftables",
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "hostnameOverride": node_name,
        "bindAddress": network.node_ip,
        "healthzBindAddress": f"{network.node_ip}:{healthz_port}",
        "metricsBindAddress": f"{network.node_ip}:{metrics_port}",
        "clusterCIDR": network.pod_cidr,
        "nodePortAddresses": [f"{network.node_ip}/32"],
        "detectLocalMode": "ClusterCIDR",
        "nftables": {"masqueradeAll": True, "syncPeriod": "30s", "minSyncPeriod": "0s"},
        "conntrack": {
            "maxPerCore": 0,
            "min": 0,
            "tcpEstablishedTimeout": "0s",
            "tcpCloseWaitTimeout": "0s",
        },
    }


def corefile(network: NodeNetwork, *, kubeconfig: Path, ready_port: int) -> str:
    """CoreDNS answers for the cluster domain from the API server, and nothing else.

    Names outside the cluster get NXDOMAIN at once: no upstream resolver is reachable here, and
    a forward to one would make every such lookup wait for a timeout.
    """
    return f"""{CLUSTER_DOMAIN}:53 in-addr.arpa:53 {{
    bind {network.node_ip}
    errors
    ready {network.node_ip}:{ready_port}
    kubernetes {CLUSTER_DOMAIN} in-addr.arpa {{
        kubeconfig {kubeconfig}
        pods insecure
        fallthrough in-addr.arpa
    }}
    cache 5
}}
.:53 {{
    bind {network.node_ip}
    errors
    template ANY ANY {{
        rcode NXDOMAIN
    }}
}}
"""


def dns_objects(network: NodeNetwork) -> list[dict[str, Any]]:
    """``kube-dns``: a selectorless Service on the DNS ClusterIP and the EndpointSlice that
    points it at CoreDNS on the node address, so pods reach DNS through kube-proxy as on a
    cluster."""
    labels = {"k8s-app": "kube-dns", "kubernetes.io/name": "CoreDNS"}
    ports = [("dns", "UDP"), ("dns-tcp", "TCP")]
    return [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "kube-dns", "namespace": "kube-system", "labels": labels},
            "spec": {
                "clusterIP": network.dns_service_ip,
                "ports": [{"name": n, "port": 53, "protocol": p} for n, p in ports],
            },
        },
        {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": "kube-dns-node",
                "namespace": "kube-system",
                "labels": {
                    "kubernetes.io/service-name": "kube-dns",
                    "endpointslice.kubernetes.io/managed-by": "localkube.realnode",
                },
            },
            "addressType": "IPv4",
            "endpoints": [{"addresses": [network.node_ip], "conditions": {"ready": True}}],
            "ports": [{"name": n, "port": 53, "protocol": p} for n, p in ports],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "system:coredns"},
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": ["endpoints", "services", "pods", "namespaces"],
                    "verbs": ["list", "watch"],
                },
                {
                    "apiGroups": ["discovery.k8s.io"],
                    "resources": ["endpointslices"],
                    "verbs": ["list", "watch"],
                },
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "system:coredns"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "system:coredns",
            },
            "subjects": [
                {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "system:coredns"}
            ],
        },
    ]
