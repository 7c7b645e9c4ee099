"""The serving certificate of both processes, re-read when its files are rotated.

Certificates are rotated by rewriting ``tls.crt``/``tls.key`` (cert-manager, a Secret volume's
atomic symlink swap, the controller's certificate keeper, or an operator by hand), and a server
must pick the new pair up without a restart: the API server may already trust only the new CA.
The webhook serves its reviews and ``/metrics`` with one (webhook/tls.py), the controller its
``/metrics`` (controller/runtime/serving_tls.py).

``CertificateReloader.current()`` stats both files at most once per ``check_interval`` and
re-loads them only when their (mtime, size, inode, device) changed; ``stat`` follows symlinks, so
a Secret volume's ``..data`` swap shows as a new inode. A pair that does not load (a half-written
file, a key that does not match its certificate because only one of the two was replaced yet) or
files that are absent (a Secret volume not filled yet) are logged once per reason and skipped:
the previous certificate keeps being served, and the files are tried again at the next check.
Before any pair has loaded, a reloader given ``fallback_hosts`` presents a self-signed
certificate for them (the controller's metrics server starts before its Secret exists); one
without has nothing to present, so it looks at the files on every call rather than once per
interval, and ``current()`` raises.

Two ways to serve it, both to new handshakes only (established connections keep their
session): wrap each accepted connection with ``current()`` (the controller's
controller/runtime/health.py), or wrap the listener once with ``server_context()``, whose
``sni_callback`` runs early in every handshake (with or without SNI from the client) and swaps
the newest context into the connection (gunicorn, webhook/serve.py). Every method takes one lock,
so the threads of a gthread worker or an HTTP server share a reloader safely.
"""

from __future__ import annotations

import contextlib
import logging
import os
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509

from certs.serving import CertificateFiles, SelfSigned, new_server_context, self_signed

log = logging.getLogger(__name__)

SELF_SIGNED = "self-signed"
"""What ``CertificateReloader.source`` says while the fallback is presented."""


class CertificateUnavailableError(RuntimeError):
    """No certificate pair has ever loaded from the configured files, and there is no fallback."""


@dataclass(frozen=True)
class LoadedCertificate:
    """What was loaded, for logs and tests: the serial and expiry of the leaf certificate."""

    serial: int
    not_valid_after: str


_FileState = tuple[int, int, int, int]


def _file_state(path: Path) -> _FileState:
    status = os.stat(path)
    return (status.st_mtime_ns, status.st_size, status.st_ino, status.st_dev)


def _describe(cert_file: Path) -> LoadedCertificate | None:
    try:
        cert = x509.load_pem_x509_certificate(cert_file.read_bytes())
    except (OSError, ValueError):
        return None
    return LoadedCertificate(
        serial=cert.serial_number, not_valid_after=cert.not_valid_after_utc.isoformat()
    )


