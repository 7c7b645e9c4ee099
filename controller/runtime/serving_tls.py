"""The certificate of the controller's ``/metrics`` server and of its progress endpoint, and the CA
a job's pods verify the progress endpoint by.

The manifests mount the webhook's serving pair (``tls.crt``, ``tls.key`` of the Secret
``mxjob-webhook-tls``) into the controller as an optional volume, so the scrapers verify the
controller with the CA they verify the webhook with (docs/how-to/monitor.md, "How the endpoints are
served"). In the in-cluster certificate mode the controller makes that Secret itself and its pod
starts before it exists; until the kubelet fills the volume, and wherever no directory is given, the
server presents a self-signed certificate made at start, as controller-runtime does without a
certificate directory. The files are checked every ``CHECK_INTERVAL`` seconds and re-read when
they change (a renewal), so new handshakes get the new pair without a restart. How is
certs/reloader.py's, which the webhook uses too; the choices above are the controller's.

The progress endpoint (controller/progress/) presents the same pair, read by a reloader of its
own whose self-signed fallback names the progress Service (shared/progress.py). The pods verify
it by the CA of the pair (the Secret's ``ca.crt``, mounted beside it), which the controller hands
them in a ConfigMap per job (controller/integrations/statusca/): :func:`trust_anchor` says what
that CA is now. While the fallback is presented it is its own CA; as each replica makes its own,
a pod that reaches another replica than the one whose fallback it trusts fails to verify it
until the Secret is mounted (within a minute of a first install).
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from certs.reloader import CertificateReloader
from certs.serving import CertificateFiles
from certs.stored import CA_CERT_KEY, TLS_CERT_KEY
from shared import progress

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


def progress_certificate(*, cert_dir: Path | None, namespace: str) -> CertificateReloader:
    """The pair in ``cert_dir`` once it loads; before, and without a directory, a self-signed
    certificate for the progress Service in ``namespace``."""
    return CertificateReloader(
        files=None if cert_dir is None else CertificateFiles.in_directory(cert_dir),
        check_interval=CHECK_INTERVAL,
        fallback_hosts=progress.service_hosts(namespace),
    )


def _read(path: Path) -> bytes | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return data if data.strip() else None


def trust_anchor(certificate: CertificateReloader, *, cert_dir: Path | None) -> bytes | None:
    """The PEM a client verifies ``certificate`` by now: ``ca.crt`` of ``cert_dir`` while the
    directory's pair is presented (its ``tls.crt`` itself when the directory holds no CA, as a
    Secret of one's own may not), else the self-signed fallback's certificate; None when there is
    nothing to present."""
    if cert_dir is not None and certificate.presents_files():
        return _read(cert_dir / CA_CERT_KEY) or _read(cert_dir / TLS_CERT_KEY)
    return certificate.fallback_cert_pem
