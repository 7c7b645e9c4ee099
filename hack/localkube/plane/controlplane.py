"""The local Kubernetes control plane: etcd, kube-apiserver and kube-controller-manager on loopback.

With ``workload_scheduling`` it also runs kube-scheduler and serves ``scheduling.k8s.io/v1alpha2``
(the Workload and PodGroup of kube-scheduler's gang scheduling): pods then wait for a node with
room, and for their whole gang, as on a real cluster. Without it (the default, and what most tests
use) the test kubelet binds pods itself, which is faster and needs no capacity bookkeeping.

Why: every acceptance test and ``make demo`` need a real API server (admission webhooks over TLS,
structural schemas, conversion, watches, owner-reference garbage collection); the real node
(:mod:`localkube.realnode`) or the test kubelets (:mod:`localkube.kubelet`) run its pods. The
binaries are built from the pinned Go modules in ``hack/`` by
``hack/build-binaries.sh``; this module only runs them (through ``localkube.base.programs``).

Each control plane lives in one state directory (``.local/`` for ``make cluster-up``, a separate
one for the test session) holding certificates, etcd data, logs, the kubeconfig and a
``state.json`` with the pids and ports. Ports are picked free at start (``localkube.base.ports``),
so two checkouts on one machine never collide. Its settings and state are
``localkube.plane.settings``, its certificates ``localkube.plane.pki``, each component's command
line ``localkube.plane.components``.
"""

from __future__ import annotations

import json
import shutil
import ssl
import subprocess
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import yaml

from certs import CertificateAuthority
from localkube.base import processes, programs
from localkube.base.paths import PROJECT_ROOT
from localkube.base.ports import free_port, wait_released
from localkube.base.programs import Program, Running
from localkube.plane import components
from localkube.plane.kubeconfig import write_kubeconfig
from localkube.plane.pki import ADMIN, load_ca, write_pki
from localkube.plane.settings import (
    COMPONENTS,
    SCHEDULER,
    ControlPlaneSettings,
    ControlPlaneState,
    PlanePaths,
)

WORKLOAD_KINDS = frozenset({"Deployment", "StatefulSet", "DaemonSet"})
"""The kinds whose pods :meth:`ControlPlane.delete_kustomization` ends before the rest."""
STALE = ("etcd", "apiserver-certs", "kcm-certs", "scheduler-certs", "pki")
"""What a new ``up`` removes of a previous one's state directory."""


class KubectlFailed(subprocess.CalledProcessError):
    """A kubectl that exited non-zero. Its message ends with kubectl's own error (its stderr),
    which ``CalledProcessError``'s leaves out: a failing test's report then says why."""

    def __str__(self) -> str:
        said = (self.stderr or "").strip()
        return f"{super().__str__()}\nkubectl said: {said}" if said else super().__str__()


class ControlPlaneError(RuntimeError):
    """The control plane could not be started; the message says which component and why."""


def find_binaries() -> Path:
    """Return the bin directory of the pinned release, building it the first time."""
    script = PROJECT_ROOT / "hack" / "build-binaries.sh"
    result = subprocess.run([str(script)], check=False, stdout=subprocess.PIPE, text=True)
    if result.returncode != 0:
        raise ControlPlaneError(f"{script} failed with exit code {result.returncode}")
    return Path(result.stdout.strip().splitlines()[-1])


