"""Health and metrics endpoints over HTTP, and metrics over HTTPS for authorized scrapers."""

from __future__ import annotations

import http.client
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from certs.authority import CertificateAuthority
from controller.runtime.health import HttpEndpoints, metrics_route, parse_address, probe_route
from controller.runtime.metrics import Metrics
from controller.runtime.serving_tls import metrics_certificate
from shared.metrics_access import TOKEN_REVIEW_PATH, MetricsGate


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


def _gate() -> MetricsGate:
    """A gate whose API server authenticates ``good`` (a reader) and ``nosy`` (not one)."""

    def review(path: str, body: Mapping[str, Any]) -> Mapping[str, Any]:
        if path == TOKEN_REVIEW_PATH:
            name = {"good": "reader", "nosy": "nosy"}.get(body["spec"]["token"])
            return {"status": {"authenticated": bool(name), "user": {"username": name}}}
        return {"status": {"allowed": body["spec"]["user"] == "reader"}}

    return MetricsGate(review)


def _https_get(port: int, *, token: str | None, ca: bytes) -> tuple[int, str]:
    context = ssl.create_default_context(cadata=ca.decode())
    context.check_hostname = False
    request = urllib.request.Request(f"https://127.0.0.1:{port}/metrics")
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, context=context, timeout=5) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_secure_metrics_speak_tls_only_and_answer_authorized_scrapers_only(
    tmp_path: Path,
) -> None:
    authority = CertificateAuthority.create()
    pair = authority.issue_serving(hosts=("mxjob-controller-metrics.mxjob-system.svc",))
    (tmp_path / "tls.crt").write_bytes(pair.cert_pem)
    (tmp_path / "tls.key").write_bytes(pair.key_pem)
    certificate = metrics_certificate(cert_dir=tmp_path, namespace="ignored")
    metrics = Metrics()
    server = HttpEndpoints(
        "127.0.0.1:0",
        {"/metrics": metrics_route(metrics.exposition, gate=_gate())},
        tls=certificate.current,
    ).start()
    try:
        assert server.scheme == "https"
        assert _https_get(server.port, token=None, ca=authority.cert_pem)[0] == 401
        assert _https_get(server.port, token="stolen", ca=authority.cert_pem)[0] == 401
        status, body = _https_get(server.port, token="nosy", ca=authority.cert_pem)
        assert status == 403 and "nosy may not get /metrics" in body
        status, body = _https_get(server.port, token="good", ca=authority.cert_pem)
        assert status == 200 and "controller_runtime_reconcile_total" in body
        with pytest.raises((urllib.error.URLError, ConnectionError, http.client.HTTPException)):
            urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=5)
    finally:
        server.stop()
