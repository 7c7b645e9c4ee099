"""``/healthz``, ``/readyz`` and ``/metrics``, each address on its own server.

The controller has no web framework and needs none: ``http.server`` with a thread per request
answers three fixed paths. Health and metrics may listen on different addresses (the kubelet
probes one, Prometheus scrapes the other), so one small server is started per address with the
routes it serves. A server given a TLS context source speaks HTTPS only (the metrics server,
``--metrics-secure``); each route sees the request's headers, so ``/metrics`` can ask who is
scraping (shared/metrics_access.py).
"""

from __future__ import annotations

import logging
import socket
import ssl
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Final

from prometheus_client import CONTENT_TYPE_LATEST

from shared.metrics_access import MetricsGate

log = logging.getLogger(__name__)

Route = Callable[[Mapping[str, str]], tuple[int, str, bytes]]
"""Given the request's headers (names in lower case), returns (status code, content type,
body)."""

TEXT: Final = "text/plain; charset=utf-8"
HANDSHAKE_TIMEOUT: Final = 10.0
"""Seconds a connection may take to finish its TLS handshake and send its request."""


def probe_route(check: Callable[[], tuple[bool, str]]) -> Route:
    """A probe's route (``/healthz``, ``/readyz``): 200 ``ok`` when ``check`` passes, 503 with
    its reason otherwise, which is what the kubelet's HTTP probe reads."""

    def route(headers: Mapping[str, str]) -> tuple[int, str, bytes]:
        del headers  # the kubelet's probes carry no credentials and need none
        ok, reason = check()
        return (200, TEXT, b"ok\n") if ok else (503, TEXT, f"{reason}\n".encode())

    return route


def metrics_route(exposition: Callable[[], bytes], *, gate: MetricsGate | None = None) -> Route:
    """``/metrics``; with a ``gate``, only for a scraper the API server says may read it (401
    without a known token, 403 without the permission, 500 when the API server cannot say)."""

    def route(headers: Mapping[str, str]) -> tuple[int, str, bytes]:
        if gate is not None:
            decision = gate.check(headers.get("authorization"))
            if not decision.allowed:
                log.info("/metrics refused (%d): %s", decision.status, decision.reason)
                return decision.status, TEXT, f"{decision.reason}\n".encode()
        return 200, CONTENT_TYPE_LATEST, exposition()

    return route


def parse_address(address: str) -> tuple[str, int]:
    """``host:port`` (``:8080`` means all interfaces) → (host, port)."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"address must be host:port, got {address!r}")
    return host.strip("[]") or "0.0.0.0", int(port)


class _TlsServer(ThreadingHTTPServer):
    """Wraps every accepted connection in the newest context; the handshake runs in the
    connection's own thread (on its first read), so a slow client never holds the accept loop."""

    def __init__(
        self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler],
        tls: Callable[[], ssl.SSLContext],
    ) -> None:  # fmt: skip
        self.tls = tls
        super().__init__(address, handler)

    def get_request(self) -> tuple[socket.socket, tuple[str, int]]:
        connection, client = self.socket.accept()
        connection.settimeout(HANDSHAKE_TIMEOUT)
        wrapped = self.tls().wrap_socket(
            connection, server_side=True, do_handshake_on_connect=False
        )
        return wrapped, client

    def handle_error(self, request: object, client_address: object) -> None:
        # A failed handshake (plain HTTP on the port, a client that gives up) is the client's
        # problem, not a traceback on the controller's stderr.
        log.debug("metrics connection from %s failed", client_address, exc_info=True)


class HttpEndpoints:
    """One HTTP (or, with ``tls``, HTTPS) server answering a fixed set of GET paths."""

    def __init__(
        self,
        address: str,
        routes: Mapping[str, Route],
        *,
        tls: Callable[[], ssl.SSLContext] | None = None,
    ) -> None:
        table = dict(routes)

        class Handler(BaseHTTPRequestHandler):
            timeout = HANDSHAKE_TIMEOUT

            def do_GET(self) -> None:
                route = table.get(self.path.split("?", 1)[0])
                if route is None:
                    status, content_type, body = 404, TEXT, b"not found\n"
                else:
                    try:
                        headers = {k.lower(): v for k, v in self.headers.items()}
                        status, content_type, body = route(headers)
                    except Exception as error:
                        log.exception("%s failed", self.path)
                        status, content_type, body = 500, TEXT, f"{error}\n".encode()
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                log.debug("%s %s", self.address_string(), format % args)

        self.scheme = "http" if tls is None else "https"
        self._server = (
            ThreadingHTTPServer(parse_address(address), Handler)
            if tls is None
            else _TlsServer(parse_address(address), Handler, tls)
        )
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name=f"http-{address}", daemon=True
        )

    @property
    def port(self) -> int:
        """The bound port (useful with port 0)."""
        return int(self._server.server_address[1])

    def start(self) -> HttpEndpoints:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
