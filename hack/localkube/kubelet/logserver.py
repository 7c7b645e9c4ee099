"""The test kubelet's container-log store and its HTTPS endpoint for ``kubectl logs``.

``kubectl logs`` asks the API server, which dials the pod's node at the port the Node advertises
(``status.daemonEndpoints.kubeletEndpoint.Port``) and forwards the kubelet's answer. This module is
that answer for the test kubelet: :class:`LogStore` keeps one CRI log file per container instance
(``<root>/<namespace>_<pod>_<uid>/<container>/<restart>.log``, the layout of ``/var/log/pods``),
and :class:`KubeletServer` serves ``GET /containerLogs/<namespace>/<pod>/<container>`` over TLS,
accepting only clients whose certificate the cluster CA signed, as a kubelet started with
``authentication.x509.clientCAFile`` does. What to answer is decided in
:mod:`localkube.kubelet.crilog`.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import logging
import socket
import ssl
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from localkube.kubelet.crilog import (
    LogOptions,
    LogRequestError,
    LogWriter,
    encode,
    format_timestamp,
    parse,
    parse_options,
    tail_start,
)

log = logging.getLogger(__name__)

PodLookup = Callable[[str, str], Mapping[str, Any] | None]
"""``(namespace, name)`` → the pod as the kubelet last saw it on its node, or None."""


class ContainerLog:
    """One container instance's output: a CRI log file, and whether the container has ended.

    Appends and readers share a condition, so a follower wakes the moment output arrives instead
    of polling the file.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: BinaryIO | None = path.open("ab")
        self._size = path.stat().st_size
        self._ended = False
        self._changed = threading.Condition()

    def append(self, data: bytes, *, stream: str) -> None:
        """Store a chunk the container wrote to ``stream``, stamped with the time it arrived."""
        if not data:
            return
        entries = encode(data, stream=stream, timestamp=format_timestamp(time.time_ns()))
        with self._changed:
            if self._file is None:  # output drained after the container was declared ended
                with self.path.open("ab") as late:
                    late.write(entries)
            else:
                self._file.write(entries)
                self._file.flush()
            self._size += len(entries)
            self._changed.notify_all()

    def end(self) -> None:
        """The container has exited: followers drain what is left and finish."""
        with self._changed:
            if self._file is not None:
                self._file.close()
                self._file = None
            self._ended = True
            self._changed.notify_all()

    @property
    def ended(self) -> bool:
        with self._changed:
            return self._ended

    def snapshot(self) -> tuple[int, bool]:
        """(bytes stored, ended) at one instant: everything below that size is whole lines."""
        with self._changed:
            return self._size, self._ended

    def wait(self, offset: int, timeout: float) -> None:
        """Block until there is data beyond ``offset``, the container ended, or ``timeout``."""
        with self._changed:
            self._changed.wait_for(lambda: self._size > offset or self._ended, timeout=timeout)

    def read_lines(self, offset: int, size: int) -> list[bytes]:
        """The stored lines between byte ``offset`` and ``size`` (a snapshot's size)."""
        if size <= offset:
            return []
        with self.path.open("rb") as file:
            file.seek(offset)
            data = file.read(size - offset)
        return data.splitlines(keepends=True)


class LogStore:
    """Every container instance this kubelet ran, by pod UID, container name and restart count.

    Keyed by UID so a pod deleted and recreated under the same name (as the operator does) starts
    with an empty log; the files stay on disk after the pod is gone, for reading post mortem.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._lock = threading.Lock()
        self._logs: dict[tuple[str, str], dict[int, ContainerLog]] = {}

    def instance(
        self, *, namespace: str, pod: str, uid: str, container: str, restart: int
    ) -> ContainerLog:
        """The log of one container instance, created (empty, running) the first time."""
        with self._lock:
            restarts = self._logs.setdefault((uid, container), {})
            found = restarts.get(restart)
            if found is None:
                path = self.root / f"{namespace}_{pod}_{uid}" / container / f"{restart}.log"
                found = restarts[restart] = ContainerLog(path)
            return found

    def restarts(self, uid: str, container: str) -> dict[int, ContainerLog]:
        with self._lock:
            return dict(self._logs.get((uid, container), {}))

    def end_pod(self, uid: str) -> None:
        """Every container of the pod has stopped (it terminated, was evicted or deleted)."""
        with self._lock:
            logs = [
                log
                for (owner, _), by_restart in self._logs.items()
                if owner == uid
                for log in by_restart.values()
            ]
        for container_log in logs:
            container_log.end()

    def end_all(self) -> None:
        with self._lock:
            logs = [log for by_restart in self._logs.values() for log in by_restart.values()]
        for container_log in logs:
            container_log.end()


def _q(text: str) -> str:
    """Quoted as the kubelet's Go ``%q`` quotes names in its messages."""
    return json.dumps(text)


