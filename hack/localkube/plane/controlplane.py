"""The local Kubernetes control plane: etcd, kube-apiserver and kube-controller-manager on loopback.

With ``workload_scheduling`` it also runs kube-scheduler and serves ``scheduling.k8s.io/v1alpha2``
(the Workload and PodGroup of kube-scheduler's gang scheduling): pods then wait for a node with
room, and for their whole gang, as on a real cluster. Without it (the default, and what most tests
use) the test kubelet binds pods itself, which is faster and needs no capacity bookkeeping.

Why: every acceptance test and ``make demo`` need a real API server (admission webhooks over TLS,
structural schemas, conversion, watches, owner-reference garbage collection), and this machine has
no container engine. The binaries are built from the pinned Go modules in ``hack/`` by
``hack/build-binaries.sh``; this module only runs them.

Each control plane lives in one state directory (``.local/`` for ``make cluster-up``, a separate
one for the test session) holding certificates, etcd data, logs, the kubeconfig and a
``state.json`` with the pids and ports. Ports are picked free at start (``localkube.base.ports``),
so two checkouts on one machine never collide.
"""

from __future__ import annotations

import base64
import ipaddress
import json
import shutil
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from certs import CertificateAuthority, new_signing_key_pem
from localkube.base import processes
from localkube.base.paths import PROJECT_ROOT
from localkube.base.ports import free_port, wait_released

COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager")
SCHEDULER = "kube-scheduler"
# Kubernetes v1.36's gang scheduling (pkg/features/kube_features.go of the pinned module):
# GenericWorkload serves the Workload and PodGroup kinds and the pods' spec.schedulingGroup,
# GangScheduling enables kube-scheduler's plugin that binds a group's pods all or none.
WORKLOAD_FEATURE_GATES = "GenericWorkload=true,GangScheduling=true"
WORKLOAD_API = "scheduling.k8s.io/v1alpha2"
# The API server stamps a finalizer on every PodGroup; this controller lifts it once no running
# pod uses the group, so a deleted job's PodGroups do not stay forever.
WORKLOAD_CONTROLLERS = "podgroup-protection-controller"
# csrsigning signs the test kubelets' serving certificates (see localkube.kubelet.tls).
CONTROLLERS = "garbagecollector,namespace,serviceaccount,root-ca-cert-publisher,csrsigning"
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


class KubectlFailed(subprocess.CalledProcessError):
    """A kubectl that exited non-zero. Its message ends with kubectl's own error (its stderr),
    which ``CalledProcessError``'s leaves out: a failing test's report then says why."""

    def __str__(self) -> str:
        said = (self.stderr or "").strip()
        return f"{super().__str__()}\nkubectl said: {said}" if said else super().__str__()


class ControlPlaneError(RuntimeError):
    """The control plane could not be started; the message says which component and why."""


