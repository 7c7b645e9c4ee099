"""webhook/apiserver.py: where the scrapers' reviews go, and what a missing piece does."""

from __future__ import annotations

from pathlib import Path

import pytest

from webhook.apiserver import ApiServerUnavailableError, api_reviewer, in_cluster_url
from webhook.app import create_app
from webhook.settings import WebhookSettings


def test_the_in_cluster_address_comes_from_the_service_environment() -> None:
    environ = {"KUBERNETES_SERVICE_HOST": "198.18.0.1", "KUBERNETES_SERVICE_PORT": "6443"}
    assert in_cluster_url(environ) == "https://198.18.0.1:6443"
    v6 = {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}
    assert in_cluster_url(v6) == "https://[fd00::1]:443"
    with pytest.raises(ApiServerUnavailableError, match="give --api-server"):
        in_cluster_url({})


def test_a_missing_token_is_a_named_failure_at_the_first_review_not_at_start(
    tmp_path: Path,
) -> None:
    review = api_reviewer(
        server="https://127.0.0.1:1", token_file=tmp_path / "token", ca_file=tmp_path / "ca.crt"
    )
    with pytest.raises(ApiServerUnavailableError, match="cannot read the token"):
        review("/apis/authentication.k8s.io/v1/tokenreviews", {})


def test_a_scrape_the_api_server_cannot_decide_is_503_and_admission_still_answers(
    tmp_path: Path,
) -> None:
    settings = WebhookSettings(
        bind="0.0.0.0:9443", metrics_bind="0.0.0.0:8443", api_token_file=tmp_path / "none"
    )
    http = create_app(settings=settings).test_client()
    scrape = http.get(
        "/metrics",
        headers={"Authorization": "Bearer t"},
        environ_overrides={"SERVER_PORT": "8443"},
    )
    assert scrape.status_code == 503
    assert http.get("/healthz", environ_overrides={"SERVER_PORT": "9443"}).status_code == 200
