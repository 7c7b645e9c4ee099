"""The certificate of the controller's ``/metrics`` server.

The manifests mount the webhook's serving pair (``tls.crt``, ``tls.key`` of the Secret
``mxjob-webhook-tls``) into the controller as an optional volume, so the scrapers verify the
controller with the CA they verify the webhook with (docs/how-to/monitor.md, "How the endpoints are
served"). In the in-cluster certificate mode the controller makes that Secret itself and its pod
starts before it exists; until the kubelet fills the volume, and wherever no directory is given, the
server presents a self-signed certificate made at start, as controller-runtime does without a
certificate directory. The files are checked every ``CHECK_INTERVAL`` seconds and re-read when
they change (a renewal), so new handshakes get the new pair without a restart. How is
certs/reloader.py's, which the webhook uses too; the choices above are the controller's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from certs.reloader import CertificateReloader
from certs.serving import CertificateFiles

METRICS_SERVICE: Final = "mxjob-controller-metrics"
"""The Service scrapers reach the controller's metrics by (manifests/base/controller.yaml): the
name the self-signed certificate carries."""
CHECK_INTERVAL: Final = 5.0
"""Seconds between two looks at the files: a scrape comes every few tens of seconds, and a
renewed pair is there well before the old one expires."""


def metrics_certificate(*, cert_dir: Path | None, namespace: str) -> CertificateReloader:
    """The pair in ``cert_dir`` once it loads; before, and without a directory, a self-signed
    certificate for the metrics Service in ``namespace``."""
    return CertificateReloader(
        files=None if cert_dir is None else CertificateFiles.in_directory(cert_dir),
        check_interval=CHECK_INTERVAL,
        fallback_hosts=(f"{METRICS_SERVICE}.{namespace}.svc",),
    )
