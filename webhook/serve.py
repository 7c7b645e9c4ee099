"""``mxjob-webhook``: the webhook app served by gunicorn over TLS.

Choices, and why:

- gunicorn's ``gthread`` worker: the API server keeps connections to a webhook open and sends
  review after review on them; the ``sync`` worker closes every connection after one request,
  which costs the API server a TLS handshake per admission. ``keepalive`` outlives the API
  server's idle timeout so the client always closes first.
- ... but no connection lives longer than ``max_connection_age``: ``webhook.worker`` closes an
  older one after its current response, so the API server redials and its Service resolution
  spreads reviews over every ready replica, new ones included. The same worker class gives a new
  connection's thread back after the TLS handshake until its first request arrives, so idle
  connections cannot take every thread.
- TLS 1.2 is the floor (certs/serving.py); plain HTTP on the port fails the handshake.
- Certificates are re-read when ``tls.crt``/``tls.key`` change, without a restart: gunicorn asks
  its ``ssl_context`` server hook for the context of each accepted connection, and the hook
  returns the front context of the worker's ``CertificateReloader`` (certs/reloader.py, shared by
  ``webhook.tls.reloader_for``), which swaps the newest loaded pair into every handshake.
- SIGTERM is gunicorn's graceful stop: workers stop accepting, in-flight reviews finish within
  ``graceful_timeout``, then the process exits 0.
- The app is built in each worker after the fork (no ``preload_app``), so every worker owns its
  metrics registry and its certificate reloader.
"""

from __future__ import annotations

import logging
import logging.config
import ssl
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from flask import Flask
from gunicorn.app.base import BaseApplication

from certs.serving import new_server_context
from webhook.app import create_app
from webhook.logconfig import logging_dict
from webhook.settings import WebhookSettings, from_env_and_args
from webhook.tls import reloader_for
from webhook.worker import webhook_worker_class

log = logging.getLogger("webhook.serve")

SslContextHook = Callable[[Any, Callable[[], ssl.SSLContext]], ssl.SSLContext]


def ssl_context_hook(*, check_interval: float) -> SslContextHook:
    """gunicorn's ``ssl_context(config, default_ssl_context_factory)`` server hook.

    gunicorn's default factory loads the files once per call and would also accept whatever TLS
    versions OpenSSL allows; ours returns the reloader's front context (TLS 1.2+, newest pair).
    """

    def ssl_context(
        config: Any, default_ssl_context_factory: Callable[[], ssl.SSLContext]
    ) -> ssl.SSLContext:
        del default_ssl_context_factory  # client certificates are not used by this webhook
        reloader = reloader_for(
            cert_file=Path(config.certfile),
            key_file=Path(config.keyfile),
            check_interval=check_interval,
        )
        return reloader.server_context()

    return ssl_context


def gunicorn_options(settings: WebhookSettings) -> dict[str, Any]:
    """The gunicorn settings for ``settings``; pure, so tests can check the choices above."""
    if settings.cert_file is None or settings.key_file is None:
        raise ValueError("mxjob-webhook serves TLS only: a certificate directory is required")
    return {
        # One listener for the API server's reviews, and one for scrapers when asked for: both
        # TLS with the same certificate; webhook.app answers each listener's paths only.
        "bind": [settings.bind] + ([settings.metrics_bind] if settings.metrics_bind else []),
        "worker_class": webhook_worker_class(max_connection_age=settings.max_connection_age),
        "workers": settings.workers,
        "threads": settings.threads,
        "keepalive": settings.keepalive,
        "timeout": settings.timeout,
        "graceful_timeout": settings.graceful_timeout,
        "certfile": str(settings.cert_file),
        "keyfile": str(settings.key_file),
        "ssl_context": ssl_context_hook(check_interval=settings.cert_check_interval),
        "logconfig_dict": logging_dict(log_format=settings.log_format, level=settings.log_level),
        "loglevel": settings.log_level,
        "accesslog": None,  # one line per review comes from the app, with the review's facts
        "proc_name": "mxjob-webhook",
        "preload_app": False,
        # gunicorn 25.1+ opens a management socket under $HOME by default: nothing here uses it,
        # a read-only root filesystem cannot hold it, and two servers on a host would share it.
        "control_socket_disable": True,
    }


_OPTIONAL_SETTINGS = frozenset({"control_socket_disable"})
"""Settings that older gunicorn releases (still allowed by the project's pin) do not have."""


class WebhookServer(BaseApplication):  # type: ignore[misc]  # gunicorn ships no type hints
    """gunicorn configured from ``WebhookSettings`` instead of gunicorn's command line."""

    def __init__(self, settings: WebhookSettings) -> None:
        self.settings = settings
        super().__init__(prog="mxjob-webhook")

    def load_config(self) -> None:
        for name, value in gunicorn_options(self.settings).items():
            if name in _OPTIONAL_SETTINGS and name not in self.cfg.settings:
                continue
            self.cfg.set(name, value)

    def load(self) -> Flask:
        return create_app(settings=self.settings)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``mxjob-webhook``: parse settings, check the certificate, run gunicorn."""
    settings = from_env_and_args(argv)
    logging.config.dictConfig(
        logging_dict(log_format=settings.log_format, level=settings.log_level)
    )
    if settings.cert_file is None or settings.key_file is None:  # pragma: no cover
        raise AssertionError("from_env_and_args always sets a certificate directory")
    try:
        # Fail at start, with the reason, rather than at the first handshake in a worker.
        new_server_context(cert_file=settings.cert_file, key_file=settings.key_file)
    except (OSError, ssl.SSLError) as err:
        log.error("cannot load the serving certificate from %s: %s", settings.cert_dir, err)
        return 1
    log.info(
        "serving on https://%s%s with %d worker(s) x %d thread(s), certificates from %s",
        settings.bind,
        ""
        if settings.metrics_bind is None
        else f", /metrics on https://{settings.metrics_bind}"
        + (" for authorized scrapers" if settings.metrics_secure else " for anyone"),
        settings.workers,
        settings.threads,
        settings.cert_dir,
    )
    WebhookServer(settings).run()
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
