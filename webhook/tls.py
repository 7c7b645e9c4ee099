"""TLS for the webhook: TLS 1.2+ server contexts whose certificate follows rotated files.

Certificates are rotated by rewriting ``tls.crt``/``tls.key`` (cert-manager, a Secret volume's
atomic symlink swap, or an operator by hand), and the webhook must pick the new pair up without a
restart: the API server may already trust only the new CA.

How: ``CertificateReloader.server_context()`` returns one *front* ``SSLContext`` whose
``sni_callback`` runs early in every handshake (with or without SNI from the client). The
callback asks ``current()`` for the newest good context and, if it is not the one the socket
started with, swaps it in (``sslsocket.context = ...``), so the handshake presents the newest
certificate. ``current()`` stats both files at most once per ``check_interval`` and re-loads them
only when their (mtime, size, inode) changed. A pair that does not load (a half-written file, a
key that does not match its certificate because only one of the two was replaced yet) is logged
and skipped: the previous certificate keeps being served and the files are tried again at the next
check. Established connections keep their session; only new handshakes see the new certificate.

gunicorn calls its ``ssl_context`` hook for each accepted connection; ``reloader_for`` memoises
one reloader per file pair and process, so every connection (and ``/readyz``) shares it.
"""

from __future__ import annotations

import logging
import os
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from cryptography import x509

log = logging.getLogger(__name__)

MINIMUM_TLS_VERSION: Final = ssl.TLSVersion.TLSv1_2


class CertificateUnavailableError(RuntimeError):
    """No certificate pair has ever loaded from the configured files."""


def new_server_context(*, cert_file: Path, key_file: Path) -> ssl.SSLContext:
    """A server context with TLS 1.2 as the floor, loaded from ``cert_file``/``key_file``.

    Raises ``OSError``/``ssl.SSLError`` when the files are missing, unreadable or do not match.
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = MINIMUM_TLS_VERSION
    context.load_cert_chain(certfile=str(cert_file), keyfile=str(key_file))
    return context


_FileState = tuple[int, int, int, int]


def _file_state(path: Path) -> _FileState:
    # stat() follows symlinks, so the Secret volume's "..data" swap shows as a new inode.
    st = os.stat(path)
    return (st.st_mtime_ns, st.st_size, st.st_ino, st.st_dev)


@dataclass(frozen=True)
class LoadedCertificate:
    """What was loaded, for logs and tests: the serial and expiry of the leaf certificate."""

    serial: int
    not_valid_after: str


def _describe(cert_file: Path) -> LoadedCertificate | None:
    try:
        cert = x509.load_pem_x509_certificate(cert_file.read_bytes())
    except (OSError, ValueError):
        return None
    return LoadedCertificate(
        serial=cert.serial_number, not_valid_after=cert.not_valid_after_utc.isoformat()
    )


class CertificateReloader:
    """The newest loadable certificate pair from two files, checked at most every interval."""

    def __init__(
        self,
        *,
        cert_file: Path,
        key_file: Path,
        check_interval: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cert_file = cert_file
        self.key_file = key_file
        self.check_interval = check_interval
        self._clock = clock
        self._lock = threading.Lock()
        self._context: ssl.SSLContext | None = None
        self._front: ssl.SSLContext | None = None
        self._state: tuple[_FileState, _FileState] | None = None
        self._checked_at: float | None = None
        self._loaded: LoadedCertificate | None = None
        self._last_error: str | None = None
        self.reloads = 0
        """How many times a changed pair was loaded after the first load."""

    @property
    def loaded(self) -> LoadedCertificate | None:
        """The certificate currently served, or ``None`` before the first successful load."""
        return self._loaded

    @property
    def last_error(self) -> str | None:
        """Why the newest files could not be loaded, ``None`` when they could."""
        return self._last_error

    def ready(self) -> bool:
        """Whether a certificate is loaded (checking the files if it is time to)."""
        try:
            self.current()
        except CertificateUnavailableError:
            return False
        return True

    def current(self) -> ssl.SSLContext:
        """The newest pair that loaded; raises ``CertificateUnavailableError`` if none ever did."""
        with self._lock:
            now = self._clock()
            due = self._checked_at is None or now - self._checked_at >= self.check_interval
            if due or self._context is None:
                self._checked_at = now
                self._refresh()
            if self._context is None:
                raise CertificateUnavailableError(
                    f"no usable certificate in {self.cert_file} and {self.key_file}: "
                    f"{self._last_error}"
                )
            return self._context

    def _refresh(self) -> None:
        try:
            # Read the state before loading: if the files change while we load, the next check
            # sees a state different from the recorded one and loads again.
            state = (_file_state(self.cert_file), _file_state(self.key_file))
        except OSError as err:
            self._note_error(f"cannot stat certificate files: {err}")
            return
        if state == self._state and self._context is not None:
            return
        try:
            context = new_server_context(cert_file=self.cert_file, key_file=self.key_file)
        except (OSError, ssl.SSLError) as err:
            # Typically mid-rotation: one file replaced, the other not yet. Keep serving the
            # previous pair and try again at the next check.
            self._note_error(f"cannot load certificate pair: {err}")
            return
        first = self._context is None
        self._context = context
        self._state = state
        self._last_error = None
        self._loaded = _describe(self.cert_file)
        if not first:
            self.reloads += 1
        serial = None if self._loaded is None else format(self._loaded.serial, "x")
        expiry = None if self._loaded is None else self._loaded.not_valid_after
        log.info(
            "%s serving certificate serial=%s not_after=%s from %s",
            "loaded" if first else "reloaded",
            serial,
            expiry,
            self.cert_file,
        )

    def _note_error(self, message: str) -> None:
        if message != self._last_error:
            log.warning("%s (still serving the previous certificate, if any)", message)
        self._last_error = message

    def server_context(self) -> ssl.SSLContext:
        """The one context to wrap listening sockets with; it swaps in newer pairs per handshake.

        Raises ``CertificateUnavailableError`` when no pair has loaded yet, so a process with
        unusable files fails at start instead of at its first handshake.
        """
        initial = self.current()
        with self._lock:
            if self._front is None:
                # The front context starts as the first loaded one; contexts swapped in later
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


_registry_lock = threading.Lock()
_registry: dict[tuple[str, str], CertificateReloader] = {}


def reloader_for(
    *, cert_file: Path, key_file: Path, check_interval: float = 1.0
) -> CertificateReloader:
    """The process-wide reloader for this file pair (created on first use).

    Shared so the ``ssl_context`` server hook, called per connection, and ``/readyz`` agree on
    one loaded certificate and stat the files once per interval between them.
    """
    key = (os.path.abspath(cert_file), os.path.abspath(key_file))
    with _registry_lock:
        reloader = _registry.get(key)
        if reloader is None:
            reloader = CertificateReloader(
                cert_file=Path(key[0]), key_file=Path(key[1]), check_interval=check_interval
            )
            _registry[key] = reloader
        return reloader
