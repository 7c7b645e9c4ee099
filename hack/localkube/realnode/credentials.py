"""The real node's certificates and kubeconfigs, issued by the control plane's CA.

The kubelet is ``system:node:<name>`` (the Node authorizer's identity) and serves its API with a
certificate for the node address; kube-proxy and CoreDNS are the users kubeadm's RBAC names
(``system:kube-proxy``, ``system:coredns``).
"""

from __future__ import annotations

from localkube.plane.controlplane import ControlPlane
from localkube.plane.kubeconfig import write_kubeconfig
from localkube.realnode.components import NodePaths


def write_credentials(
    plane: ControlPlane, paths: NodePaths, *, node_name: str, node_ip: str
) -> None:
    """Into ``paths.pki``: the kubelet's serving certificate and ``<program>.kubeconfig`` for
    the kubelet, kube-proxy and CoreDNS (every file mode 0600)."""
    ca = plane.certificate_authority()
    state = plane.state()
    assert state is not None
    serving = ca.issue_serving(hosts=(node_ip, node_name), common_name=node_name)
    (paths.pki / "kubelet-serving.crt").write_bytes(serving.cert_pem)
    (paths.pki / "kubelet-serving.key").write_bytes(serving.key_pem)
    users = {
        "kubelet": ca.issue_client(
            common_name=f"system:node:{node_name}", organizations=("system:nodes",)
        ),
        "kube-proxy": ca.issue_client(common_name="system:kube-proxy"),
        "coredns": ca.issue_client(common_name="system:coredns"),
    }
    for name, pair in users.items():
        write_kubeconfig(
            paths.pki / f"{name}.kubeconfig",
            server=state.server,
            ca=ca,
            cert_pem=pair.cert_pem,
            key_pem=pair.key_pem,
        )
    for path in paths.pki.iterdir():
        path.chmod(0o600)
