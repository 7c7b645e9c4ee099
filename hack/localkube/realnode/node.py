"""One real Kubernetes node on this machine, beside a local control plane.

Why: the images built from the project's Dockerfiles must be seen running as a cluster runs
them: real containers under the manifests' securityContext, real pod networking and DNS between
replicas, logs served by the real kubelet. The exec-mode test kubelet (``localkube.kubelet.core``)
stays for fast end-to-end tests and ``make demo``; this node is for what only it can show.

What ``RealNode.up`` starts, in order: the node bridge and address (``localkube.realnode.network``),
containerd with the project's images imported, the kubelet (registered as one Ready node),
CoreDNS behind the ``kube-dns`` Service, and kube-proxy in nftables mode. ``down`` removes all of
it (``localkube.realnode.teardown``). One real node runs per machine: kube-proxy's nftables table
and the bridges have fixed names, and a claim file in ``/run`` says whose node runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from certs import CertificateAuthority
from localkube.base import processes
from localkube.base.api import Api, ApiError
from localkube.base.builds import run_build_script
from localkube.base.paths import PROJECT_ROOT
from localkube.base.ports import free_port
from localkube.plane.controlplane import ControlPlane, find_binaries
from localkube.realnode import containerd, network, teardown
from localkube.realnode.components import (
    NodePaths,
    corefile,
    dns_objects,
    kube_proxy_config,
    kubelet_config,
)
from localkube.realnode.network import NodeNetwork

CLAIM = Path("/run/mxjob-operator/real-node.json")
"""Which state directory's node runs on this machine (one at a time)."""
KUBE_PROXY_TABLE = "kube-proxy"
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


def node_bin_dir() -> Path:
    """containerd, its shim, ctr and CoreDNS, built once per machine."""
    return run_build_script(PROJECT_ROOT / "hack" / "build-node-binaries.sh")


def preflight() -> list[str]:
    """Why a real node cannot run on this machine; empty when it can."""
    problems: list[str] = []
    if os.geteuid() != 0:
        problems.append("the real node needs root (containerd, runc, bridges, nftables, mounts)")
    needs = {
        "runc": containerd.RUNC,
        "the CNI bridge plugin": f"{containerd.CNI_BIN_DIR}/bridge",
        "the CNI host-local plugin": f"{containerd.CNI_BIN_DIR}/host-local",
    }
    for what, path in needs.items():
        if not Path(path).exists():
            problems.append(f"{what} is missing ({path}): run `make node-packages`")
    for command in ("nft", "ip", "umount"):
        if shutil.which(command) is None:
            problems.append(f"`{command}` is not installed: run `make node-packages`")
    if "overlay" not in Path("/proc/filesystems").read_text():
        problems.append("the kernel has no overlay filesystem (containerd's overlayfs snapshotter)")
    return problems


