"""Health and metrics endpoints over HTTP."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from controller.runtime.health import HttpEndpoints, metrics_route, parse_address, probe_route
from controller.runtime.metrics import Metrics


@pytest.fixture
def served() -> Iterator[tuple[HttpEndpoints, Metrics, list[bool]]]:
    ready = [False]
    metrics = Metrics()
    server = HttpEndpoints(
        "127.0.0.1:0",
        {
            "/readyz": probe_route(lambda: (ready[0], "informers not synced")),
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


class _Queue:
    def depth(self) -> int:
        return 7

    def pending_timers(self) -> int:
        return 2

    def processing_seconds(self) -> list[float]:
        return [1.5, 4.0]


def test_metrics_carry_the_training_operator_counters_and_the_controller_runtime_names(
    served: tuple[HttpEndpoints, Metrics, list[bool]],
) -> None:
    server, metrics, _ = served
    metrics.job_counter_inc(metrics.jobs_created, "team-a")
    metrics.track_queue(_Queue())
    metrics.added()
    metrics.started(0.5)
    metrics.finished(0.25)
    metrics.retried()
    metrics.reconciled(result="error", seconds=0.02)
    metrics.reconciled(result="success", seconds=0.01)
    status, body = get(server, "/metrics")
    assert status == 200
    lines = set(body.splitlines())
    assert {
        'training_operator_jobs_created_total{framework="mxnet",job_namespace="team-a"} 1.0',
        'workqueue_depth{name="mxjob"} 7.0',
        'workqueue_adds_total{name="mxjob"} 1.0',
        'workqueue_queue_duration_seconds_count{name="mxjob"} 1.0',
        'workqueue_queue_duration_seconds_sum{name="mxjob"} 0.5',
        'workqueue_work_duration_seconds_sum{name="mxjob"} 0.25',
        'workqueue_retries_total{name="mxjob"} 1.0',
        'workqueue_unfinished_work_seconds{name="mxjob"} 5.5',
        'workqueue_longest_running_processor_seconds{name="mxjob"} 4.0',
        "mxjob_controller_workqueue_timers 2.0",
        'controller_runtime_reconcile_total{controller="mxjob",result="error"} 1.0',
        'controller_runtime_reconcile_total{controller="mxjob",result="success"} 1.0',
        'controller_runtime_reconcile_total{controller="mxjob",result="requeue"} 0.0',
        'controller_runtime_reconcile_total{controller="mxjob",result="requeue_after"} 0.0',
        'controller_runtime_reconcile_errors_total{controller="mxjob"} 1.0',
        'controller_runtime_reconcile_time_seconds_count{controller="mxjob"} 2.0',
    } <= lines


def test_addresses_parse_with_or_without_a_host() -> None:
    assert parse_address(":8080") == ("0.0.0.0", 8080)
    assert parse_address("127.0.0.1:1") == ("127.0.0.1", 1)
    with pytest.raises(ValueError, match="host:port"):
        parse_address("8080")
