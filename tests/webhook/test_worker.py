"""The connection age rule of ``webhook.worker``; the real process is in test_serve.py.

Also the gunicorn internals the worker builds on: gunicorn documents its worker classes, not
their insides, so a gunicorn release may change them without notice. The tests below fail, naming
what to revisit, where the worker would otherwise quietly lose a behaviour (``_DEFER`` is read
with a fallback: without it, idle TLS connections hold threads again and nothing else fails).
"""

from __future__ import annotations

import inspect
import socket

import gunicorn
import pytest
from gunicorn.config import Config
from gunicorn.http.message import Message
from gunicorn.workers import gthread
from gunicorn.workers.gthread import ThreadWorker

from webhook import worker
from webhook.worker import WebhookWorker, past_max_age, webhook_worker_class

CHANGED = f"gunicorn {gunicorn.__version__} changed the gthread internals webhook/worker.py uses"


def test_a_connection_younger_than_the_max_age_stays_open() -> None:
    assert not past_max_age(100.0, 129.9, max_age=30)


def test_a_connection_at_or_past_the_max_age_closes() -> None:
    assert past_max_age(100.0, 130.0, max_age=30)
    assert past_max_age(100.0, 500.0, max_age=30)


def test_a_max_age_of_zero_never_closes() -> None:
    assert not past_max_age(0.0, 1e9, max_age=0)


def test_each_worker_class_carries_its_own_age() -> None:
    short = webhook_worker_class(max_connection_age=2)
    long = webhook_worker_class(max_connection_age=60)
    assert issubclass(short, WebhookWorker) and issubclass(short, ThreadWorker)
    assert (short.max_connection_age, long.max_connection_age) == (2.0, 60.0)
    assert WebhookWorker.max_connection_age == 0.0


def test_gunicorn_still_has_the_sentinel_that_defers_a_connection_to_the_poller() -> None:
    defer = getattr(gthread, "_DEFER", None)
    revisit = (
        f"{CHANGED}: gunicorn.workers.gthread._DEFER, which ThreadWorker.handle returns to put a "
        "connection back on the poller. Revisit WebhookWorker.handle (the new TLS connection "
        "handed back after its handshake until a request arrives) and the module's _DEFER"
    )
    assert defer is not None, revisit
    assert worker._DEFER is defer, revisit
    assert "result is _DEFER" in inspect.getsource(ThreadWorker.finish_request), revisit


def test_gunicorn_still_has_the_data_timeout_of_a_new_connection() -> None:
    timeout = getattr(gthread, "DEFAULT_WORKER_DATA_TIMEOUT", None)
    assert isinstance(timeout, int | float) and timeout == worker._DATA_TIMEOUT, (
        f"{CHANGED}: gunicorn.workers.gthread.DEFAULT_WORKER_DATA_TIMEOUT, how long "
        "ThreadWorker.handle waits for a new connection's first bytes. Revisit "
        "WebhookWorker.handle and the module's _DATA_TIMEOUT"
    )


@pytest.mark.parametrize(
    ("owner", "method", "parameters"),
    [
        (ThreadWorker, "enqueue_req", ["self", "conn"]),
        (ThreadWorker, "handle", ["self", "conn"]),
        (ThreadWorker, "handle_request", ["self", "req", "conn"]),
        (ThreadWorker, "handle_error", ["self", "req", "client", "addr", "exc"]),
        (gthread.TConn, "init", ["self"]),
        (gthread.TConn, "wait_for_data", ["self", "timeout"]),
    ],
)
def test_the_gthread_methods_the_worker_overrides_or_calls_keep_their_shape(
    owner: type, method: str, parameters: list[str]
) -> None:
    found = getattr(owner, method, None)
    shape = list(inspect.signature(found).parameters) if callable(found) else None
    assert shape == parameters, (
        f"{CHANGED}: {owner.__name__}.{method} is now {shape}, WebhookWorker relies on "
        f"{parameters}. Revisit WebhookWorker.{'handle' if owner is gthread.TConn else method}"
    )


def test_a_gthread_connection_has_the_state_the_worker_reads() -> None:
    left, right = socket.socketpair()
    with left, right:
        conn = gthread.TConn(Config(), left, ("198.18.0.2", 40000), ("198.18.0.1", 9443))
        state = {name: getattr(conn, name, "missing") for name in ("initialized", "is_http2")}
        assert state == {"initialized": False, "is_http2": False}, (
            f"{CHANGED}: gthread.TConn's initialized/is_http2 are now {state}. Revisit "
            "WebhookWorker.handle, which reads them to tell a new TLS connection"
        )
        assert (conn.sock, conn.client) == (left, ("198.18.0.2", 40000)), CHANGED
    tls = Config()
    tls.set("certfile", "/etc/mxjob-webhook/tls/tls.crt")
    assert tls.is_ssl and not Config().is_ssl, (
        f"{CHANGED}: Config.is_ssl no longer says whether gunicorn serves TLS. Revisit "
        "WebhookWorker.handle"
    )


def test_a_request_told_to_close_closes_its_connection() -> None:
    request = Message.__new__(Message)  # the one attribute read before its headers
    request.must_close = True
    assert request.should_close(), (
        f"{CHANGED}: a request's must_close no longer closes the connection. Revisit "
        "WebhookWorker.handle_request (the maximum connection age)"
    )
