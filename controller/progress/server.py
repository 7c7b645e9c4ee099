"""The progress endpoint's HTTPS server: sockets, TLS and framing; the answers are decided
elsewhere (controller/progress/wire.py, controller/progress/service.py).

``http.server`` with a thread per connection, as the probes and ``/metrics`` are served
(controller/runtime/health.py): a report is one small POST every few seconds per pod. Every
accepted connection is wrapped in the newest TLS context the provider returns
(certs/reloader.py), so a renewed certificate is served from the next handshake on, without a
restart; the handshake runs in the connection's own thread, so a slow client never holds the
accept loop. Each connection serves one request (HTTP/1.0), which is how the reporting library
sends them anyway.

A body is read only as far as the limit: a declared length over it is answered 413 at once, a
chunked body once its chunks pass it. A refused request's unread body is then read and thrown
away for a moment before the connection is closed, because closing a socket with unread data
resets it, and the client could lose the answer.
"""

from __future__ import annotations

import logging
import re
import socket
import ssl
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from io import BufferedIOBase
from typing import ClassVar, Final

from controller.progress.counters import ProgressCounters
from controller.progress.service import ProgressService
from controller.progress.wire import (
    Framing,
    Reply,
    body_framing,
    request_target,
    status_reply,
    too_large,
)

log = logging.getLogger(__name__)

READ_TIMEOUT: Final = 10.0
"""Seconds a connection may take per read: its TLS handshake, its request, each of its chunks."""
LINGER_SECONDS: Final = 1.0
"""How long a refused request's unread body is drained before the connection is closed."""
LINGER_BYTES: Final = 1024 * 1024
"""How much of it is drained at most: thrown away as it comes, never kept."""
CHUNK_SIZE: Final = re.compile(rb"[0-9A-Fa-f]{1,8}")
MAX_LINE: Final = 1024
"""Longest chunk-size or trailer line read."""
POLL_SECONDS: Final = 0.1
"""How soon :meth:`ProgressServer.stop` is noticed by the accept loop."""
METHODS: Final = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE")
"""Methods answered (405 but for POST); others get ``http.server``'s 501."""


def _read_chunked(stream: BufferedIOBase, *, max_body: int) -> bytes | Reply | None:
    """A chunked body, 413 once it passes ``max_body``, 400 when malformed, None when the
    client went away mid-body."""
    parts: list[bytes] = []
    total = 0
    while True:
        line = stream.readline(MAX_LINE)
        if not line.endswith(b"\n"):
            return None if not line else status_reply(400, "chunked body: a line too long")
        size_text = line.split(b";", 1)[0].strip()
        if CHUNK_SIZE.fullmatch(size_text) is None:
            return status_reply(400, "chunked body: malformed chunk size")
        size = int(size_text, 16)
        if size == 0:
            break
        total += size
        if total > max_body:
            return too_large(max_body)
        chunk = stream.read(size + 2)
        if len(chunk) < size + 2:
            return None
        if chunk[-2:] != b"\r\n":
            return status_reply(400, "chunked body: a chunk longer than its size")
        parts.append(chunk[:-2])
    for _ in range(64):  # trailers, up to the blank line
        if stream.readline(MAX_LINE).strip() == b"":
            break
    return b"".join(parts)


def read_body(stream: BufferedIOBase, framing: Framing, *, max_body: int) -> bytes | Reply | None:
    """The body as ``framing`` says (see :func:`_read_chunked` for what else comes back)."""
    if framing.length is None:
        return _read_chunked(stream, max_body=max_body)
    data = stream.read(framing.length) if framing.length else b""
    return data if len(data) == framing.length else None


