"""kube-network-policies on the real node: NetworkPolicy enforced for real, started on demand.

The real node's CNI bridge enforces no NetworkPolicy. kube-network-policies (kubernetes-sigs,
pinned as ``KUBE_NETWORK_POLICIES_VERSION``, built by ``hack/build-kube-network-policies.sh``)
does, the way a cluster's network plugin would: an ``inet kube-network-policies`` nftables table
sends the first packet of every connection to or from a pod that a policy selects to an nfqueue,
and the program's verdict (from the pods, namespaces and policies it watches) accepts or drops
it. It runs as a host process beside the kubelet, as its DaemonSet runs it with host networking,
only while a test asks for it (:func:`enforcing`): every other real-node test keeps a node that
enforces nothing.

This machine's kernel has no nftables ``queue`` expression, so the program's own table is
refused (it retries its sync now and then, and says so in its log) and the node writes the
same diversion with xtables' ``NFQUEUE`` target (:mod:`localkube.realnode.nfqueue`): the
verdicts are still the program's. What is judged, as in the program's table
(pkg/networkpolicy/controller.go): the first packet of each connection, at ``postrouting``, so
pod-to-pod traffic (bridged, through ``bridge-nf-call-iptables``) and what the host sends to
pods, but never what pods send to the host (that ends in ``input``): the API server and CoreDNS
listen on the node address here, so egress to them is never dropped on this node, whatever the
policies say. Packets of the host's root user (the kubelet's probes, kube-apiserver's admission
calls) pass before any policy, as NetworkPolicy's documentation says node traffic does.

The program takes no kubeconfig: it reads client-go's in-cluster configuration
(``KUBERNETES_SERVICE_HOST``/``_PORT`` and ``/var/run/secrets/kubernetes.io/serviceaccount``).
So it runs in a mount namespace of its own, where a small tmpfs over ``/run`` holds the token of
its release's own ServiceAccount (the RBAC of its ``install.yaml``) and the plane's CA: nothing
is written to the host's ``/run``. :meth:`Enforcer.stop` removes the diversion first (rules
left behind would send the node's pod traffic to a queue nobody reads: dropped), then stops the
program with SIGINT (the signal on which it cleans up) and deletes its table should a kernel
have taken it; ``RealNode.down`` removes both too, after a killed run.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import time
import urllib.parse
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from localkube.base import programs
from localkube.base.paths import PROJECT_ROOT
from localkube.base.ports import free_port
from localkube.realnode import nfqueue
from localkube.realnode.cluster import RealCluster
from localkube.realnode.settings import NETWORK_POLICY_TABLE
from localkube.realnode.teardown import delete_nft_tables
from localkube.thirdparty.base import GoModulePin

PIN: Final = GoModulePin(
    module="sigs.k8s.io/kube-network-policies",
    version_variable="KUBE_NETWORK_POLICIES_VERSION",
    module_dir=PROJECT_ROOT / "hack" / "kube-network-policies",
    build_script=PROJECT_ROOT / "hack" / "build-kube-network-policies.sh",
)
"""Built by ``hack/build-kube-network-policies.sh`` (about two minutes the first time)."""
NFQUEUE: Final = Path("/proc/net/netfilter/nfnetlink_queue")
"""Present when the kernel has nfnetlink_queue (built in, or loaded): the verdicts' channel; a
queue a program has bound is a line of it, its number first."""
NAMESPACE: Final = "kube-system"
SERVICE_ACCOUNT: Final = "kube-network-policies"
"""As the release's ``install.yaml`` names it (its ClusterRole reads pods, namespaces and
networkpolicies)."""
IN_CLUSTER_SECRETS: Final = "/run/secrets/kubernetes.io/serviceaccount"
"""client-go's ``/var/run/secrets/...`` (``/var/run`` is ``/run``)."""
TOKEN_SECONDS: Final = 6 * 3600
QUEUE_ID: Final = 100
MOUNT_SCRIPT: Final = (
    'secrets="$1"; shift; '
    "mount -t tmpfs -o mode=0755,size=1m tmpfs /run && "
    f"mkdir -p {IN_CLUSTER_SECRETS} && "
    f'cp "$secrets/token" "$secrets/ca.crt" {IN_CLUSTER_SECRETS}/ && '
    'exec "$@"'
)
"""Run by ``sh`` inside the private mount namespace: the tmpfs, the two files, then the
program in the shell's place (the pid started is the program's)."""


class NetworkPolicyError(RuntimeError):
    """kube-network-policies cannot run here or did not start; the message says why."""


def missing() -> str | None:
    """Why NetworkPolicy cannot be enforced on this machine's real node; None when it can."""
    if not NFQUEUE.exists():
        return f"the kernel has no nfnetlink_queue ({NFQUEUE} is missing)"
    for command in ("unshare", "iptables-nft"):
        if shutil.which(command) is None:
            return f"`{command}` is not installed"
    return None


def queue_bound(queue: int, *, listing: str | None = None) -> bool:
    """Whether a program reads nfqueue ``queue`` (``listing``: the kernel's, by default)."""
    text = NFQUEUE.read_text() if listing is None else listing
    return any(line.split()[:1] == [str(queue)] for line in text.splitlines())


