"""Settings of the controller process: one frozen dataclass, read from flags and environment.

Flags win over environment variables (``MXJOB_CONTROLLER_<FLAG>``), which win over the defaults
below. Defaults suit one replica in a cluster; tests shorten the lease and timers.
"""

from __future__ import annotations

import argparse
import os
import secrets
import socket
import sys
from argparse import SUPPRESS
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from shared.envflags import NotABooleanError, parse_env_flag

LogFormat = Literal["json", "text"]
GangSchedulerChoice = Literal["auto", "native", "volcano", "scheduler-plugins", "none"]
GANG_SCHEDULER_CHOICES: Final = ("auto", "native", "volcano", "scheduler-plugins", "none")
ENV_PREFIX: Final = "MXJOB_CONTROLLER_"


def default_identity() -> str:
    """``<hostname>_<pid>_<random>``: unique even for two processes on one host."""
    return f"{socket.gethostname()}_{os.getpid()}_{secrets.token_hex(3)}"


@dataclass(frozen=True, kw_only=True)
class ControllerSettings:
    """Everything the controller process can be told."""

    kubeconfig: Path | None = None
    """The kubeconfig to use; None means in-cluster config (or ``$KUBECONFIG``/~/.kube)."""
    namespaces: tuple[str, ...] = ()
    """Namespaces to watch (one watch per namespace and resource); empty means all."""
    workers: int = 4
    """Jobs reconciled in parallel. Reconcile mostly waits on the API server, so a few
    threads overlap those waits; more only add contention for the GIL."""
    leader_elect: bool = False
    """Take part in leader election; only the leader reconciles. Needed with replicas > 1."""
    lease_namespace: str = "default"
    """Namespace of the leader Lease (the controller's own namespace in a cluster)."""
    lease_name: str = "mxjob-controller"
    """Name of the leader Lease."""
    lease_duration: float = 15.0
    """Seconds before a dead leader's Lease may be taken (the failover time)."""
    renew_deadline: float = 10.0
    """Seconds the leader keeps retrying a renewal before it stops leading."""
    retry_period: float = 2.0
    """Seconds between acquire/renew attempts."""
    identity: str = ""
    """This process's name in the Lease; empty picks ``<hostname>_<pid>_<random>``."""
    metrics_bind_address: str = ":8443"
    """``host:port`` serving ``/metrics``."""
    metrics_secure: bool = True
    """Serve ``/metrics`` over HTTPS to scrapers the API server authenticates (TokenReview) and
    authorizes (SubjectAccessReview, ``get`` on ``/metrics``: the ClusterRole
    ``mxjob-metrics-reader``), as Kubebuilder's ``--metrics-secure`` does. Off: plain HTTP to
    anyone, for clusters that secure metrics another way (docs/how-to/harden.md, "Authenticated
    metrics")."""
    metrics_cert_dir: Path | None = None
    """Directory of the metrics server's ``tls.crt`` and ``tls.key``, re-read when they change;
    a self-signed certificate is presented while it holds none (controller/runtime/
    serving_tls.py)."""
    metrics_auth_cache_seconds: float = 60.0
    """Seconds a scraper's authentication and authorization is reused before it is asked
    again."""
    progress_reports: bool = True
    """Serve the progress endpoint, on every replica (controller/progress/): a job's pods post
    their progress there and it is written to ``status.trainerStatus`` (docs/how-to/monitor.md,
    "Progress"). With it, each job gets the ConfigMap ``<job>-status-ca`` holding the CA its pods
    verify the endpoint by (controller/integrations/statusca/), which needs RBAC for
    ``configmaps``. Off: nothing listens and no ConfigMap is made; turn the webhook's
    ``--progress-reports`` off too, so that pods are not told of an endpoint that is not there."""
    progress_bind_address: str = ":8444"
    """``host:port`` of the progress endpoint (HTTPS, presenting the pair in
    ``metrics_cert_dir``, or a self-signed certificate for the progress Service until it is
    there)."""
    health_probe_bind_address: str = ":8081"
    """``host:port`` serving ``/healthz`` and ``/readyz`` (may equal ``metrics_bind_address``)."""
    log_format: LogFormat = "json"
    """``json`` for log collectors, ``text`` for a terminal."""
    log_level: str = "info"
    """Root log level."""
    events: Literal["all", "warnings"] = "all"
    """Which Events to record on MXJobs. Every Event is an API write; ``warnings`` keeps only
    the unusual part of the story (exit codes, restarts, failures) for clusters where the
    write budget matters more than ``kubectl describe`` showing creations and successes."""
    resync_period: float = 300.0
    """Seconds between re-queues of every cached job (a safety net; no API request)."""
    expectations_timeout: float = 300.0
    """Seconds after which an unobserved create/delete stops holding its job back."""
    watch_timeout: int = 300
    """Server-side timeout of one watch request before it is re-opened."""
    shutdown_timeout: float = 30.0
    """Seconds a SIGTERM waits for in-flight reconciles before leaving anyway."""
    gang_scheduler: GangSchedulerChoice = "auto"
    """How a job's pods are placed together (docs/how-to/gang-scheduling.md): ``native`` writes one
    Workload and PodGroup per job for kube-scheduler's gang scheduling
    (``scheduling.k8s.io/v1alpha2``); ``volcano`` and ``scheduler-plugins`` write those
    projects' PodGroups as training-operator v1.8.1 does; ``none`` lets pods be scheduled one
    by one; ``auto`` is ``native`` when the API server serves that API at start-up, ``none``
    otherwise (it never picks Volcano or scheduler-plugins: they are asked for by name)."""

    kueue_workloads: bool = False
    """Kueue's Workload route (docs/how-to/queue-with-kueue.md): write a Workload for every job
    with a ``kueue.x-k8s.io/queue-name`` label and start, stop and finish the job as Kueue
    decides, for Kueue ≥ v0.15 with ``MXJob.v1.kubeflow.org`` among its
    ``integrations.externalFrameworks``. Off for Kueue ≤ v0.10, which does all this itself;
    start-up fails when the cluster serves only that Kueue's Workload API."""

    job_network_policy: bool = False
    """Give every job a NetworkPolicy, owned by it, that admits connections to its pods only
    from its own pods (controller/integrations/netpol/policy.py; docs/how-to/harden.md, "Every
    job's pods"). Needs RBAC for ``networking.k8s.io`` networkpolicies."""

    pod_start_timeout: float = 600.0
    """Seconds a job's pod may be unable to start (its image cannot be pulled, a ConfigMap or
    Secret it reads is missing) before the job fails; 0 never. A job's
    ``mxjob-operator.kubeflow.org/pod-start-timeout-seconds`` annotation overrides it."""
    manage_webhook_certificates: bool = False
    """Make the webhook's CA and serving certificate in the cluster and keep them current
    (controller/certificates/keeper.py; the default install, manifests/overlays/in-cluster).
    Off where cert-manager or the user provides the Secret."""
    certificate_namespace: str = ""
    """Namespace of the webhook's Secret, Service and the controller Deployment; empty means
    the Lease's (the operator's own namespace in a cluster)."""
    ca_bundle_configmap: str = ""
    """A ConfigMap in the certificate namespace whose ``ca.crt`` this process keeps equal to
    the webhook's trust bundle while it leads, so scrapers verify the metrics endpoints without
    reading a Secret (controller/certificates/bundle_publisher.py); empty: none."""
    certificate_check_interval: float = 10.0
    """Seconds between two reads of the Secret and the ``caBundle`` fields: how soon a reset
    ``caBundle`` or a deleted Secret is put back."""

    @property
    def pool_size(self) -> int:
        """HTTP connections to keep: one per worker and per watch, plus events and the lease."""
        watches = (4 if self.kueue_workloads else 3) * max(1, len(self.namespaces))
        # The progress endpoint: its status writer, and the TokenReviews of its requests.
        progress = 2 if self.progress_reports else 0
        return self.workers + watches + 4 + progress