class _ReportHandler(BaseHTTPRequestHandler):
    """One connection: one request, one answer. Bound to its service by :func:`_handler`."""

    server_version = "mxjob-progress"
    timeout = READ_TIMEOUT
    service: ClassVar[ProgressService]
    counters: ClassVar[ProgressCounters]
    max_body: ClassVar[int]

    def _serve(self) -> None:
        headers = {k.lower(): v for k, v in self.headers.items()}
        for name in ("content-length", "transfer-encoding"):
            values = self.headers.get_all(name) or []
            if len(values) > 1:
                headers[name] = ", ".join(values)
        framing = body_framing(headers, max_body=self.max_body)
        if isinstance(framing, Reply):
            self._answer(framing, linger=True)
            return
        target = request_target(self.command, self.path, headers)
        body = read_body(self.rfile, framing, max_body=self.max_body)
        if body is None:
            self.close_connection = True  # the client is gone: nobody to answer
        elif isinstance(body, Reply):
            self._answer(body, linger=True)
        elif isinstance(target, Reply):
            self._answer(target)
        else:
            try:
                reply = self.service.handle(target, headers, body)
            except Exception as error:
                log.exception("progress report for %s/%s failed", target.namespace, target.name)
                reply = status_reply(500, f"internal error: {type(error).__name__}")
            self._answer(reply)

    def _answer(self, reply: Reply, *, linger: bool = False) -> None:
        self.counters.answered(reply.status)
        self.send_response(reply.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply.body)))
        for name, value in reply.headers:
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(reply.body)
        self.wfile.flush()
        if linger:
            self._drain()

    def _drain(self) -> None:
        """Read and discard what the client still sends, for :data:`LINGER_SECONDS` and
        :data:`LINGER_BYTES` at most."""
        deadline = time.monotonic() + LINGER_SECONDS
        discarded = 0
        try:
            # The answer is out: end our side, so a client reading to the end is not kept
            # waiting (TLS ends too, so what is drained is thrown away undeciphered).
            self.connection.shutdown(socket.SHUT_WR)
            self.connection.settimeout(LINGER_SECONDS)
            while discarded <= LINGER_BYTES and time.monotonic() < deadline:
                chunk = self.rfile.read1(16384)
                if not chunk:
                    break
                discarded += len(chunk)
        except (OSError, ValueError):
            pass

    def version_string(self) -> str:
        return self.server_version  # not the Python version

    def log_message(self, format: str, *args: object) -> None:
        log.debug("%s %s", self.address_string(), format % args)


for _method in METHODS:  # http.server dispatches to do_<METHOD>; every one is served alike
    setattr(_ReportHandler, f"do_{_method}", _ReportHandler._serve)


def _handler(
    service: ProgressService, counters: ProgressCounters, *, max_body: int
) -> type[_ReportHandler]:
    class Handler(_ReportHandler):
        pass

    Handler.service = service
    Handler.counters = counters
    Handler.max_body = max_body
    return Handler


class _TlsServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        tls: Callable[[], ssl.SSLContext],
    ) -> None:
        self.tls = tls
        super().__init__(address, handler)

    def get_request(self) -> tuple[socket.socket, tuple[str, int]]:
        connection, client = self.socket.accept()
        connection.settimeout(READ_TIMEOUT)
        try:
            context = self.tls()
        except Exception as error:  # nothing to present: refuse this one, keep accepting
            connection.close()
            log.warning("progress connection refused: no certificate to present: %s", error)
            raise OSError("no certificate to present") from error
        wrapped = context.wrap_socket(connection, server_side=True, do_handshake_on_connect=False)
        return wrapped, client

    def handle_error(self, request: object, client_address: object) -> None:
        # A failed handshake or a client gone mid-request is the client's business.
        log.debug("progress connection from %s failed", client_address, exc_info=True)


class ProgressServer:
    """The HTTPS server of the endpoint, bound at construction, serving once started."""

    def __init__(
        self,
        *,
        host: str,
        port: int,
        service: ProgressService,
        counters: ProgressCounters,
        tls: Callable[[], ssl.SSLContext],
        max_body_bytes: int,
    ) -> None:
        handler = _handler(service, counters, max_body=max_body_bytes)
        self._server = _TlsServer((host, port), handler, tls)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": POLL_SECONDS},
            name=f"progress-https-{port}",
            daemon=True,
        )

    @property
    def port(self) -> int:
        """The bound port (useful with port 0)."""
        return int(self._server.server_address[1])

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()