def argv(binary: Path, *, node_name: str, metrics_address: str) -> list[str]:
    """The program's command line: this node's pods only, no NRI (the node's containerd has no
    NRI socket: pod addresses come from the API server), closed when it stops answering
    (``--fail-open=false``, the release's default: a test must see drops, never a bypass), and
    without the DNS workaround for kernels before 6.12 (it needs the ``queue`` expression too)."""
    return [
        str(binary),
        f"--hostname-override={node_name}",
        "--disable-nri",
        "--fail-open=false",
        "--netfilter-bug-1766-fix=false",
        f"--nfqueue-id={QUEUE_ID}",
        f"--metrics-bind-address={metrics_address}",
        "--v=2",
    ]


def in_own_mounts(command: Sequence[str], *, secrets: Path) -> list[str]:
    """``command`` run in a private mount namespace whose ``/run`` holds ``secrets``'s
    ``token`` and ``ca.crt`` where client-go's in-cluster configuration reads them."""
    return [
        "unshare", "--mount", "--propagation", "private",
        "sh", "-c", MOUNT_SCRIPT, "kube-network-policies", str(secrets), *command,
    ]  # fmt: skip


def install_rbac(install_yaml: str) -> list[dict[str, Any]]:
    """The ServiceAccount, ClusterRole and binding of the release's ``install.yaml`` (its
    DaemonSet is what this module replaces)."""
    kinds = {"ServiceAccount", "ClusterRole", "ClusterRoleBinding"}
    return [d for d in yaml.safe_load_all(install_yaml) if d and d.get("kind") in kinds]


def api_endpoint(server: str) -> tuple[str, str]:
    """``KUBERNETES_SERVICE_HOST`` and ``_PORT`` for the plane's ``https://host:port``."""
    url = urllib.parse.urlsplit(server)
    if not url.hostname or not url.port:
        raise NetworkPolicyError(f"no host and port in the API server's address {server!r}")
    return url.hostname, str(url.port)


@dataclass
class Enforcer:
    """The running program, and how to stop it leaving nothing behind."""

    running: programs.Running
    metrics_url: str

    @property
    def log(self) -> Path:
        return self.running.program.log

    def alive(self) -> bool:
        return self.running.exit_code() is None

    def stop(self, *, timeout: float = 15) -> None:
        """The diversion removed, then SIGINT (the program deletes its table and exits after
        5 s), SIGKILL after ``timeout``; its table deleted whatever happened."""
        nfqueue.remove()
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.running.pid, signal.SIGINT)
            deadline = time.monotonic() + timeout
            while self.alive() and time.monotonic() < deadline:
                time.sleep(0.2)
        self.running.stop(timeout=5)
        delete_nft_tables(NETWORK_POLICY_TABLE, families=("inet",))


def _write_secrets(cluster: RealCluster, directory: Path) -> None:
    """The ServiceAccount's token (TokenRequest, as the kubelet projects it) and the CA."""
    plane = cluster.plane
    source = PIN.module_source() / "install.yaml"
    for document in install_rbac(source.read_text()):
        plane.kubectl("apply", "-f", "-", input_text=yaml.safe_dump(document))
    token = plane.kubectl(
        "create", "token", SERVICE_ACCOUNT, "-n", NAMESPACE, f"--duration={TOKEN_SECONDS}s"
    ).stdout.strip()
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o700)
    (directory / "token").write_text(token)
    shutil.copyfile(plane.pki / "ca.crt", directory / "ca.crt")


def start(cluster: RealCluster, *, timeout: float = 60) -> Enforcer:
    """Build (first time), give it its credentials, start it, wait until it reads its queue
    (its caches synced: it opens the queue only then), then divert the pods' packets to it."""
    problem = missing()
    if problem:
        raise NetworkPolicyError(problem)
    binary = PIN.build()
    node = cluster.node
    secrets = node.paths.root / "network-policies"
    _write_secrets(cluster, secrets)
    state = cluster.plane.state()
    if state is None:
        raise NetworkPolicyError("the control plane is not running")
    host, port = api_endpoint(state.server)
    metrics = f"{node.net.node_ip}:{free_port()}"
    command = argv(binary, node_name=node.settings.node_name, metrics_address=metrics)
    program = programs.Program(
        name="kube-network-policies",
        argv=in_own_mounts(command, secrets=secrets),
        log=node.paths.logs / "kube-network-policies.log",
        env=programs.with_env(KUBERNETES_SERVICE_HOST=host, KUBERNETES_SERVICE_PORT=port),
        banner=True,
    )
    enforcer = Enforcer(programs.start(program), metrics_url=f"http://{metrics}/metrics")
    try:
        programs.wait_ready(
            enforcer.running,
            lambda: queue_bound(QUEUE_ID) and programs.answers_200(enforcer.metrics_url),
            what="kube-network-policies to read its nfqueue",
            timeout=timeout,
            error=NetworkPolicyError,
            interval=0.2,
        )
        nfqueue.install(node.net.pod_cidr, queue=QUEUE_ID)
    except BaseException:
        enforcer.stop()
        raise
    return enforcer


@contextlib.contextmanager
def enforcing(cluster: RealCluster) -> Iterator[Enforcer]:
    """NetworkPolicy enforced on ``cluster``'s node while the block runs."""
    enforcer = start(cluster)
    try:
        yield enforcer
    finally:
        enforcer.stop()