class ControlPlane:
    """Start, stop and describe one local control plane (idempotent both ways)."""

    def __init__(self, settings: ControlPlaneSettings) -> None:
        self.settings = settings
        self.paths = PlanePaths(settings.state_dir.resolve())
        self.dir = self.paths.dir
        self.pki = self.paths.pki
        self.logs = self.paths.logs
        self.kubeconfig = self.paths.kubeconfig
        self.kubectl_path = self.paths.kubectl
        self._state_file = self.paths.state_file
        self._started: dict[str, Running] = {}
        """The components this object started, by name (the others are adopted by pid)."""

    # -- state ---------------------------------------------------------------------------------
    def state(self) -> ControlPlaneState | None:
        try:
            data = json.loads(self._state_file.read_text())
            return ControlPlaneState(**data)
        except (OSError, ValueError, TypeError):
            return None

    def _save(self, state: ControlPlaneState) -> None:
        tmp = self._state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(state), indent=2))
        tmp.replace(self._state_file)

    def running(self) -> bool:
        state = self.state()
        if state is None:
            return False
        alive = all(processes.running(state.pids.get(c, -1), program=c) for c in self._components())
        return alive and self._ready(state)

    @property
    def runs_scheduler(self) -> bool:
        return self.settings.scheduler or self.settings.workload_scheduling

    def _components(self) -> tuple[str, ...]:
        """The processes this plane runs, in start order."""
        return (*COMPONENTS, SCHEDULER) if self.runs_scheduler else COMPONENTS

    def certificate_authority(self) -> CertificateAuthority:
        """The control plane's CA, for tests that issue more client certificates."""
        return load_ca(self.pki)

    # -- health --------------------------------------------------------------------------------
    def ssl_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.pki / "ca.crt"))
        context.load_cert_chain(str(self.pki / "admin.crt"), str(self.pki / "admin.key"))
        return context

    def _ready(self, state: ControlPlaneState) -> bool:
        try:
            context = self.ssl_context()
        except OSError:  # no certificates (any more): no API server of this plane answers
            return False
        return programs.answers_200(f"{state.server}/readyz", context=context)

    def _controller_manager_healthy(self, state: ControlPlaneState) -> bool:
        """kube-controller-manager answers ``/healthz`` (anonymous, self-signed) once it is up;
        a test kubelet asking for a serving certificate earlier would wait on csrsigning."""
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        url = f"https://127.0.0.1:{state.controller_manager_port}/healthz"
        return programs.answers_200(url, context=context)

    def _etcd_healthy(self, state: ControlPlaneState) -> bool:
        try:
            with urllib.request.urlopen(f"{state.etcd_url}/health", timeout=2) as response:
                return bool(json.loads(response.read()).get("health") == "true")
        except (urllib.error.URLError, OSError, ValueError):
            return False

    # -- processes -----------------------------------------------------------------------------
    def _program(self, component: str, argv: list[str] | None = None) -> Program:
        return Program(
            name=component,
            argv=argv or [],
            log=self.paths.log(component),
            cwd=self.dir,
            banner=True,
        )

    def _start(self, component: str, state: ControlPlaneState) -> None:
        """Start ``component`` with ``state``'s ports and record its pid in ``state.json``."""
        if component == SCHEDULER and self.settings.scheduler_config is not None:
            config = components.scheduler_configuration(
                self.settings.scheduler_config, kubeconfig=self.kubeconfig
            )
            # JSON is YAML, which kube-scheduler reads.
            self.paths.scheduler_config.write_text(json.dumps(config, indent=2) + "\n")
        argv = components.argv(component, self.settings, state, self.paths)
        started = programs.start(self._program(component, argv))
        self._started[component] = started
        state.pids[component] = started.pid
        self._save(state)

    def _running(self, component: str, pid: int) -> Running:
        """``component`` at ``pid``: the one this object started, or one adopted from
        ``state.json`` (a pid that now runs another program is not it)."""
        started = self._started.get(component)
        if started is not None and started.pid == pid:
            return started
        return programs.adopt(self._program(component), pid, executable=component)

    def _wait(
        self, what: str, check: Callable[[ControlPlaneState], bool], state: ControlPlaneState
    ) -> None:
        """Until ``check`` holds; fail at once, with its log's end, when a component exits."""
        programs.wait_ready(
            [self._running(component, pid) for component, pid in state.pids.items()],
            lambda: check(state),
            what=what,
            timeout=self.settings.start_timeout,
            error=ControlPlaneError,
        )

    def _stop(self, component: str, pid: int | None) -> None:
        if pid is not None:
            self._running(component, pid).stop(timeout=10)
            self._started.pop(component, None)

    # -- public --------------------------------------------------------------------------------
    def up(self) -> ControlPlaneState:
        """Start the control plane unless it already runs; return once ``/readyz`` is ok."""
        if self.running():
            state = self.state()
            assert state is not None
            return state
        self.down()
        bin_dir = self.settings.bin_dir or find_binaries()
        self.dir.mkdir(parents=True, exist_ok=True)
        self.logs.mkdir(parents=True, exist_ok=True)
        for stale in STALE:
            shutil.rmtree(self.dir / stale, ignore_errors=True)
        pki = write_pki(self.pki, node_address=self.settings.node_address)
        state = ControlPlaneState(
            bin_dir=str(bin_dir),
            etcd_port=free_port(),
            etcd_peer_port=free_port(),
            apiserver_port=free_port(),
            controller_manager_port=free_port(),
            scheduler_port=free_port() if self.runs_scheduler else 0,
            address=self.settings.node_address or "127.0.0.1",
        )
        write_kubeconfig(
            self.kubeconfig,
            server=state.server,
            ca=pki.ca,
            cert_pem=pki.admin.cert_pem,
            key_pem=pki.admin.key_pem,
            cluster="mxjob-local",
            user=ADMIN,
        )
        self.kubectl_path.parent.mkdir(parents=True, exist_ok=True)
        self.kubectl_path.unlink(missing_ok=True)
        self.kubectl_path.symlink_to(Path(bin_dir) / "kubectl")
        try:
            self._start_all(state)
        except BaseException:
            self.down()
            raise
        return state

    def _start_all(self, state: ControlPlaneState) -> None:
        """Each component once the one it needs answers."""
        self._start("etcd", state)
        self._wait("etcd", self._etcd_healthy, state)
        self._start("kube-apiserver", state)
        self._wait("kube-apiserver", self._ready, state)
        self._start("kube-controller-manager", state)
        if self.runs_scheduler:
            self._start(SCHEDULER, state)
        self._wait("kube-controller-manager", self._controller_manager_healthy, state)

    def restart_component(self, component: str) -> None:
        """Stop and start one component with the same ports and data (for fault tests)."""
        state = self.state()
        if state is None:
            raise ControlPlaneError("the control plane is not running")
        self._stop(component, state.pids.get(component, -1))
        wait_released(state.ports_of(component))
        self._start(component, state)
        if component == "etcd":
            self._wait("etcd", self._etcd_healthy, state)
        self._wait("kube-apiserver", self._ready, state)
        if component == "kube-controller-manager":
            self._wait(component, self._controller_manager_healthy, state)

    def down(self) -> None:
        """Stop every process this control plane started; safe to call when nothing runs."""
        state = self.state()
        if state is not None:
            for component in (SCHEDULER, *reversed(COMPONENTS)):
                self._stop(component, state.pids.get(component))
        self._state_file.unlink(missing_ok=True)

    def kustomize(self, path: Path) -> list[dict[str, Any]]:
        """The objects ``kubectl kustomize path`` renders."""
        rendered = yaml.safe_load_all(self.kubectl("kustomize", str(path), timeout=60).stdout)
        return [doc for doc in rendered if doc]

    def delete_kustomization(
        self, path: Path, *, timeout: float = 180, pods_at_once: bool = True
    ) -> None:
        """``kubectl delete -k path``, waiting for all of it to go: its workloads' pods first,
        then the rest.

        In one ``delete -k`` the namespace goes while its pods still run, and
        kube-controller-manager's namespace controller, finding a pod running, looks again only
        after the pod's whole ``terminationGracePeriodSeconds`` (30 s by default), however soon
        the pod ends. A foreground delete of the workloads waits for each pod's graceful stop
        (the webhook's preStop pause alone is 10 s), so with ``pods_at_once`` the pods are
        ended at once instead (:meth:`end_pods_at_once`): an uninstall needs them gone, not
        shut down gracefully. Without it, the kubelet has stopped and removed their containers
        when this returns; a pod deleted at once leaves its last container to the kubelet's
        next garbage collection (every minute)."""
        workloads = [doc for doc in self.kustomize(path) if doc.get("kind") in WORKLOAD_KINDS]
        wait = ("--ignore-not-found", "--wait", f"--timeout={timeout:.0f}s")
        if workloads:
            listed = json.dumps({"apiVersion": "v1", "kind": "List", "items": workloads})
            cascade = "orphan" if pods_at_once else "foreground"
            self.kubectl("delete", "-f", "-", f"--cascade={cascade}", *wait, input_text=listed,
                         timeout=timeout + 10)  # fmt: skip
        for workload in workloads if pods_at_once else ():
            labels = workload["spec"]["selector"].get("matchLabels")
            if not labels:  # selected by expressions alone: left to the namespace's deletion
                continue
            self.end_pods_at_once(
                workload["metadata"].get("namespace", "default"),
                selector=",".join(f"{key}={value}" for key, value in sorted(labels.items())),
                timeout=timeout,
            )
        self.kubectl("delete", "-k", str(path), *wait, timeout=timeout + 10)

    def end_pods_at_once(self, namespace: str, *, selector: str, timeout: float = 120) -> None:
        """The pods of ``namespace`` that ``selector`` matches (every pod when it is empty)
        deleted at once (``--force --grace-period=0``), their ReplicaSets first, without them
        (``--cascade=orphan``), so that none makes them again. The node's kubelet stops their
        containers after the objects are gone, within its 2 s minimum grace period.

        For a cleanup whose workloads are already deleted or orphaned: a Deployment still there
        would make a new ReplicaSet."""
        chosen = ("-l", selector) if selector else ("--all",)
        wait = ("--ignore-not-found", "--wait", f"--timeout={timeout:.0f}s")
        self.kubectl("delete", "replicasets", "-n", namespace, *chosen, "--cascade=orphan", *wait,
                     timeout=timeout + 10)  # fmt: skip
        self.kubectl("delete", "pods", "-n", namespace, *chosen, "--force", "--grace-period=0",
                     *wait, timeout=timeout + 10)  # fmt: skip

    def kubectl(
        self, *args: str, input_text: str | None = None, check: bool = True, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        """Run the built kubectl against this control plane; with ``check``, a non-zero exit
        raises ``KubectlFailed``, which says what kubectl printed."""
        argv = [str(self.kubectl_path), f"--kubeconfig={self.kubeconfig}", *args]
        done = subprocess.run(
            argv, input=input_text, capture_output=True, text=True, check=False, timeout=timeout
        )
        if check and done.returncode != 0:
            raise KubectlFailed(done.returncode, argv, output=done.stdout, stderr=done.stderr)
        return done