def choose_log(
    pod: Mapping[str, Any], container: str, options: LogOptions, store: LogStore
) -> ContainerLog:
    """The container instance a request reads, or the kubelet's refusal for it."""
    name = pod["metadata"]["name"]
    spec = pod.get("spec", {})
    names = {c.get("name") for c in [*spec.get("initContainers", []), *spec.get("containers", [])]}
    if container not in names:
        raise LogRequestError(404, f"container {_q(container)} not found in pod {_q(name)}")
    restarts = store.restarts(pod["metadata"]["uid"], container)
    if options.previous:
        current = max(restarts, default=None)
        previous = restarts.get(current - 1) if current is not None else None
        if previous is None:
            raise LogRequestError(
                400, f"previous terminated container {_q(container)} in pod {_q(name)} not found"
            )
        return previous
    if not restarts:
        statuses = pod.get("status", {}).get("containerStatuses") or []
        status: Mapping[str, Any] = next((s for s in statuses if s.get("name") == container), {})
        reason = (status.get("state") or {}).get("waiting", {}).get("reason")
        detail = f": {reason}" if reason else " - no logs yet"
        raise LogRequestError(
            400, f"container {_q(container)} in pod {_q(name)} is waiting to start{detail}"
        )
    return restarts[max(restarts)]


@dataclass(frozen=True)
class ServingTLS:
    """The kubelet's serving certificate and the CA its clients' certificates must chain to."""

    cert_pem: bytes
    key_pem: bytes
    client_ca_pem: bytes

    def server_context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        # ssl loads a chain only from files: write them where only this process reads them.
        with tempfile.TemporaryDirectory(prefix="test-kubelet-tls-") as tmp:
            cert, key = Path(tmp) / "tls.crt", Path(tmp) / "tls.key"
            cert.write_bytes(self.cert_pem)
            key.touch(mode=0o600)
            key.write_bytes(self.key_pem)
            context.load_cert_chain(str(cert), str(key))
        context.load_verify_locations(cadata=self.client_ca_pem.decode())
        # Optional, not required: a request without a certificate gets the kubelet's 401 rather
        # than a failed handshake; a certificate the CA did not sign still fails the handshake.
        context.verify_mode = ssl.CERT_OPTIONAL
        return context


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server
    timeout = 60  # a peer silent this long (mid-handshake or idle keep-alive) is dropped

    def setup(self) -> None:
        super().setup()
        assert isinstance(self.request, ssl.SSLSocket)
        self.request.do_handshake()

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("kubelet log server: " + format, *args)

    def _error(self, status: int, message: str) -> None:
        body = message.encode() + b"\n"
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def do_GET(self) -> None:
        assert isinstance(self.request, ssl.SSLSocket)
        if not self.request.getpeercert():
            self._error(401, "Unauthorized")
            return
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/healthz":
            self._error(200, "ok")
            return
        parts = url.path.split("/")
        if len(parts) != 5 or parts[1] != "containerLogs" or not all(parts[2:]):
            self._error(404, "404 page not found")
            return
        namespace, pod_name, container = (urllib.parse.unquote(p) for p in parts[2:])
        try:
            options = parse_options(urllib.parse.parse_qs(url.query), now_ns=time.time_ns())
            pod = self.server.pods(namespace, pod_name)
            if pod is None:
                raise LogRequestError(404, f"pod {_q(pod_name)} does not exist")
            container_log = choose_log(pod, container, options, self.server.store)
        except LogRequestError as refusal:
            self._error(refusal.status, refusal.message)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        with contextlib.suppress(OSError):  # the client went away mid-stream
            self._stream(container_log, options)
            self.wfile.write(b"0\r\n\r\n")

    def _stream(self, container_log: ContainerLog, options: LogOptions) -> None:
        writer = LogWriter(options)
        size, ended = container_log.snapshot()
        lines = container_log.read_lines(0, size)
        lines = lines[tail_start(lines, options.tail_lines) :]
        self._send(writer, lines)
        offset = size
        while options.follow and not writer.exhausted and not self.server.stopping.is_set():
            if ended and offset >= size:
                return
            container_log.wait(offset, timeout=1.0)
            size, ended = container_log.snapshot()
            self._send(writer, container_log.read_lines(offset, size))
            offset = size

    def _send(self, writer: LogWriter, lines: list[bytes]) -> None:
        entries = [entry for entry in map(parse, lines) if entry is not None]
        data = b"".join(writer.render(entries))
        if data:
            self._chunk(data)


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, context: ssl.SSLContext, store: LogStore, pods: PodLookup) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.socket = context.wrap_socket(
            self.socket, server_side=True, do_handshake_on_connect=False
        )
        self.store = store
        self.pods = pods
        self.stopping = threading.Event()

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A refused handshake (a certificate the CA did not sign) is the client's problem.
        log.debug("kubelet log server: request from %s failed", client_address, exc_info=True)

    def get_request(self) -> tuple[socket.socket, Any]:
        # The handshake runs in the request's thread (see _Handler.setup), so one slow client
        # cannot hold up accepting the next.
        return self.socket.accept()


class KubeletServer:
    """The kubelet's HTTPS port on a free loopback port, serving ``/containerLogs``."""

    def __init__(self, *, tls: ServingTLS, store: LogStore, pods: PodLookup) -> None:
        self._server = _Server(tls.server_context(), store, pods)
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> KubeletServer:
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.2},
            daemon=True,
            name=f"kubelet-server-{self.port}",
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop accepting; streams still following a log finish within a second."""
        self._server.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=2)