class RealNode:
    """Start, describe and tear down the machine's real node."""

    def __init__(self, settings: RealNodeSettings) -> None:
        self.settings = settings
        self.net = settings.network
        self.dir = settings.state_dir.resolve()
        self.paths = NodePaths(self.dir)
        self.containerd_paths = containerd.ContainerdPaths.under(self.paths.containerd)
        self._state_file = self.dir / "node.json"

    # -- state ---------------------------------------------------------------------------------
    def state(self) -> RealNodeState:
        try:
            return RealNodeState(**json.loads(self._state_file.read_text()))
        except (OSError, ValueError, TypeError):
            return RealNodeState()

    def _save(self, state: RealNodeState) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self._state_file.write_text(json.dumps(asdict(state), indent=2))

    # -- the machine-wide claim ----------------------------------------------------------------
    def claim(self) -> None:
        """Make this the machine's one real node, tearing down one a killed run left.

        Refuses while another live node holds the claim: two would fight over kube-proxy's
        table, the bridges and the node address.
        """
        with contextlib.suppress(OSError, ValueError):
            other = Path(json.loads(CLAIM.read_text())["state_dir"])
            if other != self.dir:
                previous = RealNode(RealNodeSettings(state_dir=other))
                live = [n for n, p in previous.state().pids.items() if processes.running(p)]
                if live:
                    raise RealNodeError(
                        f"a real node from {other} runs on this machine ({', '.join(live)}); "
                        f"stop it first (python -m localkube dev-down --state-dir ...)"
                    )
                previous.down()
        CLAIM.parent.mkdir(parents=True, exist_ok=True)
        CLAIM.write_text(json.dumps({"state_dir": str(self.dir)}))

    def prepare_network(self) -> None:
        """The node bridge and address: kube-apiserver listens there, so this comes first."""
        problems = preflight()
        if problems:
            raise RealNodeError("the real node cannot run here: " + "; ".join(problems))
        self.claim()
        network.create_node_bridge(self.net)

    # -- start ---------------------------------------------------------------------------------
    def up(
        self,
        plane: ControlPlane,
        *,
        images: Sequence[Path],
        sandbox_image: str,
        log: Callable[[str], None] = lambda line: None,
    ) -> RealNodeState:
        """Start the node against ``plane``: after ``prepare_network``, then ``plane.up()`` with
        ``node_address`` = the node IP (kube-apiserver listens on the node bridge, so it must
        not be removed from under it).

        ``images`` are docker-archives imported into containerd before the kubelet starts;
        ``sandbox_image`` (one of them) is containerd's pod sandbox.
        """
        if not network.link_exists(self.net.node_bridge):
            raise RealNodeError("RealNode.prepare_network must run before the control plane")
        state = RealNodeState(
            ip_forward_before=network.read_ip_forward(), imported=[a.name for a in images]
        )
        self._save(state)
        kube_bin, node_bin = find_binaries(), node_bin_dir()
        for directory in (self.paths.logs, self.paths.pki, self.paths.pod_logs):
            directory.mkdir(parents=True, exist_ok=True)
        try:
            self._write_credentials(plane)
            started = time.monotonic()
            self._start_containerd(state, node_bin, sandbox_image=sandbox_image)
            state.timings["containerd"] = time.monotonic() - started
            log(f"containerd ready in {state.timings['containerd']:.1f} s")
            mark = time.monotonic()
            for archive in images:
                containerd.import_image(node_bin, self.containerd_paths.socket, archive)
            state.timings["images"] = time.monotonic() - mark
            log(f"{len(images)} images imported in {state.timings['images']:.1f} s")
            mark = time.monotonic()
            self._start_kubelet(state, plane, kube_bin)
            state.timings["kubelet"] = time.monotonic() - mark
            log(f"node {self.settings.node_name} Ready in {state.timings['kubelet']:.1f} s")
            mark = time.monotonic()
            self._start_dns(state, plane, node_bin)
            self._start_kube_proxy(state, kube_bin)
            state.timings["services"] = time.monotonic() - mark
            state.timings["total"] = time.monotonic() - started
            log(f"CoreDNS and kube-proxy ready in {state.timings['services']:.1f} s")
        except BaseException:
            self.down()
            raise
        self._save(state)
        return state

    def _spawn(self, state: RealNodeState, name: str, argv: list[str]) -> int:
        with (self.paths.logs / f"{name}.log").open("ab") as log_file:
            process = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                cwd=self.dir,
            )
        state.pids[name] = process.pid
        self._save(state)
        return process.pid

    def _wait(self, what: str, check: Callable[[], bool], state: RealNodeState) -> None:
        deadline = time.monotonic() + self.settings.ready_timeout
        while not check():
            for name, pid in state.pids.items():
                if not processes.running(pid):
                    raise RealNodeError(
                        f"{name} exited while waiting for {what}; its log "
                        f"({self.paths.logs / name}.log) ends:\n{self.tail(name)}"
                    )
            if time.monotonic() > deadline:
                raise RealNodeError(
                    f"{what} not ready after {self.settings.ready_timeout:g} s; see "
                    f"{self.paths.logs}/"
                )
            time.sleep(0.2)

    def tail(self, name: str, lines: int = 25) -> str:
        with contextlib.suppress(OSError):
            text = (self.paths.logs / f"{name}.log").read_text(errors="replace")
            return "\n".join(text.splitlines()[-lines:])
        return ""

    def _write_credentials(self, plane: ControlPlane) -> None:
        """Certificates from the plane's CA and a kubeconfig for each program.

        The kubelet is ``system:node:<name>`` (the Node authorizer's identity); kube-proxy and
        CoreDNS are the users kubeadm's RBAC names (``system:kube-proxy``, ``system:coredns``).
        """
        ca = plane.certificate_authority()
        state = plane.state()
        assert state is not None
        node = self.settings.node_name
        serving = ca.issue_serving(hosts=(self.net.node_ip, node), common_name=node)
        (self.paths.pki / "kubelet-serving.crt").write_bytes(serving.cert_pem)
        (self.paths.pki / "kubelet-serving.key").write_bytes(serving.key_pem)
        users = {
            "kubelet": ca.issue_client(
                common_name=f"system:node:{node}", organizations=("system:nodes",)
            ),
            "kube-proxy": ca.issue_client(common_name="system:kube-proxy"),
            "coredns": ca.issue_client(common_name="system:coredns"),
        }
        for name, pair in users.items():
            write_kubeconfig(
                self.paths.pki / f"{name}.kubeconfig",
                server=state.server,
                ca=ca,
                cert_pem=pair.cert_pem,
                key_pem=pair.key_pem,
            )
        for path in self.paths.pki.iterdir():
            path.chmod(0o600)

    def _start_containerd(
        self, state: RealNodeState, node_bin: Path, *, sandbox_image: str
    ) -> None:
        config = self.paths.containerd / "config.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        # The sandbox image is pinned here; the kubelet learns it from containerd (CRI status).
        config.write_text(
            containerd.config_toml(self.containerd_paths, sandbox_image=sandbox_image)
        )
        network.write_cni_config(
            self.net, conf_dir=self.containerd_paths.cni_conf_dir, ipam_dir=self.paths.ipam
        )
        self._spawn(state, "containerd", [str(node_bin / "containerd"), f"--config={config}"])

        def answers() -> bool:
            try:
                containerd.ctr(node_bin, self.containerd_paths.socket, "version", timeout=5)
            except (containerd.ContainerdError, subprocess.TimeoutExpired):
                return False
            return True

        self._wait("containerd", answers, state)

    def _start_kubelet(self, state: RealNodeState, plane: ControlPlane, kube_bin: Path) -> None:
        for directory in teardown.cgroup_dirs(self.settings.cgroup_root):
            directory.mkdir(parents=True, exist_ok=True)
        healthz_port = free_port()
        config = kubelet_config(
            self.net,
            self.paths,
            client_ca=plane.pki / "ca.crt",
            cgroup_root=self.settings.cgroup_root,
            healthz_port=healthz_port,
        )
        config_file = self.paths.root / "kubelet-config.json"
        config_file.write_text(json.dumps(config, indent=2))
        self._spawn(
            state,
            "kubelet",
            [
                str(kube_bin / "kubelet"),
                f"--config={config_file}",
                f"--kubeconfig={self.paths.pki / 'kubelet.kubeconfig'}",
                f"--root-dir={self.paths.kubelet_root}",
                f"--cert-dir={self.paths.pki}",
                f"--hostname-override={self.settings.node_name}",
                f"--node-ip={self.net.node_ip}",
                "--v=1",
            ],
        )
        api = Api.from_kubeconfig(plane.kubeconfig)
        self._wait("the node's Ready condition", lambda: self._node_ready(api), state)

    def _node_ready(self, api: Api) -> bool:
        try:
            node = api.request("GET", f"/api/v1/nodes/{self.settings.node_name}")
        except ApiError:
            return False
        conditions = node.get("status", {}).get("conditions") or []
        return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

    def _start_dns(self, state: RealNodeState, plane: ControlPlane, node_bin: Path) -> None:
        for document in dns_objects(self.net):
            plane.kubectl("apply", "-f", "-", input_text=json.dumps(document))
        ready_port = free_port()
        path = self.paths.root / "Corefile"
        path.write_text(
            corefile(
                self.net, kubeconfig=self.paths.pki / "coredns.kubeconfig", ready_port=ready_port
            )
        )
        self._spawn(state, "coredns", [str(node_bin / "coredns"), "-conf", str(path)])
        url = f"http://{self.net.node_ip}:{ready_port}/ready"
        self._wait("CoreDNS", lambda: _http_ok(url), state)

    def _start_kube_proxy(self, state: RealNodeState, kube_bin: Path) -> None:
        healthz_port, metrics_port = free_port(), free_port()
        config = kube_proxy_config(
            self.net,
            kubeconfig=self.paths.pki / "kube-proxy.kubeconfig",
            node_name=self.settings.node_name,
            healthz_port=healthz_port,
            metrics_port=metrics_port,
        )
        path = self.paths.root / "kube-proxy-config.json"
        path.write_text(json.dumps(config, indent=2))
        self._spawn(state, "kube-proxy", [str(kube_bin / "kube-proxy"), f"--config={path}"])
        url = f"http://{self.net.node_ip}:{healthz_port}/healthz"
        self._wait("kube-proxy", lambda: _http_ok(url), state)

    # -- describe ------------------------------------------------------------------------------
    def running(self) -> bool:
        state = self.state()
        return bool(state.pids) and all(
            processes.running(state.pids.get(name, 0)) for name in PROGRAMS
        )

    def ctr(self, *args: str) -> str:
        """``ctr`` against this node's containerd (CRI namespace)."""
        return containerd.ctr(node_bin_dir(), self.containerd_paths.socket, *args)

    # -- stop ----------------------------------------------------------------------------------
    def down(self) -> None:
        """Remove everything the node made; safe when nothing runs, and after a killed run."""
        state = self.state()
        # Nothing may restart containers while they are killed: kubelet first.
        for name in ("kubelet", "kube-proxy", "coredns"):
            processes.stop([state.pids.get(name, 0)])
        teardown.kill_cgroup_processes(self.settings.cgroup_root)
        socket = str(self.containerd_paths.socket)
        shims = [
            pid
            for pid in teardown.processes_mentioning(socket)
            if pid != state.pids.get("containerd")
        ]
        processes.stop([state.pids.get("containerd", 0)])
        shim_ids = [_shim_id(pid) for pid in shims]
        processes.stop(shims, timeout=2)
        for shim_id in filter(None, shim_ids):
            for path in containerd.shim_socket_paths(self.containerd_paths.socket, shim_id):
                path.unlink(missing_ok=True)
        processes.stop(teardown.processes_mentioning(str(self.dir)), timeout=5)
        teardown.unmount_all(self.dir)
        teardown.remove_cgroups(self.settings.cgroup_root)
        teardown.delete_nft_tables(KUBE_PROXY_TABLE)
        network.delete_bridges(self.net)
        teardown.remove_container_log_links(self.dir)
        teardown.remove_cni_cache(self.dir)
        teardown.KUBELET_DEVICE_PLUGIN_SOCKET.unlink(missing_ok=True)
        teardown.remove_empty_directories(teardown.HOST_DIRECTORIES)
        if state.pids:
            network.restore_ip_forward(state.ip_forward_before)
        for name in ("containerd", "kubelet", "ipam", "pod-logs", "volume-plugins"):
            shutil.rmtree(self.dir / name, ignore_errors=True)
        self._state_file.unlink(missing_ok=True)
        with contextlib.suppress(OSError, ValueError):
            if Path(json.loads(CLAIM.read_text())["state_dir"]) == self.dir:
                CLAIM.unlink()
        teardown.remove_empty_directories([CLAIM.parent])


def _shim_id(pid: int) -> str | None:
    """The ``-id`` a runc shim was started with (its sockets are named after it)."""
    with contextlib.suppress(OSError):
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
        if "-id" in argv:
            return argv[argv.index("-id") + 1]
    return None


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def write_kubeconfig(
    path: Path, *, server: str, ca: CertificateAuthority, cert_pem: bytes, key_pem: bytes
) -> None:
    """A kubeconfig for one client certificate (files beside it, as the programs expect)."""
    stem = path.with_suffix("")
    cert, key, ca_file = stem.with_suffix(".crt"), stem.with_suffix(".key"), path.parent / "ca.crt"
    cert.write_bytes(cert_pem)
    key.write_bytes(key_pem)
    ca_file.write_bytes(ca.pair.cert_pem)
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "local", "cluster": {"server": server, "certificate-authority": str(ca_file)}}
        ],
        "users": [
            {"name": "user", "user": {"client-certificate": str(cert), "client-key": str(key)}}
        ],
        "contexts": [{"name": "local", "context": {"cluster": "local", "user": "user"}}],
        "current-context": "local",
    }
    path.write_text(json.dumps(config, indent=2))
