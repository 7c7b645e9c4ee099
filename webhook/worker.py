"""gunicorn's ``gthread`` worker with a maximum connection age.

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
"""

from __future__ import annotations

import time
from typing import Any

from gunicorn.workers.gthread import ThreadWorker

_OPENED = "_mxjob_opened"
"""Attribute of gunicorn's connection object: when the worker first handed it to a thread."""


def past_max_age(opened: float, now: float, *, max_age: float) -> bool:
    """Whether a connection opened at ``opened`` must close after this response.

    ``max_age`` 0 (or less) turns the limit off.
    """
    return max_age > 0 and now - opened >= max_age


class AgingThreadWorker(ThreadWorker):  # type: ignore[misc]  # gunicorn ships no type hints
    """``gthread`` that closes a kept-alive connection after a response once it is too old.

    gunicorn is given a subclass made by :func:`aging_worker_class` with the age set; this base
    class never limits the age.
    """

    max_connection_age: float = 0.0

    def enqueue_req(self, conn: Any) -> None:
        # Called on accept (first) and for each later request on a kept-alive connection.
        if not hasattr(conn, _OPENED):
            setattr(conn, _OPENED, time.monotonic())
        super().enqueue_req(conn)

    def handle_request(self, req: Any, conn: Any) -> Any:
        opened = getattr(conn, _OPENED, None)
        if opened is not None and past_max_age(
            opened, time.monotonic(), max_age=self.max_connection_age
        ):
            # The request asks for the close: gunicorn answers with "Connection: close" and
            # closes the connection once the response is sent.
            req.must_close = True
        return super().handle_request(req, conn)


def aging_worker_class(*, max_connection_age: float) -> type[AgingThreadWorker]:
    """The worker class to give gunicorn for ``max_connection_age`` seconds (0: no limit)."""
    return type(
        "AgingThreadWorker",
        (AgingThreadWorker,),
        {"max_connection_age": float(max_connection_age), "__module__": __name__},
    )