@dataclass(frozen=True)
class ControlPlaneSettings:
    """Where a control plane keeps its files and how long it may take to start."""

    state_dir: Path
    """Everything of this control plane: certs, etcd data, logs, kubeconfig, state.json."""
    bin_dir: Path | None = None
    """Built binaries; None builds (or finds cached) ones with ``hack/build-binaries.sh``."""
    start_timeout: float = 60.0
    """Seconds to wait for ``/readyz``: a cold start on 2 busy cores takes ~5-10 s."""
    extra_apiserver_args: tuple[str, ...] = ()
    """Flags for tests that need a different API server configuration."""
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
        self.dir = settings.state_dir.resolve()
        self.pki = self.dir / "pki"
        self.logs = self.dir / "logs"
        self.kubeconfig = self.dir / "kubeconfig"
        self.kubectl_path = self.dir / "bin" / "kubectl"
        self._state_file = self.dir / "state.json"
        self._children: dict[str, subprocess.Popen[bytes]] = {}

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

    # -- certificates --------------------------------------------------------------------------
    def _write_pki(self) -> None:
        self.pki.mkdir(parents=True, exist_ok=True)
        ca = CertificateAuthority.create(common_name="mxjob-local-ca")
        serving = ca.issue_serving(
            hosts=(
                "127.0.0.1",
                "localhost",
                "kubernetes",
                "kubernetes.default",
                "kubernetes.default.svc",
                KUBERNETES_SERVICE_IP,
                *((self.settings.node_address,) if self.settings.node_address else ()),
            ),
            common_name="kube-apiserver",
        )
        admin = ca.issue_client(common_name="mxjob-admin", organizations=("system:masters",))
        # How the API server proves itself to kubelets when it fetches logs (kubeadm's name).
        kubelet_client = ca.issue_client(
            common_name="kube-apiserver-kubelet-client", organizations=("system:masters",)
        )
        sa_private, sa_public = new_signing_key_pem()
        files = {
            "ca.crt": ca.pair.cert_pem,
            "ca.key": ca.pair.key_pem,
            "apiserver.crt": serving.cert_pem,
            "apiserver.key": serving.key_pem,
            "admin.crt": admin.cert_pem,
            "admin.key": admin.key_pem,
            "apiserver-kubelet-client.crt": kubelet_client.cert_pem,
            "apiserver-kubelet-client.key": kubelet_client.key_pem,
            "sa.key": sa_private,
            "sa.pub": sa_public,
        }
        for name, data in files.items():
            path = self.pki / name
            path.write_bytes(data)
            path.chmod(0o600)

    def certificate_authority(self) -> CertificateAuthority:
        """The control plane's CA, for tests that issue more client certificates."""
        return CertificateAuthority.load(
            cert_pem=(self.pki / "ca.crt").read_bytes(), key_pem=(self.pki / "ca.key").read_bytes()
        )

    def _write_kubeconfig(self, state: ControlPlaneState) -> None:
        def b64(name: str) -> str:
            return base64.b64encode((self.pki / name).read_bytes()).decode()

        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "mxjob-local",
                    "cluster": {
                        "server": state.server,
                        "certificate-authority-data": b64("ca.crt"),
                    },
                }
            ],
            "users": [
                {
                    "name": "mxjob-admin",
                    "user": {
                        "client-certificate-data": b64("admin.crt"),
                        "client-key-data": b64("admin.key"),
                    },
                }
            ],
            "contexts": [
                {
                    "name": "mxjob-local",
                    "context": {"cluster": "mxjob-local", "user": "mxjob-admin"},
                }
            ],
            "current-context": "mxjob-local",
        }
        tmp = self.kubeconfig.with_suffix(".tmp")
        tmp.write_text(json.dumps(config, indent=2))
        tmp.chmod(0o600)
        tmp.replace(self.kubeconfig)

    @property
    def runs_scheduler(self) -> bool:
        return self.settings.scheduler or self.settings.workload_scheduling

    def _components(self) -> tuple[str, ...]:
        """The processes this plane runs, in start order."""
        return (*COMPONENTS, SCHEDULER) if self.runs_scheduler else COMPONENTS

    # -- processes -----------------------------------------------------------------------------
    def _spawn(self, name: str, argv: list[str]) -> int:
        log = (self.logs / f"{name}.log").open("ab")
        log.write(f"\n=== {time.strftime('%Y-%m-%dT%H:%M:%S')} starting {name}\n".encode())
        log.flush()
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=self.dir,
        )
        log.close()
        self._children[name] = process
        return process.pid

    def _etcd_argv(self, state: ControlPlaneState) -> list[str]:
        peer = f"http://127.0.0.1:{state.etcd_peer_port}"
        return [
            str(Path(state.bin_dir) / "etcd"),
            "--name=local",
            f"--data-dir={self.dir / 'etcd'}",
            f"--listen-client-urls={state.etcd_url}",
            f"--advertise-client-urls={state.etcd_url}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=local={peer}",
            "--unsafe-no-fsync=true",
            "--log-level=warn",
        ]

    def _apiserver_argv(self, state: ControlPlaneState) -> list[str]:
        pki = self.pki
        return [
            str(Path(state.bin_dir) / "kube-apiserver"),
            f"--etcd-servers={state.etcd_url}",
            f"--bind-address={state.address}",
            f"--advertise-address={state.address}",
            f"--secure-port={state.apiserver_port}",
            *self._network_apiserver_args(),
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
            f"--cert-dir={self.dir / 'apiserver-certs'}",
            "--v=1",
            *self._workload_apiserver_args(),
            *self.settings.extra_apiserver_args,
        ]

    def _network_apiserver_args(self) -> list[str]:
        if self.settings.node_address is None:
            # No kubelet and no real Service network: do not publish the API server's own
            # Endpoints (a loopback address is not a valid endpoint).
            return ["--endpoint-reconciler-type=none", "--authorization-mode=RBAC"]
        return [
            "--endpoint-reconciler-type=lease",
            "--authorization-mode=Node,RBAC",
            "--enable-admission-plugins=NodeRestriction",
        ]

    def _workload_apiserver_args(self) -> list[str]:
        if not self.settings.workload_scheduling:
            return []
        return [
            f"--runtime-config={WORKLOAD_API}=true",
            f"--feature-gates={WORKLOAD_FEATURE_GATES}",
        ]

    def _scheduler_argv(self, state: ControlPlaneState) -> list[str]:
        if self.settings.scheduler_config is None:
            client = [f"--kubeconfig={self.kubeconfig}", "--leader-elect=false"]
        else:
            client = [f"--config={self._write_scheduler_config(self.settings.scheduler_config)}"]
        return [
            str(Path(state.bin_dir) / SCHEDULER),
            *client,
            f"--authentication-kubeconfig={self.kubeconfig}",
            f"--authorization-kubeconfig={self.kubeconfig}",
            "--bind-address=127.0.0.1",
            f"--secure-port={state.scheduler_port}",
            f"--cert-dir={self.dir / 'scheduler-certs'}",
            *self._workload_scheduler_args(),
            "--v=1",
            *self.settings.extra_scheduler_args,
        ]

    def _write_scheduler_config(self, config: Mapping[str, Any]) -> Path:
        """``config`` with this plane's kubeconfig and no leader election, as a file (JSON is
        YAML, which kube-scheduler reads)."""
        completed = {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            **config,
            "clientConnection": {
                **(config.get("clientConnection") or {}),
                "kubeconfig": str(self.kubeconfig),
            },
            "leaderElection": {"leaderElect": False},
        }
        path = self.dir / "scheduler-config.json"
        path.write_text(json.dumps(completed, indent=2) + "\n")
        return path

    def _workload_scheduler_args(self) -> list[str]:
        if not self.settings.workload_scheduling:
            return []
        return [f"--feature-gates={WORKLOAD_FEATURE_GATES}"]

    def _controller_manager_argv(self, state: ControlPlaneState) -> list[str]:
        return [
            str(Path(state.bin_dir) / "kube-controller-manager"),
            f"--kubeconfig={self.kubeconfig}",
            f"--authentication-kubeconfig={self.kubeconfig}",
            f"--authorization-kubeconfig={self.kubeconfig}",
            f"--controllers={self._controllers()}",
            "--bind-address=127.0.0.1",
            f"--secure-port={state.controller_manager_port}",
            f"--cert-dir={self.dir / 'kcm-certs'}",
            f"--root-ca-file={self.pki / 'ca.crt'}",
            f"--service-account-private-key-file={self.pki / 'sa.key'}",
            f"--cluster-signing-cert-file={self.pki / 'ca.crt'}",
            f"--cluster-signing-key-file={self.pki / 'ca.key'}",
            "--leader-elect=false",
            "--use-service-account-credentials=false",
            "--v=1",
            *(
                [f"--feature-gates={WORKLOAD_FEATURE_GATES}"]
                if self.settings.workload_scheduling
                else []
            ),
        ]

    def _controllers(self) -> str:
        names = [CONTROLLERS, *self.settings.extra_controllers]
        if self.settings.workload_scheduling:
            names.append(WORKLOAD_CONTROLLERS)
        return ",".join(names)

    # -- health --------------------------------------------------------------------------------
    def ssl_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.pki / "ca.crt"))
        context.load_cert_chain(str(self.pki / "admin.crt"), str(self.pki / "admin.key"))
        return context

    def _ready(self, state: ControlPlaneState) -> bool:
        try:
            with urllib.request.urlopen(
                f"{state.server}/readyz", context=self.ssl_context(), timeout=2
            ) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, OSError, ssl.SSLError):
            return False

    def _controller_manager_healthy(self, state: ControlPlaneState) -> bool:
        """kube-controller-manager answers ``/healthz`` (anonymous, self-signed) once it is up;
        a test kubelet asking for a serving certificate earlier would wait on csrsigning."""
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        url = f"https://127.0.0.1:{state.controller_manager_port}/healthz"
        try:
            with urllib.request.urlopen(url, context=context, timeout=2) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, OSError, ssl.SSLError):
            return False

    def _etcd_healthy(self, state: ControlPlaneState) -> bool:
        try:
            with urllib.request.urlopen(f"{state.etcd_url}/health", timeout=2) as response:
                return bool(json.loads(response.read()).get("health") == "true")
        except (urllib.error.URLError, OSError, ValueError):
            return False

    def _wait(self, what: str, check: object, state: ControlPlaneState) -> None:
        assert callable(check)
        deadline = time.monotonic() + self.settings.start_timeout
        while time.monotonic() < deadline:
            if check(state):
                return
            for component, pid in state.pids.items():
                child = self._children.get(component)
                code = child.poll() if child is not None and child.pid == pid else None
                if code is not None or (
                    child is None and not processes.running(pid, program=component)
                ):
                    raise ControlPlaneError(
                        f"{component} exited (code {code}) during start-up; see "
                        f"{self.logs / component}.log:\n" + self._tail(component)
                    )
            time.sleep(0.1)
        raise ControlPlaneError(f"{what} not ready after {self.settings.start_timeout:.0f} s")

    def _tail(self, component: str, lines: int = 20) -> str:
        try:
            text = (self.logs / f"{component}.log").read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

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
        for stale in ("etcd", "apiserver-certs", "kcm-certs", "scheduler-certs", "pki"):
            shutil.rmtree(self.dir / stale, ignore_errors=True)
        self._write_pki()
        state = ControlPlaneState(
            bin_dir=str(bin_dir),
            etcd_port=free_port(),
            etcd_peer_port=free_port(),
            apiserver_port=free_port(),
            controller_manager_port=free_port(),
            scheduler_port=free_port() if self.runs_scheduler else 0,
            address=self.settings.node_address or "127.0.0.1",
        )
        self._write_kubeconfig(state)
        self.kubectl_path.parent.mkdir(parents=True, exist_ok=True)
        self.kubectl_path.unlink(missing_ok=True)
        self.kubectl_path.symlink_to(Path(bin_dir) / "kubectl")
        try:
            state.pids["etcd"] = self._spawn("etcd", self._etcd_argv(state))
            self._save(state)
            self._wait("etcd", self._etcd_healthy, state)
            state.pids["kube-apiserver"] = self._spawn(
                "kube-apiserver", self._apiserver_argv(state)
            )
            self._save(state)
            self._wait("kube-apiserver", self._ready, state)
            state.pids["kube-controller-manager"] = self._spawn(
                "kube-controller-manager", self._controller_manager_argv(state)
            )
            self._save(state)
            if self.runs_scheduler:
                state.pids[SCHEDULER] = self._spawn(SCHEDULER, self._scheduler_argv(state))
                self._save(state)
            self._wait("kube-controller-manager", self._controller_manager_healthy, state)
        except BaseException:
            self.down()
            raise
        return state

    def restart_component(self, component: str) -> None:
        """Stop and start one component with the same ports and data (for fault tests)."""
        state = self.state()
        if state is None:
            raise ControlPlaneError("the control plane is not running")
        processes.stop([state.pids.get(component, -1)], program=component)
        wait_released(state.ports_of(component))
        argv = {
            "etcd": self._etcd_argv,
            "kube-apiserver": self._apiserver_argv,
            "kube-controller-manager": self._controller_manager_argv,
            SCHEDULER: self._scheduler_argv,
        }[component](state)
        state.pids[component] = self._spawn(component, argv)
        self._save(state)
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
                pid = state.pids.get(component)
                if pid is not None:
                    processes.stop([pid], program=component)
        self._state_file.unlink(missing_ok=True)

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
