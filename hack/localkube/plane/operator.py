"""The operator on the local control plane: CRD, webhook over TLS, and the controller process.

``make dev-up`` and the end-to-end tests both use this, so what the tests exercise is what a
developer runs: the CRD from ``manifests/crd/`` (its conversion webhook pointed at the local
webhook), the webhook configurations from ``manifests/webhook/`` (``clientConfig.service``
replaced by a loopback ``url``, ``caBundle`` from a CA made by ``certs``), each with the install
options chosen (``localkube.plane.install_choices``), ``mxjob-webhook``
served by gunicorn over TLS, and ``mxjob-controller`` as its own process.
"""

from __future__ import annotations

import base64
import json
import ssl
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml

from certs import CertificateAuthority
from localkube.base import processes, programs
from localkube.base.paths import PROJECT_ROOT
from localkube.base.ports import free_port, is_listened_on, loopback_listeners
from localkube.base.programs import Program, Running
from localkube.plane.controlplane import ControlPlane
from localkube.plane.install_choices import InstallChoices, apply_choices

CRD_FILE = PROJECT_ROOT / "manifests" / "crd" / "mxjobs.kubeflow.org.yaml"
WEBHOOK_CONFIGURATIONS = PROJECT_ROOT / "manifests" / "webhook" / "webhook-configurations.yaml"
CRD_NAME = "mxjobs.kubeflow.org"
OPERATOR_NAMESPACE: Final = "mxjob-system"
"""What the local webhook is told is the operator's namespace (``--operator-namespace``): the
progress URL it writes into the pods names ``mxjob-controller-progress.<this>.svc``, so a
controller that takes those reports must present a certificate for that name
(``--certificate-namespace``, :meth:`LocalOperator.progress_args`)."""


class OperatorError(RuntimeError):
    """A part of the operator could not be started; the message says which and why."""


@dataclass
class OperatorState:
    """What ``dev-up`` started, kept in ``operator.json`` so ``dev-down`` can stop it."""

    webhook_port: int = 0
    webhook_pid: int = 0
    controller_pid: int = 0
    controller_metrics_port: int = 0
    controller_health_port: int = 0
    controller_progress_port: int = 0
    """The loopback port the controller serves progress reports on when it was asked for one
    (``make demo``: the port of the progress URL its pods are given); 0: any free port."""
    kubelet_pid: int = 0
    """``make demo``'s exec-mode test kubelet (:mod:`localkube.kubelet.daemon`), left running
    after the demo so that ``kubectl logs`` of its pods keeps working; 0 when none runs."""
    kubelet_module: str = ""
    """The module that kubelet runs as (``python -m``): a pid running anything else is not it."""
    extra_pids: list[int] = field(default_factory=list)


def _bin(name: str) -> str:
    """A console script of this project, next to the running interpreter."""
    return str(Path(sys.executable).parent / name)


def wait_established(plane: ControlPlane, name: str = CRD_NAME, *, timeout: float = 60) -> None:
    """Wait until the CRD ``name`` is Established.

    ``kubectl wait`` fails outright while a new CRD has no conditions yet: poll instead.
    """
    deadline = time.monotonic() + timeout
    while True:
        crd = json.loads(plane.kubectl("get", f"crd/{name}", "-o", "json").stdout)
        conditions = crd.get("status", {}).get("conditions") or []
        if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
            return
        if time.monotonic() > deadline:
            raise OperatorError(f"CRD {name} not Established after {timeout:g} s: {conditions}")
        time.sleep(0.2)


@dataclass(frozen=True)
class RunningOperator:
    """An installed operator (tests): its webhook, and how to start controllers."""

    local: LocalOperator
    webhook_pid: int
    webhook_port: int


