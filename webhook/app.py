"""The Flask adapter: HTTP in and out around ``webhook.answers``, plus health and metrics.

``create_app()`` works with no arguments and no cluster, which is how the in-process tests use
it; ``mxjob-webhook`` (``webhook.serve``) builds it with the process's settings inside each
gunicorn worker.

Guarantees of the review endpoints, whatever the body: a body over ``max_body_bytes`` is a 413
without being parsed (its declared length is checked before reading, and the read is capped for
chunked bodies); a body that is not a well-formed review is a 400 with ``{"error": reason}``;
everything else is a 200 with a well-formed review answer, also when the webhook itself fails
(the review is then refused with an internal-error message and the traceback is logged). No route
answers 500.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from flask import Flask, Response, g, request
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge
from werkzeug.wrappers import Response as WerkzeugResponse

from certs.reloader import CertificateReloader
from shared.metrics_access import AccessSettings, MetricsGate, Reviewer
from webhook import admission, conversion_review
from webhook.answers import (
    CONVERT_OPERATION,
    ENDPOINT_DECISIONS,
    Answer,
    answer_admission,
    answer_conversion,
    error_body,
)
from webhook.apiserver import api_reviewer
from webhook.metrics import CONTENT_TYPE, Endpoint, WebhookMetrics
from webhook.reviews import (
    AdmissionRequest,
    AdmissionResponse,
    admission_review_response,
    conversion_review_response,
    decode_json,
    encode_json,
    review_uid,
)
from webhook.settings import WebhookSettings, host_port
from webhook.tls import reloader_for

log = logging.getLogger("webhook.review")

MUTATE_PATH: Final = "/mutate-kubeflow-org-v1-mxjob"
VALIDATE_PATH: Final = "/validate-kubeflow-org-v1-mxjob"
CONVERT_PATH: Final = "/convert"
EXPERIMENT_PATH: Final = "/validate-kubeflow-org-v1beta1-experiment"
"""Katib Experiments with MXJob trials (webhook/experiments.py; manifests/components/katib)."""
REVIEW_PATHS: Final[dict[str, Endpoint]] = {
    MUTATE_PATH: "mutate",
    VALIDATE_PATH: "validate",
    CONVERT_PATH: "convert",
    EXPERIMENT_PATH: "validate-experiment",
}
METRICS_PATH: Final = "/metrics"
JSON: Final = "application/json"
EXTENSION_KEY: Final = "mxjob_webhook"


@dataclass(frozen=True)
class WebhookState:
    """What one app owns, reachable as ``webhook_state(app)`` (e.g. tests read the metrics)."""

    settings: WebhookSettings
    metrics: WebhookMetrics
    certificates: CertificateReloader | None
    metrics_gate: MetricsGate | None = None
    """Asks the API server who may read ``/metrics`` (``settings.metrics_secure`` on a metrics
    listener of its own); None: anyone may."""


def webhook_state(app: Flask) -> WebhookState:
    """The state ``create_app`` attached to ``app``."""
    state = app.extensions[EXTENSION_KEY]
    if not isinstance(state, WebhookState):
        raise TypeError(f"app.extensions[{EXTENSION_KEY!r}] is not a WebhookState")
    return state


def _json_response(body: bytes, status: int) -> Response:
    return Response(body, status=status, mimetype=JSON)


def create_app(*, settings: WebhookSettings | None = None, review: Reviewer | None = None) -> Flask:
    """The webhook's WSGI app: review endpoints, ``/healthz``, ``/readyz``, ``/metrics``.

    Each app has its own metrics registry. With ``settings.cert_dir`` set, ``/readyz`` reports
    ready once the certificate pair there has loaded (the same pair the TLS server presents);
    without it, the app is ready at once.
    """
    settings = WebhookSettings() if settings is None else settings
    # An explicit root path: Flask's lookup by import name fails under import hooks (editable
    # installs) and namespace packages, and the app serves no files from it anyway.
    app = Flask(__name__, root_path=str(Path(__file__).resolve().parent))
    # Flask refuses a declared length over this and caps the read of a chunked body at it. One
    # byte over the limit, because a capped read stops silently at the cap: reading limit + 1
    # bytes is how a chunked body longer than the limit is told from one exactly at it.
    app.config["MAX_CONTENT_LENGTH"] = settings.max_body_bytes + 1
    certificates = None
    if settings.cert_file is not None and settings.key_file is not None:
        certificates = reloader_for(
            cert_file=settings.cert_file,
            key_file=settings.key_file,
            check_interval=settings.cert_check_interval,
        )
    state = WebhookState(
        settings=settings,
        metrics=WebhookMetrics(),
        certificates=certificates,
        metrics_gate=_metrics_gate(settings, review=review),
    )
    app.extensions[EXTENSION_KEY] = state
    _add_listener_split(app, state)
    _add_review_routes(app, state)
    _add_probe_routes(app, state)
    _add_error_handlers(app, state)
    return app


def _metrics_gate(settings: WebhookSettings, *, review: Reviewer | None) -> MetricsGate | None:
    """The gate of a metrics listener under ``metrics_secure``; ``review`` replaces the API
    server of ``settings`` (tests)."""
    if settings.metrics_bind is None or not settings.metrics_secure:
        return None
    if review is None:
        review = api_reviewer(
            server=settings.api_server,
            token_file=settings.api_token_file,
            ca_file=settings.api_ca_file,
        )
    return MetricsGate(
        review, settings=AccessSettings(cache_seconds=settings.metrics_auth_cache_seconds)
    )


def _add_listener_split(app: Flask, state: WebhookState) -> None:
    """With a metrics listener of its own, it answers ``/metrics`` and nothing else, and the
    admission listener answers everything but ``/metrics``: a NetworkPolicy that opens one port
    to scrapers opens no review endpoint to them (docs/how-to/harden.md, "Network policies").
    gunicorn names the listener a request came in on in ``SERVER_PORT``."""
    if state.settings.metrics_bind is None:
        return
    metrics_port = str(host_port(state.settings.metrics_bind)[1])

    @app.before_request
    def split_by_listener() -> Response | None:
        on_metrics_listener = request.environ.get("SERVER_PORT") == metrics_port
        if on_metrics_listener != (request.path == METRICS_PATH):
            return _json_response(error_body("not found"), 404)
        if on_metrics_listener and state.metrics_gate is not None:
            decision = state.metrics_gate.check(request.headers.get("Authorization"))
            if not decision.allowed:
                log.info("/metrics refused (%d): %s", decision.status, decision.reason)
                return _json_response(error_body(decision.reason), decision.status)
        return None


def decision(
    endpoint: Endpoint, settings: WebhookSettings
) -> Callable[[AdmissionRequest], AdmissionResponse]:
    """What answers ``endpoint``'s reviews under ``settings``: its decision, told of Kueue's
    route, and the mutating one of the progress env (``settings.progress_reports``)."""
    options: dict[str, Any] = {}
    if settings.kueue_workloads:
        options["kueue_workloads"] = True
    if endpoint == "mutate" and settings.progress_reports:
        options["progress_namespace"] = settings.operator_namespace
    decide = ENDPOINT_DECISIONS[endpoint]
    return functools.partial(decide, **options) if options else decide


def _add_review_routes(app: Flask, state: WebhookState) -> None:
    """The review endpoints: each reads its body within the size limit and answers."""

    def too_large(endpoint: Endpoint, started: float) -> Response:
        limit = state.settings.max_body_bytes
        answer = Answer(
            status=413,
            body=error_body(f"request body is larger than {limit} bytes"),
            endpoint=endpoint,
            result="malformed",
            reason="body too large",
        )
        return _finish(state, answer, started)

    def review(endpoint: Endpoint) -> Response:
        started = time.perf_counter()
        declared = request.content_length
        if declared is not None and declared > state.settings.max_body_bytes:
            return too_large(endpoint, started)  # not a byte of it read
        try:
            body = _read_body(state.settings.max_body_bytes)
        except RequestEntityTooLarge:
            body = None
        if body is None:
            return too_large(endpoint, started)  # chunked, and over the limit while reading
        if endpoint == "convert":
            answer = answer_conversion(body)
        else:
            decide = decision(endpoint, state.settings)
            answer = answer_admission(body, endpoint=endpoint, decide=decide)
        return _finish(state, answer, started)

    @app.post(MUTATE_PATH)
    def mutate() -> Response:
        return review("mutate")

    @app.post(VALIDATE_PATH)
    def validate() -> Response:
        return review("validate")

    @app.post(CONVERT_PATH)
    def convert() -> Response:
        return review("convert")

    @app.post(EXPERIMENT_PATH)
    def validate_experiment() -> Response:
        return review("validate-experiment")


def _add_probe_routes(app: Flask, state: WebhookState) -> None:
    """``/healthz``, ``/readyz`` and ``/metrics``."""

    @app.get("/healthz")
    def healthz() -> Response:
        # Alive means able to answer HTTP; nothing else can be fixed by a restart.
        return _json_response(encode_json({"status": "ok"}), 200)

    @app.get("/readyz")
    def readyz() -> Response:
        if state.certificates is not None and not state.certificates.ready():
            reason = state.certificates.last_error or "certificate not loaded"
            return _json_response(encode_json({"status": "not ready", "reason": reason}), 503)
        return _json_response(encode_json({"status": "ok"}), 200)

    @app.get(METRICS_PATH)
    def metrics() -> Response:
        return Response(state.metrics.exposition(), status=200, content_type=CONTENT_TYPE)


def _add_error_handlers(app: Flask, state: WebhookState) -> None:
    """HTTP errors answer in the JSON shape of a 400; anything unexpected goes to
    :func:`_unexpected_error`."""

    @app.errorhandler(HTTPException)
    def http_error(error: HTTPException) -> WerkzeugResponse:
        # 404, 405 (keeping its Allow header): the same JSON shape as a 400.
        response = error.get_response()
        response.set_data(error_body(error.description or error.name))
        response.mimetype = JSON
        return response

    @app.errorhandler(Exception)
    def unexpected(error: Exception) -> Response:
        return _unexpected_error(state, error)


def _read_body(limit: int) -> bytes | None:
    """The request body, or ``None`` as soon as more than ``limit`` bytes have arrived."""
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = request.stream.read(min(64 * 1024, limit + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            return None
    body = b"".join(chunks)
    g.review_body = body  # for the last-resort error handler, to find the review's uid
    return body


def _finish(state: WebhookState, answer: Answer, started: float) -> Response:
    """Count, log and send one answer."""
    seconds = time.perf_counter() - started
    state.metrics.observe(
        endpoint=answer.endpoint,
        operation=answer.operation,
        result=answer.result,
        seconds=seconds,
    )
    _log_answer(answer, seconds)
    return _json_response(answer.body, answer.status)


def _log_answer(answer: Answer, seconds: float) -> None:
    """A failed review is an ERROR with its traceback; an answered one is DEBUG only.

    The metrics count every answer by endpoint, operation and result; a line per review at INFO
    cost about a tenth of a review's time (bench/findings.md), and at INFO nothing of it is
    built: not the fields, not the record.
    """
    if answer.error is None and not log.isEnabledFor(logging.DEBUG):
        return
    fields: dict[str, Any] = {
        "endpoint": answer.endpoint,
        "uid": answer.uid or "",
        "operation": answer.operation,
        "result": answer.result,
        "status": answer.status,
        **answer.log_fields,
        "duration_ms": round(seconds * 1000, 3),
    }
    if answer.error is not None:
        log.error(
            "review failed",
            exc_info=(type(answer.error), answer.error, answer.error.__traceback__),
            extra={"fields": fields},
        )
        return
    # The answer's line carries metadata only; the reason can quote the object: a line of its own.
    log.debug("review answered", extra={"fields": fields})
    if answer.reason is not None:
        log.debug("review reason: %s", answer.reason, extra={"fields": {"uid": answer.uid}})


def _unexpected_error(state: WebhookState, error: Exception) -> Response:
    """Last resort for an exception outside the answer functions: never a 500 on a review."""
    endpoint = REVIEW_PATHS.get(request.path)
    log.error("unhandled error on %s %s", request.method, request.path, exc_info=error)
    if endpoint is None:
        # Health and metrics: 503 tells a probe or a scraper "not now", which is the truth.
        return _json_response(error_body("internal error; see the webhook log"), 503)
    uid: str | None = None
    body = g.get("review_body")
    if isinstance(body, bytes):
        try:
            uid = review_uid(decode_json(body))
        except Exception:  # not decodable either: then it was not a review
            uid = None
    if uid is None:
        answer = Answer(
            status=400,
            body=error_body("request could not be read as a review"),
            endpoint=endpoint,
            result="malformed",
        )
    elif endpoint == "convert":
        answer = Answer(
            status=200,
            body=encode_json(conversion_review_response(conversion_review.internal_error(uid))),
            endpoint=endpoint,
            result="error",
            operation=CONVERT_OPERATION,
            uid=uid,
        )
    else:
        answer = Answer(
            status=200,
            body=encode_json(admission_review_response(admission.internal_error(uid))),
            endpoint=endpoint,
            result="error",
            uid=uid,
        )
    state.metrics.observe(
        endpoint=endpoint, operation=answer.operation, result=answer.result, seconds=0.0
    )
    return _json_response(answer.body, answer.status)