DEPRECATED_FLAGS: Final = {
    "--metrics-address": "--metrics-bind-address",
    "--health-address": "--health-probe-bind-address",
}
"""Old flag names, accepted (hidden from ``--help``) until the next release: controller-runtime's
names are what operators of other controllers already type. docs/how-to/upgrade-and-uninstall.md
lists both."""
DEPRECATED_ENV: Final = {
    "metrics_bind_address": "METRICS_ADDRESS",
    "health_probe_bind_address": "HEALTH_ADDRESS",
}
"""The environment variables that went with the old flag names (``MXJOB_CONTROLLER_<name>``)."""


class _Deprecated(argparse.Action):
    """Stores the value like the new flag does, and says on stderr which flag to use instead."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        new = DEPRECATED_FLAGS.get(option_string or "", "")
        print(f"mxjob-controller: {option_string} is deprecated, use {new}", file=sys.stderr)
        setattr(namespace, self.dest, values)


def _add_metrics_flags(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("--metrics-bind-address", help="host:port for /metrics (default :8443)")
    add(
        "--metrics-secure",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="serve /metrics over HTTPS to authenticated, authorized scrapers only (default on)",
    )
    add("--metrics-cert-dir", type=Path, help="tls.crt and tls.key of the metrics server")
    add(
        "--metrics-auth-cache-seconds",
        type=float,
        help="seconds a scraper's TokenReview and SubjectAccessReview are reused (default 60)",
    )


def _add_probe_and_progress_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--health-probe-bind-address",
        help="host:port for /healthz and /readyz (default :8081)",
    )
    parser.add_argument(
        "--progress-reports",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="serve the progress endpoint job pods report to, and give each job the CA "
        "to verify it by (default on; docs/how-to/monitor.md)",
    )
    parser.add_argument(
        "--progress-bind-address", help="host:port of the progress endpoint (default :8444)"
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mxjob-controller",
        description="Reconciles MXJobs into pods and services (kubeflow.org/v1 MXJob).",
    )
    add = parser.add_argument
    add("--kubeconfig", type=Path, help="kubeconfig file (default: in-cluster config)")
    add(
        "--namespace",
        dest="namespaces",
        action="append",
        default=None,
        help="watch this namespace (repeatable; default: all namespaces)",
    )
    add("--workers", type=int, help="jobs reconciled in parallel (default 4)")
    add(
        "--leader-elect",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="take part in leader election on a Lease",
    )
    add("--lease-namespace", help="namespace of the leader Lease")
    add("--lease-name", help="name of the leader Lease")
    add("--lease-duration", type=float, help="seconds (default 15)")
    add("--renew-deadline", type=float, help="seconds (default 10)")
    add("--retry-period", type=float, help="seconds (default 2)")
    add("--identity", help="this process's identity in the Lease")
    _add_metrics_flags(parser)
    _add_probe_and_progress_flags(parser)
    for old, new in DEPRECATED_FLAGS.items():
        add(old, dest=new.removeprefix("--").replace("-", "_"), action=_Deprecated, help=SUPPRESS)
    add("--log-format", choices=["json", "text"], help="log format (default json)")
    add("--log-level", choices=["debug", "info", "warning", "error"], help="(default info)")
    add("--events", choices=["all", "warnings"], help="Events to record (default all)")
    add("--resync-period", type=float, help="seconds between re-queues of every cached job")
    add("--watch-timeout", type=int, help="server-side timeout of a watch, seconds")
    add("--shutdown-timeout", type=float, help="seconds to finish in-flight work on SIGTERM")
    add(
        "--gang-scheduler",
        choices=list(GANG_SCHEDULER_CHOICES),
        help="gang scheduling of a job's pods (default auto: native where served, else none)",
    )
    add(
        "--kueue-workloads",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="write Kueue Workloads for queued jobs "
        "(Kueue >= v0.15; docs/how-to/queue-with-kueue.md)",
    )
    add(
        "--job-network-policy",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="give every job a NetworkPolicy admitting only its own pods (docs/how-to/harden.md)",
    )
    add(
        "--pod-start-timeout",
        type=float,
        help="seconds a pod may be unable to start before its job fails (default 600; 0 never)",
    )
    add(
        "--manage-webhook-certificates",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="make and renew the webhook's certificates in the cluster (docs/how-to/install.md)",
    )
    add("--certificate-namespace", help="namespace of the webhook's Secret (default: the Lease's)")
    add(
        "--ca-bundle-configmap",
        help="keep this ConfigMap's ca.crt equal to the webhook's trust bundle (for scrapers)",
    )
    add(
        "--certificate-check-interval",
        type=float,
        help="seconds between checks of the webhook's Secret and caBundles (default 10)",
    )
    return parser


_CONVERTERS = {
    "kubeconfig": Path,
    "metrics_cert_dir": Path,
    "metrics_auth_cache_seconds": float,
    "workers": int,
    "lease_duration": float,
    "renew_deadline": float,
    "retry_period": float,
    "resync_period": float,
    "watch_timeout": int,
    "shutdown_timeout": float,
    "certificate_check_interval": float,
    "pod_start_timeout": float,
    "expectations_timeout": float,
}


def _is_switch(field_name: str) -> bool:
    """A setting that is on or off (its default is a bool): its variable is read by
    shared/envflags.py's rule, as every boolean variable of both processes is."""
    return isinstance(ControllerSettings.__dataclass_fields__[field_name].default, bool)