class LocalOperator:
    """Installs and runs the operator against one local control plane."""

    def __init__(self, plane: ControlPlane, *, choices: InstallChoices | None = None) -> None:
        self.plane = plane
        self.choices = choices or InstallChoices()
        """The install options (``manifests/components/``) the CRD and configurations take."""
        self.dir = plane.dir / "operator"
        self.cert_dir = self.dir / "webhook-certs"
        self.logs = plane.logs
        self._state_file = self.dir / "operator.json"
        self.ca: CertificateAuthority | None = None

    # -- state ---------------------------------------------------------------------------------
    def state(self) -> OperatorState:
        try:
            return OperatorState(**json.loads(self._state_file.read_text()))
        except (OSError, ValueError, TypeError):
            return OperatorState()

    def _save(self, state: OperatorState) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self._state_file.write_text(json.dumps(asdict(state), indent=2))

    # -- certificates --------------------------------------------------------------------------
    def _ensure_certs(self) -> CertificateAuthority:
        """The webhook's CA and serving certificate for 127.0.0.1, made once per state dir."""
        self.cert_dir.mkdir(parents=True, exist_ok=True)
        ca_cert, ca_key = self.dir / "ca.crt", self.dir / "ca.key"
        if ca_cert.exists() and ca_key.exists() and (self.cert_dir / "tls.crt").exists():
            self.ca = CertificateAuthority.load(
                cert_pem=ca_cert.read_bytes(), key_pem=ca_key.read_bytes()
            )
            return self.ca
        ca = CertificateAuthority.create(common_name="mxjob-webhook-local-ca")
        serving = ca.issue_serving(hosts=("127.0.0.1", "localhost"))
        ca_cert.write_bytes(ca.pair.cert_pem)
        ca_key.write_bytes(ca.pair.key_pem)
        ca_key.chmod(0o600)
        (self.cert_dir / "tls.crt").write_bytes(serving.cert_pem)
        (self.cert_dir / "tls.key").write_bytes(serving.key_pem)
        (self.cert_dir / "tls.key").chmod(0o600)
        self.ca = ca
        return ca

    @property
    def ca_bundle(self) -> str:
        ca = self.ca or self._ensure_certs()
        return base64.b64encode(ca.pair.cert_pem).decode()

    # -- CRD -----------------------------------------------------------------------------------
    def crd_manifest(self, *, webhook_port: int) -> dict[str, Any]:
        crd = apply_choices(yaml.safe_load(CRD_FILE.read_text()), self.choices)
        crd["spec"]["conversion"]["webhook"]["clientConfig"] = {
            "url": f"https://127.0.0.1:{webhook_port}/convert",
            "caBundle": self.ca_bundle,
        }
        return crd

    def install_crd(self, *, webhook_port: int) -> None:
        """Create or replace the CRD with its conversion webhook pointed at ``webhook_port``.

        Replace rather than apply: a server-side apply would keep a ``service`` reference another
        field manager set next to the ``url`` this sets, which the API server refuses.
        """
        manifest = json.dumps(self.crd_manifest(webhook_port=webhook_port))
        replaced = self.plane.kubectl("replace", "-f", "-", input_text=manifest, check=False)
        if replaced.returncode != 0:
            if "NotFound" not in replaced.stderr and "not found" not in replaced.stderr:
                raise OperatorError(f"replacing CRD {CRD_NAME} failed: {replaced.stderr}")
            self.plane.kubectl("create", "-f", "-", input_text=manifest)
        wait_established(self.plane)

    # -- webhook -------------------------------------------------------------------------------
    def webhook_configurations(self, *, webhook_port: int) -> list[dict[str, Any]]:
        documents = [
            apply_choices(d, self.choices)
            for d in yaml.safe_load_all(WEBHOOK_CONFIGURATIONS.read_text())
            if d
        ]
        for document in documents:
            for webhook in document["webhooks"]:
                path = webhook["clientConfig"]["service"]["path"]
                webhook["clientConfig"] = {
                    "url": f"https://127.0.0.1:{webhook_port}{path}",
                    "caBundle": self.ca_bundle,
                }
        return documents

    def register_webhooks(self, *, webhook_port: int) -> None:
        for document in self.webhook_configurations(webhook_port=webhook_port):
            self.plane.kubectl("apply", "-f", "-", input_text=json.dumps(document))

    def unregister_webhooks(self) -> None:
        for document in yaml.safe_load_all(WEBHOOK_CONFIGURATIONS.read_text()):
            if document:
                self.plane.kubectl(
                    "delete",
                    document["kind"].lower(),
                    document["metadata"]["name"],
                    "--ignore-not-found",
                    check=False,
                )

    def _webhook_ready(self, port: int) -> bool:
        try:
            context = ssl.create_default_context(cafile=str(self.dir / "ca.crt"))
        except OSError:  # no CA (yet): no webhook of this operator answers
            return False
        return programs.answers_200(f"https://127.0.0.1:{port}/readyz", context=context)

    def start_webhook(
        self,
        *extra: str,
        port: int | None = None,
        workers: int = 1,
        log_level: str = "info",
        log_name: str = "webhook.log",
    ) -> tuple[int, int]:
        """Start ``mxjob-webhook`` on loopback; return (pid, port) once ``/readyz`` is ok."""
        self._ensure_certs()
        port = port or free_port()
        argv = [
            _bin("mxjob-webhook"),
            f"--bind=127.0.0.1:{port}",
            f"--cert-dir={self.cert_dir}",
            f"--workers={workers}",
            "--log-format=text",
            f"--log-level={log_level}",
            f"--operator-namespace={OPERATOR_NAMESPACE}",
            *extra,
        ]
        webhook = programs.start(Program("mxjob-webhook", argv, log=self.logs / log_name))
        _await(webhook, lambda: self._webhook_ready(port), what="mxjob-webhook's /readyz")
        return webhook.pid, port

    # -- controller ----------------------------------------------------------------------------
    def controller_argv(self, *extra: str, metrics_port: int, health_port: int) -> list[str]:
        return [
            _bin("mxjob-controller"),
            f"--kubeconfig={self.plane.kubeconfig}",
            f"--metrics-bind-address=127.0.0.1:{metrics_port}",
            f"--health-probe-bind-address=127.0.0.1:{health_port}",
            # Any free loopback port: several controllers run on this machine at once.
            "--progress-bind-address=127.0.0.1:0",
            # Plain HTTP to anyone on loopback; a test that scrapes as a cluster would passes
            # --metrics-secure in ``extra`` (the last flag wins).
            "--no-metrics-secure",
            "--log-format=text",
            *extra,
        ]

    @staticmethod
    def progress_args(port: int) -> tuple[str, ...]:
        """The controller's flags to take the reports of pods on this machine: the progress
        endpoint on ``127.0.0.1:port``, whose certificate names the Service the webhook's URL
        names (the exec-mode kubelet points that name at 127.0.0.1)."""
        return (
            f"--progress-bind-address=127.0.0.1:{port}",
            f"--certificate-namespace={OPERATOR_NAMESPACE}",
        )

    def start_controller(
        self,
        *extra: str,
        log_name: str = "controller.log",
        wait_ready: bool = True,
        ready_path: str = "/healthz",
        ready_timeout: float = 30,
    ) -> tuple[subprocess.Popen[bytes], int, int]:
        """Start ``mxjob-controller``; return (process, metrics port, health port).

        With ``wait_ready``, returns once ``ready_path`` on the health port answers 200:
        ``/healthz`` (the process serves) or ``/readyz`` (its informers have synced).
        """
        metrics_port, health_port = free_port(), free_port()
        argv = self.controller_argv(*extra, metrics_port=metrics_port, health_port=health_port)
        controller = programs.start(Program("mxjob-controller", argv, log=self.logs / log_name))
        assert controller.process is not None  # started, not adopted
        if wait_ready:
            url = f"http://127.0.0.1:{health_port}{ready_path}"
            _await(
                controller,
                lambda: programs.answers_200(url),
                what=f"mxjob-controller's {ready_path}",
                timeout=ready_timeout,
            )
        return controller.process, metrics_port, health_port

    # -- all together (make dev-up / dev-down) -------------------------------------------------
    def up(
        self, *, with_controller: bool = True, progress_port: int | None = None
    ) -> OperatorState:
        """Idempotent: start what is not running, leave what runs alone.

        ``progress_port``: the controller serves progress reports on ``127.0.0.1:<port>`` (a
        running controller serving another port is restarted); None: on any free port. That
        port taken by another program is an :class:`OperatorError` naming it, raised before
        anything starts (the controller would fail to listen).
        """
        wanted = with_controller and not self._controller_as_asked(self.state(), progress_port)
        if wanted and progress_port is not None:
            _ensure_loopback_port_free(progress_port)
        self.plane.up()
        self.dir.mkdir(parents=True, exist_ok=True)
        state = self.state()
        if not (processes.running(state.webhook_pid) and self._webhook_ready(state.webhook_port)):
            processes.stop_process(state.webhook_pid)
            state.webhook_pid, state.webhook_port = self.start_webhook()
            self._save(state)
        self._ensure_certs()
        self.install_crd(webhook_port=state.webhook_port)
        self.register_webhooks(webhook_port=state.webhook_port)
        if wanted:
            processes.stop_process(state.controller_pid)
            extra = ["--leader-elect"]
            extra += self.progress_args(progress_port) if progress_port is not None else []
            process, state.controller_metrics_port, state.controller_health_port = (
                self.start_controller(*extra)
            )
            state.controller_pid = process.pid
            state.controller_progress_port = progress_port or 0
        self._save(state)
        return state

    @staticmethod
    def _controller_as_asked(state: OperatorState, progress_port: int | None) -> bool:
        """A controller runs, serving progress on ``progress_port`` if one is asked for."""
        return processes.running(state.controller_pid) and progress_port in (
            None,
            state.controller_progress_port,
        )

    def record_kubelet(self, pid: int, *, module: str) -> None:
        """Keep the background test kubelet's pid and the module it runs as, for
        :meth:`stop_kubelet` and :meth:`down`."""
        state = self.state()
        state.kubelet_pid, state.kubelet_module = pid, module
        self._save(state)

    def stop_kubelet(self) -> None:
        """Stop the background test kubelet (and so its pods' processes), if one runs."""
        state = self.state()
        if state.kubelet_pid:
            if processes.runs_module(state.kubelet_pid, state.kubelet_module):
                processes.stop_process(state.kubelet_pid)
            state.kubelet_pid = 0
            self._save(state)

    def down(self) -> None:
        state = self.state()
        # The kubelet first: it stops the pods' processes while the API server still answers.
        if processes.runs_module(state.kubelet_pid, state.kubelet_module):
            processes.stop_process(state.kubelet_pid)
        processes.stop_process(state.controller_pid)
        processes.stop_process(state.webhook_pid)
        for pid in state.extra_pids:
            processes.stop_process(pid)
        self._state_file.unlink(missing_ok=True)


def _ensure_loopback_port_free(port: int) -> None:
    """Raise :class:`OperatorError` naming the holder when something listens on
    ``127.0.0.1:port`` (or on every address at that port)."""
    if not is_listened_on(port, host="127.0.0.1"):
        return
    holders = "; ".join(loopback_listeners(port)) or "a program of another user"
    raise OperatorError(
        f"127.0.0.1:{port} is taken, by {holders}: the controller must take the "
        "progress reports of the job's pods there. Stop it (another demo's operator: "
        "`python -m localkube dev-down --state-dir <its state dir>`) and run again."
    )


def _await(running: Running, ready: Callable[[], bool], *, what: str, timeout: float = 30) -> None:
    """Until ``ready()`` holds; otherwise stop the program and raise ``OperatorError`` with
    its log's end."""
    try:
        programs.wait_ready(running, ready, what=what, timeout=timeout, error=OperatorError)
    except OperatorError:
        running.stop()
        raise
