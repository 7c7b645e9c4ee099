"""``/healthz``, ``/readyz`` and ``/metrics`` over plain HTTP, each address on its own server.

The controller has no web framework and needs none: ``http.server`` with a thread per request
answers three fixed paths. Health and metrics may listen on different addresses (the kubelet
probes one, Prometheus scrapes the other), so one small server is started per address with the
routes it serves.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Final

from prometheus_client import CONTENT_TYPE_LATEST

log = logging.getLogger(__name__)

Route = Callable[[], tuple[int, str, bytes]]
"""Returns (status code, content type, body)."""

TEXT: Final = "text/plain; charset=utf-8"


def probe_route(check: Callable[[], tuple[bool, str]]) -> Route:
    """A probe's route (``/healthz``, ``/readyz``): 200 ``ok`` when ``check`` passes, 503 with
    its reason otherwise, which is what the kubelet's HTTP probe reads."""

    def route() -> tuple[int, str, bytes]:
        ok, reason = check()
        return (200, TEXT, b"ok\n") if ok else (503, TEXT, f"{reason}\n".encode())

    return route


def metrics_route(exposition: Callable[[], bytes]) -> Route:
    def route() -> tuple[int, str, bytes]:
        return 200, CONTENT_TYPE_LATEST, exposition()

    return route


def parse_address(address: str) -> tuple[str, int]:
    """``host:port`` (``:8080`` means all interfaces) → (host, port)."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"address must be host:port, got {address!r}")
    return host.strip("[]") or "0.0.0.0", int(port)


class HttpEndpoints:
    """One HTTP server answering a fixed set of GET paths."""

    def __init__(self, address: str, routes: Mapping[str, Route]) -> None:
        table = dict(routes)

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                route = table.get(self.path.split("?", 1)[0])
                if route is None:
                    status, content_type, body = 404, TEXT, b"not found\n"
                else:
                    try:
                        status, content_type, body = route()
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

        self._server = ThreadingHTTPServer(parse_address(address), Handler)
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