class CertificateReloader:
    """The newest loadable pair of ``files`` (checked at most every ``check_interval`` seconds),
    else the self-signed fallback for ``fallback_hosts``, if any (see the module docstring)."""

    def __init__(
        self,
        *,
        files: CertificateFiles | None,
        check_interval: float,
        fallback_hosts: tuple[str, ...] = (),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if files is None and not fallback_hosts:
            raise ValueError("a certificate reloader needs files, fallback hosts, or both")
        self.files = files
        self.check_interval = check_interval
        self._clock = clock
        fallback: SelfSigned | None = self_signed(hosts=fallback_hosts) if fallback_hosts else None
        self._fallback = None if fallback is None else fallback.context
        self.fallback_cert_pem = None if fallback is None else fallback.cert_pem
        """The self-signed certificate presented until a pair loads (None without fallback
        hosts): what a client must trust meanwhile, as it is its own CA."""
        self._lock = threading.Lock()
        self._context: ssl.SSLContext | None = None
        self._front: ssl.SSLContext | None = None
        self._state: tuple[_FileState, _FileState] | None = None
        self._checked_at: float | None = None
        self._loaded: LoadedCertificate | None = None
        self._last_error: str | None = None
        self.reloads = 0
        """How many times a changed pair was loaded after the first load."""

    def presents_files(self) -> bool:
        """Whether new handshakes get the pair of the files (checking them if it is time to),
        rather than the fallback or nothing."""
        with contextlib.suppress(CertificateUnavailableError):
            self.current()
        return self._context is not None

    @property
    def loaded(self) -> LoadedCertificate | None:
        """The pair currently served, or ``None`` before the first successful load."""
        return self._loaded

    @property
    def last_error(self) -> str | None:
        """Why the newest files could not be loaded, ``None`` when they could."""
        return self._last_error

    @property
    def source(self) -> str:
        """What new handshakes are answered with, for logs: the certificate file,
        ``self-signed``, or ``nothing`` (checking the files if it is time to)."""
        if not self.ready():
            return "nothing"
        if self._context is None or self.files is None:
            return SELF_SIGNED
        return str(self.files.cert_file)

    def ready(self) -> bool:
        """Whether there is a certificate to present (checking the files if it is time to)."""
        try:
            self.current()
        except CertificateUnavailableError:
            return False
        return True

    def current(self) -> ssl.SSLContext:
        """The newest pair that loaded, else the fallback; raises
        ``CertificateUnavailableError`` when there is neither."""
        with self._lock:
            now = self._clock()
            due = self._checked_at is None or now - self._checked_at >= self.check_interval
            if due or (self._context is None and self._fallback is None):
                self._checked_at = now
                self._refresh()
            if self._context is not None:
                return self._context
            if self._fallback is not None:
                return self._fallback
            raise CertificateUnavailableError(
                f"no usable certificate in {self._where()}: {self._last_error}"
            )

    def _where(self) -> str:
        if self.files is None:
            return "no files"
        return f"{self.files.cert_file} and {self.files.key_file}"

    def _refresh(self) -> None:
        files = self.files
        if files is None:
            return
        try:
            # Read the state before loading: if the files change while we load, the next check
            # sees a state different from the recorded one and loads again.
            state = (_file_state(files.cert_file), _file_state(files.key_file))
        except OSError as err:
            self._note_error(f"cannot stat certificate files: {err}")
            return
        if state == self._state and self._context is not None:
            return
        try:
            context = new_server_context(cert_file=files.cert_file, key_file=files.key_file)
        except (OSError, ssl.SSLError) as err:
            # Typically mid-rotation: one file replaced, the other not yet.
            self._note_error(f"cannot load certificate pair: {err}")
            return
        self._adopt(context, state=state, cert_file=files.cert_file)

    def _adopt(
        self, context: ssl.SSLContext, *, state: tuple[_FileState, _FileState], cert_file: Path
    ) -> None:
        first = self._context is None
        self._context = context
        self._state = state
        self._last_error = None
        self._loaded = _describe(cert_file)
        if not first:
            self.reloads += 1
        log.info(
            "%s serving certificate serial=%s not_after=%s from %s",
            "loaded" if first else "reloaded",
            None if self._loaded is None else format(self._loaded.serial, "x"),
            None if self._loaded is None else self._loaded.not_valid_after,
            cert_file,
        )

    def _note_error(self, message: str) -> None:
        if message != self._last_error:
            if self._context is not None:
                meanwhile = "still serving the previous certificate"
            elif self._fallback is not None:
                meanwhile = "serving a self-signed certificate meanwhile"
            else:
                meanwhile = "nothing to serve yet"
            log.warning("%s (%s)", message, meanwhile)
        self._last_error = message

    def server_context(self) -> ssl.SSLContext:
        """The one context to wrap listening sockets with; it swaps in newer pairs per handshake.

        Raises ``CertificateUnavailableError`` when there is nothing to present yet, so a
        process with unusable files and no fallback fails at start instead of at its first
        handshake.
        """
        initial = self.current()
        with self._lock:
            if self._front is None:
                # The front context starts as the first one served; contexts swapped in later
                # need no callback of their own, the handshake already ran this one.
                initial.sni_callback = self._on_client_hello
                self._front = initial
            return self._front

    def _on_client_hello(
        self, connection: ssl.SSLSocket | ssl.SSLObject, server_name: str | None, _: ssl.SSLContext
    ) -> None:
        del server_name  # one certificate for every name
        try:
            newest = self.current()
        except Exception:  # never fail a handshake over a reload problem: keep the old pair
            log.exception("certificate reload check failed")
            return
        if connection.context is not newest:
            connection.context = newest
