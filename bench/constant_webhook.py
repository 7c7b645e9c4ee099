"""The webhook benchmark's baseline: the production server answering a precomputed review.

Same gunicorn configuration (``webhook.serve.gunicorn_options`` through ``WebhookServer``: gthread,
the same workers, threads, keep-alive and TLS context hook), same Flask and the same body read;
only the decision is gone: every review gets one constant, pre-encoded answer. Its throughput is
therefore the ceiling of the stack on this machine, and ``mutate / ceiling`` says what our own
parsing, validation, defaulting, patching, logging and metrics cost. It lives in ``bench/``, not
in ``webhook/``, so no production route can answer without deciding.

Run as ``python -m bench.constant_webhook`` with ``mxjob-webhook``'s flags, plus
``--worker=gthread`` to serve with gunicorn's own ``gthread`` worker instead of
``webhook.worker``'s subclass: the benchmark's A/B of the two workers on the same stack.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from flask import Flask, Response, request

from webhook.app import MUTATE_PATH, VALIDATE_PATH
from webhook.serve import WebhookServer
from webhook.settings import WebhookSettings, from_env_and_args

CONSTANT_REVIEW: Final = json.dumps(
    {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": "00000000-0000-0000-0000-000000000000", "allowed": True},
    },
    separators=(",", ":"),
).encode()


def constant_app() -> Flask:
    """Both review paths answer :data:`CONSTANT_REVIEW` after reading the whole body."""
    app = Flask(__name__, root_path=str(Path(__file__).resolve().parent))

    def answer() -> Response:
        request.get_data()  # the body is read, as the real endpoints do
        return Response(CONSTANT_REVIEW, status=200, mimetype="application/json")

    app.add_url_rule(MUTATE_PATH, "mutate", answer, methods=["POST"])
    app.add_url_rule(VALIDATE_PATH, "validate", answer, methods=["POST"])
    app.add_url_rule(
        "/readyz", "readyz", lambda: Response(b'{"status":"ok"}', mimetype="application/json")
    )
    return app


WORKERS: Final = ("webhook", "gthread")
"""``webhook``: ``webhook.worker.WebhookWorker``, as ``mxjob-webhook`` serves; ``gthread``:
gunicorn's own worker, which the former subclasses."""


class ConstantServer(WebhookServer):
    """``mxjob-webhook``'s server with the constant app in place of the real one."""

    def __init__(self, settings: WebhookSettings, *, worker: str = "webhook") -> None:
        if worker not in WORKERS:
            raise ValueError(f"worker must be one of {', '.join(WORKERS)}, not {worker!r}")
        self.worker = worker
        super().__init__(settings)

    def load_config(self) -> None:
        super().load_config()
        if self.worker == "gthread":
            self.cfg.set("worker_class", "gthread")

    def load(self) -> Flask:
        return constant_app()


def main(argv: Sequence[str] | None = None) -> int:
    """``--worker`` is this module's own flag; every other one is ``mxjob-webhook``'s."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--worker", choices=WORKERS, default="webhook")
    own, webhook_args = parser.parse_known_args(argv)
    ConstantServer(from_env_and_args(webhook_args), worker=own.worker).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
