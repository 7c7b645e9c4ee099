"""The TLS context of the controller's ``/metrics`` server.

The manifests mount the webhook's serving pair (``tls.crt``, ``tls.key`` of the Secret
``mxjob-webhook-tls``) into the controller as an optional volume, so the scrapers verify the
controller with the CA they verify the webhook with (docs/how-to/monitor.md, "How the endpoints are
served"). In the in-cluster certificate mode the controller makes that Secret itself and its pod
starts before it exists; until the kubelet fills the volume, and wherever no directory is given, the
server presents a self-signed certificate made at start, as controller-runtime does without a
certificate directory. The files are checked every ``check_interval`` seconds and re-read when they
change (a renewal), so new handshakes get the new pair without a restart.
"""

from __future__ import annotations

import logging
import ssl
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

from certs.authority import CertificateAuthority

log = logging.getLogger(__name__)

CERT_FILE: Final = "tls.crt"
KEY_FILE: Final = "tls.key"
MINIMUM_TLS_VERSION: Final = ssl.TLSVersion.TLSv1_2
METRICS_SERVICE: Final = "mxjob-controller-metrics"
"""The Service scrapers reach the controller's metrics by (manifests/base/controller.yaml): the
name the self-signed certificate carries."""

_Stamp = tuple[tuple[float, int, int], tuple[float, int, int]]


def _context(cert_file: Path, key_file: Path) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = MINIMUM_TLS_VERSION
    context.load_cert_chain(certfile=str(cert_file), keyfile=str(key_file))
    return context


def self_signed_context(*, hosts: tuple[str, ...]) -> ssl.SSLContext:
    """A context presenting a new self-signed certificate for ``hosts`` (kept in a private
    temporary directory only while it is loaded: ``load_cert_chain`` reads files)."""
    authority = CertificateAuthority.create(common_name=hosts[0], hosts=hosts, valid_days=365)
    with tempfile.TemporaryDirectory(prefix="mxjob-metrics-tls-") as scratch:
        cert_file, key_file = Path(scratch) / CERT_FILE, Path(scratch) / KEY_FILE
        cert_file.write_bytes(authority.pair.cert_pem)
        key_file.touch(mode=0o600)
        key_file.write_bytes(authority.pair.key_pem)
        return _context(cert_file, key_file)


class ServingCertificate:
    """The newest usable context: ``cert_dir``'s pair when it loads, the self-signed one
    otherwise (see the module docstring)."""

    def __init__(
        self,
        *,
        cert_dir: Path | None,
        hosts: tuple[str, ...],
        check_interval: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cert_dir = cert_dir
        self.check_interval = check_interval
        self._clock = clock
        self._fallback = self_signed_context(hosts=hosts)
        self._loaded: tuple[_Stamp, ssl.SSLContext] | None = None
        self._checked_at: float | None = None
        self._lock = threading.Lock()

    @property
    def source(self) -> str:
        """What new handshakes are answered with, for logs and tests."""
        self.context()
        return "self-signed" if self._loaded is None else str(self.cert_dir)

    def context(self) -> ssl.SSLContext:
        """The context for the next handshake."""
        with self._lock:
            now = self._clock()
            if self._checked_at is None or now - self._checked_at >= self.check_interval:
                self._checked_at = now
                self._refresh()
            return self._fallback if self._loaded is None else self._loaded[1]

    def _refresh(self) -> None:
        if self.cert_dir is None:
            return
        cert_file, key_file = self.cert_dir / CERT_FILE, self.cert_dir / KEY_FILE
        try:
            stamp = (_stat(cert_file), _stat(key_file))
        except OSError:
            return  # not mounted yet (or taken away): keep what is served
        if self._loaded is not None and self._loaded[0] == stamp:
            return
        try:
            context = _context(cert_file, key_file)
        except (OSError, ssl.SSLError) as error:  # half-written: try again at the next check
            log.warning("metrics certificate in %s not loaded: %s", self.cert_dir, error)
            return
        log.info("metrics server presents the certificate in %s", self.cert_dir)
        self._loaded = (stamp, context)


def _stat(path: Path) -> tuple[float, int, int]:
    status = path.stat()  # follows the Secret volume's symlinks to the current files
    return (status.st_mtime, status.st_size, status.st_ino)
