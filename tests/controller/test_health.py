"""Health and metrics endpoints over HTTP."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from controller.health import HttpEndpoints, check_route, metrics_route, parse_address
from controller.metrics import Metrics


@pytest.fixture
def served() -> Iterator[tuple[HttpEndpoints, Metrics, list[bool]]]:
    ready = [False]
    metrics = Metrics()
    server = HttpEndpoints(
        "127.0.0.1:0",
        {
            "/readyz": check_route(lambda: (ready[0], "informers not synced")),
            "/metrics": metrics_route(metrics.exposition),
        },
    ).start()
    yield server, metrics, ready
    server.stop()


def get(server: HttpEndpoints, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}{path}", timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_readyz_says_why_it_is_not_ready(served: tuple[HttpEndpoints, Metrics, list[bool]]) -> None:
    server, _, ready = served
    assert get(server, "/readyz") == (503, "informers not synced\n")
    ready[0] = True
    assert get(server, "/readyz") == (200, "ok\n")
    assert get(server, "/nope")[0] == 404


def test_metrics_carry_the_training_operator_counters(
    served: tuple[HttpEndpoints, Metrics, list[bool]],
) -> None:
    server, metrics, _ = served
    metrics.job_counter_inc(metrics.jobs_created, "team-a")
    metrics.track_queue(lambda: 7, lambda: 2)
    status, body = get(server, "/metrics")
    assert status == 200
    assert (
        'training_operator_jobs_created_total{framework="mxnet",job_namespace="team-a"} 1.0' in body
    )
    assert "mxjob_controller_workqueue_depth 7.0" in body
    assert "mxjob_controller_reconcile_duration_seconds" in body


def test_addresses_parse_with_or_without_a_host() -> None:
    assert parse_address(":8080") == ("0.0.0.0", 8080)
    assert parse_address("127.0.0.1:1") == ("127.0.0.1", 1)
    with pytest.raises(ValueError, match="host:port"):
        parse_address("8080")
