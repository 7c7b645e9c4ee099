"""gunicorn's ``gthread`` worker with a maximum connection age, and no thread held by silence.

The API server keeps its connections to a webhook open and resolves the webhook's Service to one
ready endpoint only when it dials a new one. Kept alive for ever, a connection stays with the
replica it first reached: replicas added by a scale-up, or new after a rolling update, get
reviews only once the API server happens to need more connections than it has. Envoy's
``max_connection_duration`` and gRPC's ``MAX_CONNECTION_AGE`` answer the same problem the same
way, and so does this worker: once a connection is older than ``max_connection_age`` seconds,
the next response on it says ``Connection: close`` and the worker closes it after sending that
response. The client then dials again and its Service resolution picks a replica afresh.

Closing only after a response, never an idle connection, is what loses nothing: a client that
sent a request gets its answer, and one told ``Connection: close`` does not send another on that
connection. (An app cannot do this itself: gunicorn drops hop-by-hop headers such as
``Connection`` that an app sets.) An idle connection past the age stays open until its next
request or gunicorn's ``keepalive`` timeout, whichever comes first.

The second change: gunicorn's ``gthread`` hands a new TLS connection to a thread, which does the
handshake and then blocks until the first request arrives. A client that opens connections and
leaves them idle (an HTTP client's pool, which may dial more connections in a burst than it
then uses) holds one thread each, and ``--threads`` of them stop the server from answering
anyone. Here the thread does the handshake and, unless the request is already there, hands the
connection back to the worker's poller, which waits for the request without a thread, as it
already does for kept-alive connections and for new ones whose first bytes are late.
"""

from __future__ import annotations

import selectors
import ssl
import time
from typing import Any

from gunicorn.workers import gthread
from gunicorn.workers.gthread import ThreadWorker

_OPENED = "_mxjob_opened"
"""Attribute of gunicorn's connection object: when the worker first handed it to a thread."""


_DEFER: object | None = getattr(gthread, "_DEFER", None)
"""What ``handle`` returns to have the poller wait for the connection's data (gunicorn 24+).

A private name of gunicorn's: tests/webhook/test_worker.py fails if an upgrade removes it or any
other gthread internal this module uses, since the fallback would silently drop the deferral."""
_DATA_TIMEOUT: float = getattr(gthread, "DEFAULT_WORKER_DATA_TIMEOUT", 5.0)


def past_max_age(opened: float, now: float, *, max_age: float) -> bool:
    """Whether a connection opened at ``opened`` must close after this response.

    ``max_age`` 0 (or less) turns the limit off.
    """
    return max_age > 0 and now - opened >= max_age


class WebhookWorker(ThreadWorker):  # type: ignore[misc]  # gunicorn ships no type hints
    """``gthread`` that closes a kept-alive connection after a response once it is too old, and
    gives a new TLS connection's thread back until its first request arrives.

    gunicorn is given a subclass made by :func:`webhook_worker_class` with the age set; this base
    class never limits the age.
    """

    max_connection_age: float = 0.0

    def enqueue_req(self, conn: Any) -> None:
        # Called on accept (first) and for each later request on a kept-alive connection.
        if not hasattr(conn, _OPENED):
            setattr(conn, _OPENED, time.monotonic())
        super().enqueue_req(conn)

    def handle(self, conn: Any) -> Any:
        if _DEFER is None or not self.cfg.is_ssl or conn.initialized:
            return super().handle(conn)
        # A new TLS connection: gunicorn's own first steps (wait for the ClientHello, then the
        # handshake), but the thread is given back if no request follows at once.
        if not conn.wait_for_data(_DATA_TIMEOUT):
            return _DEFER
        conn.sock.setblocking(True)
        try:
            conn.init()
        except ssl.SSLError as error:  # as gunicorn's handle(): logged, the alert already sent
            if error.args[0] != ssl.SSL_ERROR_EOF:
                self.handle_error(None, conn.sock, conn.client, error)
            return False  # the worker closes the connection
        except OSError as error:  # reset or gone before the handshake ended
            self.log.debug("connection lost in the TLS handshake: %s", error)
            return False
        if conn.is_http2 or request_waiting(conn.sock):
            return super().handle(conn)
        return _DEFER

    def handle_request(self, req: Any, conn: Any) -> Any:
        opened = getattr(conn, _OPENED, None)
        if opened is not None and past_max_age(
            opened, time.monotonic(), max_age=self.max_connection_age
        ):
            # The request asks for the close: gunicorn answers with "Connection: close" and
            # closes the connection once the response is sent.
            req.must_close = True
        return super().handle_request(req, conn)


def request_waiting(sock: Any) -> bool:
    """Whether bytes of a request are there to read now, decrypted or still on the socket."""
    if sock.pending() > 0:
        return True
    with selectors.DefaultSelector() as selector:
        selector.register(sock, selectors.EVENT_READ)
        return bool(selector.select(timeout=0))


def webhook_worker_class(*, max_connection_age: float) -> type[WebhookWorker]:
    """The worker class to give gunicorn for ``max_connection_age`` seconds (0: no limit)."""
    return type(
        "WebhookWorker",
        (WebhookWorker,),
        {"max_connection_age": float(max_connection_age), "__module__": __name__},
    )
