"""Settings of the webhook server: one frozen dataclass, read from flags and environment.

Flags win over environment variables (``MXJOB_WEBHOOK_*``), which win over the defaults below.
The in-process app (``create_app()`` in tests) uses ``WebhookSettings()`` as is: no TLS, no
cluster, nothing to configure.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from certs.serving import CertificateFiles
from shared.envflags import parse_env_flag

LogFormat = Literal["json", "text"]
LOG_FORMATS: Final = ("json", "text")
LOG_LEVELS: Final = ("debug", "info", "warning", "error", "critical")

MIB: Final = 1024 * 1024
DEFAULT_BIND: Final = "0.0.0.0:9443"
DEFAULT_CERT_DIR: Final = Path("/tmp/k8s-webhook-server/serving-certs")
ENV_PREFIX: Final = "MXJOB_WEBHOOK_"
SERVICE_ACCOUNT_DIR: Final = Path("/var/run/secrets/kubernetes.io/serviceaccount")


@dataclass(frozen=True, kw_only=True)
class WebhookSettings:
    """Everything the webhook process can be told; the defaults suit one replica in a cluster."""

    bind: str = DEFAULT_BIND
    """``host:port`` to listen on. 9443 is the port webhook Services conventionally target, and
    all interfaces because the API server reaches the pod through its Service IP."""

    cert_dir: Path | None = None
    """Directory holding ``tls.crt`` and ``tls.key`` (the layout of a mounted
    ``kubernetes.io/tls`` Secret and of cert-manager). ``None`` means no TLS, which only the
    in-process app uses; ``mxjob-webhook`` defaults it to ``DEFAULT_CERT_DIR`` and always serves
    TLS because the API server only calls webhooks over HTTPS."""

    workers: int = 1
    """gunicorn worker processes. One is enough: a review takes well under a millisecond, and
    ``/metrics`` (one registry per process) then describes the whole pod. Scale with replicas."""

    threads: int = 8
    """Threads per gthread worker: concurrent reviews per process. The API server keeps several
    connections open per webhook, and each in-flight review holds one thread."""

    keepalive: int = 100
    """Seconds an idle connection is kept open. Longer than the API server's idle-connection
    timeout (90 s), so the client, not the server, closes idle connections and never sends a
    review on a connection the server is closing at the same moment."""

    max_connection_age: float = 30.0
    """Seconds after which a kept-alive connection is closed once its current response is sent
    (0: never). The API server picks one of the Service's ready endpoints only when it dials, so
    without a limit a connection stays with the replica it first reached and a replica added by
    a scale-up gets no reviews on it; with one, every connection is redialled within this time
    and the API server's reviews spread over every ready replica (``webhook.worker``). The cost
    is one TLS handshake per connection per period."""

    timeout: int = 30
    """Seconds a gunicorn worker may stay silent before the arbiter restarts it. Far above any
    review (the API server gives up after the webhook's ``timeoutSeconds``, at most 30 s)."""

    graceful_timeout: int = 20
    """Seconds in-flight reviews get to finish after SIGTERM before workers are killed. Below the
    pod's default ``terminationGracePeriodSeconds`` of 30 s."""

    cert_check_interval: float = 1.0
    """How often, at most, the certificate files' metadata is checked for a rotation. A stat per
    second is free, and a rotated certificate is served for new handshakes within a second."""

    max_body_bytes: int = 3 * MIB
    """Largest request body read. The API server never sends more (its request limit is 3 MiB),
    so anything larger is not from it and gets 413 without being parsed."""

    log_format: LogFormat = "text"
    """``json`` for log collectors in a cluster, ``text`` for people at a terminal."""

    kueue_workloads: bool = False
    """Kueue's Workload route (docs/how-to/queue-with-kueue.md): create jobs with a
    ``kueue.x-k8s.io/queue-name`` label suspended, for Kueue ≥ v0.11 with MXJob among its
    ``integrations.externalFrameworks``. Off for Kueue ≤ v0.10, whose own webhook does it."""

    progress_reports: bool = True
    """Write into every MXJob's pod templates what its pods report progress with: the URL of the
    controller's progress endpoint, a ServiceAccount token for it and the CA to verify it by
    (shared/progress_pods.py; docs/how-to/monitor.md, "Progress"). Off: nothing is written, for
    clusters whose controllers serve no progress (``--no-progress-reports``)."""

    operator_namespace: str = "mxjob-system"
    """The namespace of the controller's progress Service (``mxjob-controller-progress``), the
    operator's own: the manifests set it from the webhook pod's namespace."""

    log_level: str = "info"
    """Level of the webhook's and gunicorn's loggers. At ``info`` one line per review is logged
    (uid, kind, namespace/name, operation, result, duration) and never object contents."""

    metrics_bind: str | None = None
    """``host:port`` of a listener apart from admission that serves ``/metrics`` only (the
    manifests: ``0.0.0.0:8443``), so a NetworkPolicy can tell scrapes from reviews. ``None``:
    ``/metrics`` is served on ``bind`` beside the reviews, and never asks for credentials."""

    metrics_secure: bool = True
    """On the metrics listener, answer only scrapers the API server authenticates and
    authorizes for ``get /metrics`` (shared/metrics_access.py). Needs the pod's ServiceAccount
    token and API access (``api_*`` below). Off: that listener answers anyone (still over TLS)."""

    metrics_auth_cache_seconds: float = 60.0
    """Seconds a scraper's TokenReview and SubjectAccessReview are reused."""

    api_server: str = ""
    """URL of the API server the reviews go to; empty: ``https://$KUBERNETES_SERVICE_HOST:
    $KUBERNETES_SERVICE_PORT``, as every in-cluster client reads it."""

    api_token_file: Path = SERVICE_ACCOUNT_DIR / "token"
    """The webhook's own token, re-read for every review (the kubelet rotates it)."""

    api_ca_file: Path = SERVICE_ACCOUNT_DIR / "ca.crt"
    """The CA the API server's certificate is verified against."""

    def __post_init__(self) -> None:
        # Fail when the settings are made, not when gunicorn forks a worker with them.
        host_port(self.bind)
        metrics_port = None if self.metrics_bind is None else host_port(self.metrics_bind)[1]
        if metrics_port is not None and metrics_port == host_port(self.bind)[1] != 0:
            raise ValueError("metrics_bind must be a port apart from bind's")
        if self.workers < 1:
            raise ValueError(f"workers must be at least 1, got {self.workers}")
        if self.threads < 1:
            raise ValueError(f"threads must be at least 1, got {self.threads}")
        for name in (
            "keepalive",
            "max_connection_age",
            "timeout",
            "graceful_timeout",
            "cert_check_interval",
            "metrics_auth_cache_seconds",
        ):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative")
        if self.max_body_bytes < 1:
            raise ValueError(f"max_body_bytes must be positive, got {self.max_body_bytes}")
        if self.log_format not in LOG_FORMATS:
            raise ValueError(f"log_format must be one of {LOG_FORMATS}, got {self.log_format!r}")
        if self.progress_reports and not self.operator_namespace:
            raise ValueError("operator_namespace must name the controller's namespace")
        if self.log_level.lower() not in LOG_LEVELS:
            raise ValueError(f"log_level must be one of {LOG_LEVELS}, got {self.log_level!r}")

    @property
    def certificate_files(self) -> CertificateFiles | None:
        """``tls.crt`` and ``tls.key`` in ``cert_dir``, or ``None`` without TLS."""
        return None if self.cert_dir is None else CertificateFiles.in_directory(self.cert_dir)

    @property
    def cert_file(self) -> Path | None:
        """``<cert_dir>/tls.crt``, or ``None`` without TLS."""
        return None if self.certificate_files is None else self.certificate_files.cert_file

    @property
    def key_file(self) -> Path | None:
        """``<cert_dir>/tls.key``, or ``None`` without TLS."""
        return None if self.certificate_files is None else self.certificate_files.key_file


def host_port(bind: str) -> tuple[str, int]:
    """Split ``host:port`` (``[v6]:port`` for IPv6) and check the port; raises ``ValueError``."""
    host, sep, port_text = bind.rpartition(":")
    if not sep or not host:
        raise ValueError(f"bind address must be host:port, got {bind!r}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        port = int(port_text)
    except ValueError:
        raise ValueError(f"bind port must be a number, got {port_text!r}") from None
    if not 0 <= port <= 65535:
        raise ValueError(f"bind port must be in 0..65535, got {port}")
    return host, port


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mxjob-webhook",
        description=(
            "Admission (validating, mutating) and CRD conversion webhook for MXJob, served over "
            f"TLS by gunicorn. Every flag can also be set as {ENV_PREFIX}<FLAG> "
            f"(e.g. {ENV_PREFIX}CERT_DIR); flags win."
        ),
    )
    parser.add_argument("--bind", help=f"host:port to listen on (default {DEFAULT_BIND})")
    parser.add_argument(
        "--cert-dir",
        type=Path,
        help=f"directory with tls.crt and tls.key, re-read when they change "
        f"(default {DEFAULT_CERT_DIR})",
    )
    parser.add_argument("--workers", type=int, help="gunicorn worker processes (default 1)")
    parser.add_argument("--threads", type=int, help="threads per worker (default 8)")
    parser.add_argument("--keepalive", type=int, help="idle connection seconds (default 100)")
    parser.add_argument(
        "--max-connection-age",
        type=float,
        help="seconds after which a kept-alive connection is closed after its current response,"
        " so clients redial and reach every replica; 0: never (default 30)",
    )
    parser.add_argument("--timeout", type=int, help="worker silence timeout seconds")
    parser.add_argument(
        "--graceful-timeout", type=int, help="seconds to finish reviews after SIGTERM"
    )
    parser.add_argument(
        "--cert-check-interval", type=float, help="seconds between certificate file checks"
    )
    parser.add_argument("--max-body-bytes", type=int, help="largest request body (default 3 MiB)")
    parser.add_argument("--log-format", choices=LOG_FORMATS, help="json or text (default text)")
    parser.add_argument("--log-level", choices=LOG_LEVELS, help="log level (default info)")
    parser.add_argument(
        "--kueue-workloads",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="create queued jobs suspended for Kueue's Workload route "
        "(docs/how-to/queue-with-kueue.md)",
    )
    parser.add_argument(
        "--progress-reports",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="write the progress env, token and CA into every MXJob's pod templates "
        "(default on; docs/how-to/monitor.md)",
    )
    parser.add_argument(
        "--operator-namespace",
        help="namespace of the controller's progress Service (default mxjob-system)",
    )
    parser.add_argument(
        "--metrics-bind",
        help="host:port of a listener serving /metrics only (default: /metrics on --bind)",
    )
    parser.add_argument(
        "--metrics-secure",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="on --metrics-bind, answer only scrapers the API server authenticates and "
        "authorizes for get /metrics (default on)",
    )
    parser.add_argument(
        "--metrics-auth-cache-seconds",
        type=float,
        help="seconds a scraper's TokenReview and SubjectAccessReview are reused (default 60)",
    )
    parser.add_argument("--api-server", help="API server URL (default: the in-cluster one)")
    parser.add_argument("--api-token-file", type=Path, help="the webhook's ServiceAccount token")
    parser.add_argument("--api-ca-file", type=Path, help="the API server's CA")
    return parser


_CONVERTERS: Final[dict[str, Callable[..., Any]]] = {
    # Every setting the environment sets (hack/docgen/flags_page.py lists these), and how.
    "bind": str,
    "cert_dir": Path,
    "workers": int,
    "threads": int,
    "keepalive": int,
    "max_connection_age": float,
    "timeout": int,
    "graceful_timeout": int,
    "cert_check_interval": float,
    "max_body_bytes": int,
    "log_format": str,
    "log_level": str,
    "kueue_workloads": parse_env_flag,
    "progress_reports": parse_env_flag,
    "operator_namespace": str,
    "metrics_bind": str,
    "metrics_secure": parse_env_flag,
    "metrics_auth_cache_seconds": float,
    "api_server": str,
    "api_token_file": Path,
    "api_ca_file": Path,
}


def _from_env(*, name: str, raw: str) -> Any:
    """Setting ``name`` from its variable's value ``raw``; ``ValueError`` names the variable."""
    variable = ENV_PREFIX + name.upper()
    convert = _CONVERTERS[name]
    if convert is parse_env_flag:  # its refusal names the variable and the words allowed
        return parse_env_flag(raw, variable=variable)
    try:
        return convert(raw)
    except ValueError:
        raise ValueError(f"{variable}={raw!r} is not a valid {name} value") from None


def from_env_and_args(
    argv: Sequence[str] | None = None, *, environ: Mapping[str, str] | None = None
) -> WebhookSettings:
    """Settings for the ``mxjob-webhook`` process: flags, then ``MXJOB_WEBHOOK_*``, then defaults.

    Unlike ``WebhookSettings()``, the certificate directory defaults to ``DEFAULT_CERT_DIR``:
    the process always serves TLS. Bad values exit with status 2 and a usage message, as argparse
    does for bad flags.
    """
    parser = _parser()
    args = parser.parse_args(argv)
    env = os.environ if environ is None else environ
    values: dict[str, Any] = {"cert_dir": DEFAULT_CERT_DIR}
    for name in _CONVERTERS:
        flag_value = getattr(args, name)
        if flag_value is not None:
            values[name] = flag_value
            continue
        raw = env.get(ENV_PREFIX + name.upper())
        if raw is None or raw == "":
            continue
        try:
            values[name] = _from_env(name=name, raw=raw)
        except ValueError as error:
            parser.error(str(error))
    try:
        return WebhookSettings(**values)
    except ValueError as err:
        parser.error(str(err))