def from_args(
    argv: Sequence[str] | None = None, *, environ: Mapping[str, str] | None = None
) -> ControllerSettings:
    """Settings from command-line flags, then ``MXJOB_CONTROLLER_*`` env, then defaults."""
    args = vars(_parser().parse_args(argv))
    env = os.environ if environ is None else environ
    values: dict[str, object] = {}
    for field_name in ControllerSettings.__dataclass_fields__:
        flag_value = args.get(field_name)
        if flag_value is not None:
            values[field_name] = tuple(flag_value) if field_name == "namespaces" else flag_value
            continue
        raw = env.get(ENV_PREFIX + field_name.upper())
        if not raw and field_name in DEPRECATED_ENV:
            raw = env.get(ENV_PREFIX + DEPRECATED_ENV[field_name])
        if raw is None or raw == "":
            continue
        if field_name == "namespaces":
            values[field_name] = tuple(n for n in raw.replace(",", " ").split() if n)
        elif _is_switch(field_name):
            try:
                values[field_name] = parse_env_flag(raw, variable=ENV_PREFIX + field_name.upper())
            except NotABooleanError as error:
                raise SystemExit(f"mxjob-controller: {error}") from None
        else:
            values[field_name] = _CONVERTERS.get(field_name, str)(raw)
    if not values.get("identity"):
        values["identity"] = default_identity()
    settings = ControllerSettings(**values)  # type: ignore[arg-type]
    if settings.workers < 1:
        raise SystemExit("mxjob-controller: --workers must be at least 1")
    if settings.pod_start_timeout < 0:
        raise SystemExit("mxjob-controller: --pod-start-timeout must be 0 (never) or more")
    if settings.certificate_check_interval <= 0:
        raise SystemExit("mxjob-controller: --certificate-check-interval must be positive")
    if settings.metrics_secure and (
        settings.metrics_bind_address == settings.health_probe_bind_address
    ):  # the kubelet probes over plain HTTP without credentials
        raise SystemExit(
            "mxjob-controller: --metrics-secure serves /metrics apart from the probes: give "
            "--metrics-bind-address and --health-probe-bind-address different addresses"
        )
    if (
        settings.progress_reports
        and not settings.progress_bind_address.endswith(":0")  # any free port: no clash
        and settings.progress_bind_address
        in (settings.metrics_bind_address, settings.health_probe_bind_address)
    ):
        raise SystemExit(
            "mxjob-controller: --progress-bind-address must differ from the metrics and probe "
            "addresses: the progress endpoint is a server of its own"
        )
    if settings.gang_scheduler not in GANG_SCHEDULER_CHOICES:
        raise SystemExit(f"mxjob-controller: unknown gang scheduler {settings.gang_scheduler!r}")
    return settings
