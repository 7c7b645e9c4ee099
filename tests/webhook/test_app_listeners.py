"""webhook/app.py with a metrics listener of its own: each listener answers its own paths, and
the metrics one only scrapers the API server lets read /metrics."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from flask.testing import FlaskClient

from shared.metrics_access import TOKEN_REVIEW_PATH
from tests.webhook.reviews_samples import admission_review
from webhook.app import MUTATE_PATH, create_app
from webhook.serve import gunicorn_options
from webhook.settings import WebhookSettings

ADMISSION, METRICS = "9443", "8443"


def review(path: str, body: Mapping[str, Any]) -> Mapping[str, Any]:
    """An API server that knows the tokens ``reader`` (bound to the reader role) and ``nosy``."""
    if path == TOKEN_REVIEW_PATH:
        known = body["spec"]["token"] in ("reader", "nosy")
        return {"status": {"authenticated": known, "user": {"username": body["spec"]["token"]}}}
    return {"status": {"allowed": body["spec"]["user"] == "reader"}}


def client(*, secure: bool = True) -> FlaskClient:
    settings = WebhookSettings(
        bind=f"0.0.0.0:{ADMISSION}", metrics_bind=f"0.0.0.0:{METRICS}", metrics_secure=secure
    )
    return create_app(settings=settings, review=review).test_client()


def get(http: FlaskClient, path: str, *, port: str, token: str | None = None) -> int:
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    return http.get(path, headers=headers, environ_overrides={"SERVER_PORT": port}).status_code


def test_the_admission_listener_answers_reviews_and_probes_but_not_metrics() -> None:
    http = client()
    assert get(http, "/metrics", port=ADMISSION, token="reader") == 404
    assert get(http, "/healthz", port=ADMISSION) == 200
    answer = http.post(
        MUTATE_PATH,
        json=admission_review({"apiVersion": "kubeflow.org/v1", "kind": "MXJob"}),
        environ_overrides={"SERVER_PORT": ADMISSION},
    )
    assert answer.status_code == 200


def test_the_metrics_listener_answers_metrics_only() -> None:
    http = client()
    assert get(http, "/healthz", port=METRICS, token="reader") == 404
    posted = http.post(MUTATE_PATH, json={}, environ_overrides={"SERVER_PORT": METRICS})
    assert posted.status_code == 404


@pytest.mark.parametrize(("token", "status"), [(None, 401), ("stolen", 401), ("nosy", 403),
                                               ("reader", 200)])  # fmt: skip
def test_metrics_answer_only_a_scraper_allowed_to_get_them(token: str | None, status: int) -> None:
    assert get(client(), "/metrics", port=METRICS, token=token) == status


def test_without_metrics_secure_the_metrics_listener_answers_anyone() -> None:
    assert get(client(secure=False), "/metrics", port=METRICS) == 200


def test_gunicorn_listens_on_both_and_a_shared_port_is_refused(tmp_path: Any) -> None:
    settings = WebhookSettings(bind="0.0.0.0:9443", metrics_bind="0.0.0.0:8443", cert_dir=tmp_path)
    assert gunicorn_options(settings)["bind"] == ["0.0.0.0:9443", "0.0.0.0:8443"]
    with pytest.raises(ValueError, match="metrics_bind must be a port apart"):
        WebhookSettings(bind="0.0.0.0:9443", metrics_bind="127.0.0.1:9443")
