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
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path

from localkube.base import processes, programs
from localkube.base.api import Api, ApiError
from localkube.base.builds import run_build_script
from localkube.base.paths import PROJECT_ROOT
from localkube.base.ports import free_port
from localkube.base.programs import Program, Running
from localkube.plane.controlplane import ControlPlane, find_binaries
from localkube.realnode import containerd, network, nfqueue, teardown
from localkube.realnode.components import (
    NodePaths,
    corefile,
    dns_objects,
    kube_proxy_config,
    kubelet_config,
)
from localkube.realnode.credentials import write_credentials
from localkube.realnode.settings import (
    CLAIM,
    KUBE_PROXY_TABLE,
    NETWORK_POLICY_TABLE,
    PROGRAMS,
    RealNodeError,
    RealNodeSettings,
    RealNodeState,
)


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
        self._started: dict[str, Running] = {}
        """The programs this object started, by name (the others are adopted by pid)."""

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
            write_credentials(
                plane, self.paths, node_name=self.settings.node_name, node_ip=self.net.node_ip
            )
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

    # -- programs ------------------------------------------------------------------------------
    def _program(self, name: str, argv: Sequence[str] = ()) -> Program:
        return Program(name=name, argv=argv, log=self.paths.logs / f"{name}.log", cwd=self.dir)

    def _spawn(self, state: RealNodeState, name: str, argv: list[str]) -> None:
        started = programs.start(self._program(name, argv))
        self._started[name] = started
        state.pids[name] = started.pid
        self._save(state)

    def _running(self, name: str, pid: int) -> Running:
        """``name`` at ``pid``: the one this object started, or one adopted from ``node.json``
        (a pid that now runs another program is not it)."""
        started = self._started.get(name)
        if started is not None and started.pid == pid:
            return started
        return programs.adopt(self._program(name), pid, executable=name)

    def _wait(self, what: str, check: Callable[[], bool], state: RealNodeState) -> None:
        """Until ``check`` holds; fail at once, with its log's end, when a program exits."""
        programs.wait_ready(
            [self._running(name, pid) for name, pid in state.pids.items()],
            check,
            what=what,
            timeout=self.settings.ready_timeout,
            error=RealNodeError,
            interval=0.2,
        )

    def _stop(self, state: RealNodeState, name: str) -> None:
        self._running(name, state.pids.get(name, 0)).stop(timeout=10)
        self._started.pop(name, None)

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
        self._wait("containerd", self._containerd_answers, state)

    def _containerd_answers(self) -> bool:
        try:
            containerd.ctr(node_bin_dir(), self.containerd_paths.socket, "version", timeout=5)
        except (containerd.ContainerdError, subprocess.TimeoutExpired):
            return False
        return True

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
        self._wait("CoreDNS", lambda: programs.answers_200(url), state)

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
        self._wait("kube-proxy", lambda: programs.answers_200(url), state)

    # -- describe ------------------------------------------------------------------------------
    def running(self) -> bool:
        state = self.state()
        return bool(state.pids) and all(
            processes.running(state.pids.get(name, 0)) for name in PROGRAMS
        )

    def ctr(self, *args: str) -> str:
        """``ctr`` against this node's containerd (CRI namespace)."""
        return containerd.ctr(node_bin_dir(), self.containerd_paths.socket, *args)

    # -- disturb (the failure tests) -----------------------------------------------------------
    def restart(
        self, name: str, *, down_for: float = 0.0, down_until: Callable[[], bool] | None = None
    ) -> float:
        """``containerd`` or ``kubelet`` stopped as an upgrade stops it (SIGTERM; containers run
        on under their shims), down ``down_for`` seconds and then until ``down_until()`` holds
        (at most ``ready_timeout`` more), then started again with the same command line; the
        seconds from the start until it answers again."""
        state = self.state()
        argv = list(self._running(name, state.pids.get(name, 0)).program.argv)
        if name not in ("containerd", "kubelet") or not argv:
            raise RealNodeError(f"{name} was not started by this process: cannot restart it")
        self._stop(state, name)
        time.sleep(down_for)
        deadline = time.monotonic() + self.settings.ready_timeout
        while down_until is not None and not down_until() and time.monotonic() < deadline:
            time.sleep(0.5)
        started = time.monotonic()
        self._spawn(state, name, argv)
        if name == "containerd":
            self._wait("containerd", self._containerd_answers, state)
        else:
            config = json.loads((self.paths.root / "kubelet-config.json").read_text())
            url = f"http://{self.net.node_ip}:{config['healthzPort']}/healthz"
            self._wait("the kubelet's healthz", lambda: programs.answers_200(url), state)
        return time.monotonic() - started

    # -- stop ----------------------------------------------------------------------------------
    def down(self) -> None:
        """Remove everything the node made; safe when nothing runs, and after a killed run."""
        state = self.state()
        # Nothing may restart containers while they are killed: kubelet first.
        for name in ("kubelet", "kube-proxy", "coredns"):
            self._stop(state, name)
        teardown.kill_cgroup_processes(self.settings.cgroup_root)
        socket = str(self.containerd_paths.socket)
        shims = [
            pid
            for pid in teardown.processes_mentioning(socket)
            if pid != state.pids.get("containerd")
        ]
        self._stop(state, "containerd")
        shim_ids = [_shim_id(pid) for pid in shims]
        processes.stop(shims, timeout=2)
        for shim_id in filter(None, shim_ids):
            for path in containerd.shim_socket_paths(self.containerd_paths.socket, shim_id):
                path.unlink(missing_ok=True)
        processes.stop(teardown.processes_mentioning(str(self.dir)), timeout=5)
        teardown.unmount_all(self.dir)
        teardown.remove_cgroups(self.settings.cgroup_root)
        teardown.delete_nft_tables(KUBE_PROXY_TABLE)
        nfqueue.remove()
        teardown.delete_nft_tables(NETWORK_POLICY_TABLE, families=("inet",))
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
