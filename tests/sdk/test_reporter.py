"""mxjob_progress.reporter against a real HTTPS endpoint: what it sends, how it paces, fails and
recovers, and that training never waits for it nor sees its errors."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from mxjob_progress import (
    ENV_CA_CERT,
    ENV_TOKEN,
    ENV_URL,
    Endpoint,
    ProgressReporter,
    ReporterSettings,
    __version__,
)

from tests.helpers.waiting import wait_for
from tests.sdk.recording import FakeClock, MakeReporter
from tests.sdk.status_server import STATUS_PATH, Pki, Response, StatusServer

SDK = Path(__file__).resolve().parents[2] / "sdk"


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if record.name == "mxjob_progress" and record.levelno >= logging.WARNING
    ]


def _sender_threads() -> int:
    return sum(thread.name == "mxjob-progress" for thread in threading.enumerate())


# What is sent


def test_a_report_is_posted_with_the_contracts_headers_and_body(
    endpoint: Endpoint, status_server: StatusServer, make_reporter: MakeReporter
) -> None:
    reporter = make_reporter(endpoint)
    reporter.report(progress=0.42, metrics={"loss": 0.23470000000000002, "epoch": 3})
    (received,) = status_server.received_at_least(1)
    assert received.method == "POST"
    assert received.path == STATUS_PATH
    assert received.headers["authorization"] == "Bearer token-1"
    assert received.headers["content-type"] == "application/json"
    assert received.headers["user-agent"] == f"mxjob-progress/{__version__}"
    # No estimate yet (one report says no rate), and no lastUpdatedTime: the server sets it.
    assert received.body == {
        "trainerStatus": {
            "progressPercentage": 42,
            "metrics": [{"name": "loss", "value": "0.2347"}, {"name": "epoch", "value": "3"}],
        }
    }
    assert reporter.close() is True


def test_each_body_carries_every_metric_so_far_with_its_latest_value(
    endpoint: Endpoint, status_server: StatusServer, make_reporter: MakeReporter
) -> None:
    reporter = make_reporter(endpoint)
    reporter.report(metrics={"loss": 0.9, "validation-accuracy": 0.5})
    status_server.received_at_least(1)
    reporter.report(progress=0.5, metrics={"loss": 0.4})
    assert reporter.close() is True
    last = status_server.received[-1]
    assert last.status["progressPercentage"] == 50
    assert last.status["metrics"] == [
        {"name": "loss", "value": "0.4"},
        {"name": "validation-accuracy", "value": "0.5"},
    ]


def test_an_empty_report_is_a_heartbeat(
    endpoint: Endpoint, status_server: StatusServer, make_reporter: MakeReporter
) -> None:
    reporter = make_reporter(endpoint)
    reporter.report()
    assert reporter.close() is True
    assert status_server.received[-1].body == {"trainerStatus": {}}


def test_the_token_is_read_again_for_every_request(
    endpoint: Endpoint,
    status_server: StatusServer,
    token_file: Path,
    make_reporter: MakeReporter,
    caplog: pytest.LogCaptureFixture,
) -> None:
    reporter = make_reporter(endpoint)
    reporter.report(progress=0.1)
    assert status_server.received_at_least(1)[0].headers["authorization"] == "Bearer token-1"
    token_file.write_text("token-2")  # the kubelet rotated it
    reporter.report(progress=0.2)
    assert status_server.received_at_least(2)[1].headers["authorization"] == "Bearer token-2"
    token_file.unlink()  # gone for a moment: retried, not dropped
    reporter.report(progress=0.3)
    wait_for(
        "the unreadable token's warning",
        lambda: _warnings(caplog),
        lambda warnings: any("cannot read the token" in warning for warning in warnings),
        timeout=5,
        interval=0.01,
    )
    token_file.write_text("token-3\n")
    received = wait_for(
        "the report with the new token",
        lambda: status_server.received,
        lambda received: received[-1].status["progressPercentage"] == 30,
        timeout=5,
        interval=0.01,
    )
    assert received[-1].headers["authorization"] == "Bearer token-3"
    assert reporter.close() is True


def test_progress_is_a_fraction_sent_as_a_whole_percentage_rounded_down(
    endpoint: Endpoint, status_server: StatusServer, make_reporter: MakeReporter
) -> None:
    reporter = make_reporter(endpoint)
    sent: list[int] = []
    for progress, expected in [(0.29, 29), (0.999, 99), (1.7, 100), (-0.5, 0), (1.0, 100)]:
        reporter.report(progress=progress)
        received = status_server.received_at_least(len(sent) + 1)
        sent.append(received[-1].status["progressPercentage"])
        assert sent[-1] == expected
    # Done: nothing remains.
    assert status_server.received[-1].status["estimatedRemainingSeconds"] == 0


# The estimate of the time left


def test_the_remaining_time_comes_from_the_rate_since_the_first_report(
    endpoint: Endpoint, status_server: StatusServer, make_reporter: MakeReporter
) -> None:
    clock = FakeClock(1000.0)
    reporter = make_reporter(endpoint, clock=clock, eta_warmup=10.0)
    reporter.report(progress=0.0)
    status_server.received_at_least(1)
    clock.now += 5.0  # still warming up
    reporter.report(progress=0.05)
    assert "estimatedRemainingSeconds" not in status_server.received_at_least(2)[-1].status
    clock.now += 15.0  # 20 s for 20 %: 80 s left
    reporter.report(progress=0.2)
    assert status_server.received_at_least(3)[-1].status == {
        "progressPercentage": 20,
        "estimatedRemainingSeconds": 80,
    }


# Pacing, coalescing, never blocking
#
# A note on timing: the reporter paces and backs off from the start of each attempt, which is
# after ``before``. The server stamps a request when it gets to it, late under load, so two
# arrivals may be closer than the delay between their sends; the time from ``before`` to an
# arrival is never shorter than the delays sent before it.


def test_requests_are_at_least_min_interval_apart(
    endpoint: Endpoint, status_server: StatusServer, make_reporter: MakeReporter
) -> None:
    reporter = make_reporter(endpoint, min_interval=0.3)
    before = time.monotonic()
    reporter.report(progress=0.1)
    status_server.received_at_least(1)
    reporter.report(progress=0.2)
    _, second = status_server.received_at_least(2)
    assert second.at - before >= 0.3  # from before: see the note on timing
    assert second.status["progressPercentage"] == 20


def test_many_reports_make_few_requests_and_the_last_one_wins(
    endpoint: Endpoint, status_server: StatusServer, make_reporter: MakeReporter
) -> None:
    reporter = make_reporter(endpoint, min_interval=1.0)
    started = time.perf_counter()
    for step in range(1000):
        reporter.report(progress=(step + 1) / 1000, metrics={"step": step})
    assert time.perf_counter() - started < 0.5
    assert reporter.close() is True  # the last state, sent at once, unpaced
    received = status_server.received
    assert 1 <= len(received) <= 3, [r.status for r in received]
    assert received[-1].status["progressPercentage"] == 100
    assert received[-1].metrics == {"step": "999"}


@pytest.fixture
def dead_endpoints(ca_file: Path, token_file: Path) -> Iterator[dict[str, Endpoint]]:
    """An endpoint that accepts connections and never answers, and one that refuses them."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(64)
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        refused_port = closed.getsockname()[1]

    def endpoint(port: int) -> Endpoint:
        url = f"https://127.0.0.1:{port}{STATUS_PATH}"
        return Endpoint(url=url, ca_cert=str(ca_file), token_file=str(token_file))

    yield {"silent": endpoint(silent.getsockname()[1]), "refused": endpoint(refused_port)}
    silent.close()


@pytest.mark.parametrize("kind", ["silent", "refused"])
def test_a_dead_endpoint_never_slows_report_down(
    kind: str, dead_endpoints: dict[str, Endpoint], make_reporter: MakeReporter
) -> None:
    reporter = make_reporter(dead_endpoints[kind], send_timeout=0.5)
    reporter.report(progress=0.0)  # the sender is now stuck in a handshake, or backing off
    time.sleep(0.05)
    started = time.perf_counter()
    for step in range(1000):
        reporter.report(progress=step / 1000, metrics={"loss": 1.0 / (step + 1)})
    assert time.perf_counter() - started < 0.5
    closing = time.perf_counter()
    assert reporter.close(timeout=0.2) is False
    assert time.perf_counter() - closing < 0.5


# Failures and recovery


def test_a_503_backs_off_exponentially_then_the_latest_state_is_sent(
    endpoint: Endpoint,
    status_server: StatusServer,
    make_reporter: MakeReporter,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="mxjob_progress")
    status_server.answer(Response(503, text="restarting"), Response(503, text="restarting"))
    reporter = make_reporter(endpoint, backoff_initial=0.1, backoff_max=1.0)
    before = time.monotonic()
    reporter.report(progress=0.1)
    status_server.received_at_least(1)
    reporter.report(progress=0.2)  # while backing off: the retry carries this one
    received = wait_for(
        "the latest state",
        lambda: status_server.received,
        lambda received: received[-1].status["progressPercentage"] == 20 and len(received) >= 3,
        timeout=5,
        interval=0.01,
    )
    _, second, third = received[:3]
    assert second.at - before >= 0.1  # from before: see the note on timing
    assert third.at - before >= 0.1 + 0.2  # doubled
    assert reporter.close() is True
    warnings = _warnings(caplog)
    assert len(warnings) == 1, warnings  # the second 503 only at DEBUG
    assert "HTTP 503: restarting" in warnings[0]
    assert any("accepted again" in record.getMessage() for record in caplog.records)


def test_a_429_waits_as_long_as_retry_after_says(
    endpoint: Endpoint, status_server: StatusServer, make_reporter: MakeReporter
) -> None:
    status_server.answer(Response(429, {"Retry-After": "0.5"}))
    reporter = make_reporter(endpoint, backoff_initial=0.01)
    before = time.monotonic()
    reporter.report(progress=0.1)
    _, second = status_server.received_at_least(2)
    assert second.at - before >= 0.5  # from before: see the note on timing
    assert reporter.close() is True


def test_a_retry_after_beyond_the_backoff_maximum_is_capped(
    endpoint: Endpoint, status_server: StatusServer, make_reporter: MakeReporter
) -> None:
    status_server.answer(Response(429, {"Retry-After": "3600"}))
    reporter = make_reporter(endpoint, backoff_initial=0.01, backoff_max=0.3)
    before = time.monotonic()
    reporter.report(progress=0.1)
    _, second = status_server.received_at_least(2, timeout=3.0)
    assert second.at - before >= 0.3  # from before: see the note on timing


@pytest.mark.parametrize("status", [400, 401, 403, 404, 413, 422])
def test_a_refused_report_is_logged_once_and_never_retried(
    status: int,
    endpoint: Endpoint,
    status_server: StatusServer,
    make_reporter: MakeReporter,
    caplog: pytest.LogCaptureFixture,
) -> None:
    refusal = Response(status, text="not a pod of this job")
    status_server.answer(refusal, refusal)
    reporter = make_reporter(endpoint)
    reporter.report(progress=0.1)
    status_server.received_at_least(1)
    reporter.report(progress=0.2)  # later reports still go
    status_server.received_at_least(2)
    assert reporter.close() is False  # the latest state was refused, and not sent again
    assert [r.status["progressPercentage"] for r in status_server.received] == [10, 20]
    warnings = _warnings(caplog)
    assert len(warnings) == 1, warnings
    assert f"HTTP {status}: not a pod of this job" in warnings[0]


def test_a_server_the_ca_does_not_vouch_for_gets_nothing_and_training_goes_on(
    pki: Pki,
    status_server: StatusServer,
    token_file: Path,
    make_reporter: MakeReporter,
    caplog: pytest.LogCaptureFixture,
) -> None:
    untrusting = Endpoint(
        url=status_server.url, ca_cert=str(pki.other.ca_file), token_file=str(token_file)
    )
    reporter = make_reporter(untrusting)
    reporter.report(progress=0.5, metrics={"loss": 0.1})
    wait_for(
        "handshakes refused by the reporter",
        lambda: status_server.handshake_failures,
        lambda failures: failures >= 2,
        timeout=5,
        interval=0.01,
    )
    for step in range(100):
        reporter.report(progress=0.5 + step / 1000)
    assert reporter.close(timeout=1.0) is False
    assert status_server.received == []
    warnings = _warnings(caplog)
    assert len(warnings) == 1, warnings
    assert "certificate verify failed" in warnings[0]


def test_a_rotated_ca_file_is_read_again(
    pki: Pki,
    endpoint: Endpoint,
    ca_file: Path,
    status_server: StatusServer,
    make_reporter: MakeReporter,
) -> None:
    ca_file.write_bytes(pki.other.ca_file.read_bytes())
    reporter = make_reporter(endpoint)
    reporter.report(progress=0.5)
    wait_for(
        "a refused handshake",
        lambda: status_server.handshake_failures,
        lambda failures: failures >= 1,
        timeout=5,
        interval=0.01,
    )
    ca_file.write_bytes(pki.trusted.ca_file.read_bytes())
    assert status_server.received_at_least(1)[0].status["progressPercentage"] == 50
    assert reporter.close() is True


class _Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no text")


class _BrokenMapping(Mapping[str, object]):
    def __getitem__(self, key: str) -> object:
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        raise RuntimeError("broken")

    def __len__(self) -> int:
        return 1


def test_report_never_raises_into_training(
    endpoint: Endpoint,
    status_server: StatusServer,
    make_reporter: MakeReporter,
    caplog: pytest.LogCaptureFixture,
) -> None:
    reporter = make_reporter(endpoint)
    reporter.report(progress=float("nan"))
    reporter.report(progress="half")  # type: ignore[arg-type]
    reporter.report(metrics={"odd": _Unprintable()})
    reporter.report(metrics=_BrokenMapping())
    reporter.report(progress=0.5, metrics={"loss": 0.25})
    assert reporter.close() is True
    last = status_server.received[-1]
    assert last.status["progressPercentage"] == 50
    assert last.metrics == {"loss": "0.25"}
    assert len(_warnings(caplog)) == 1  # "a progress report was ignored", once


# Closing


def test_close_sends_the_final_state_at_once(
    endpoint: Endpoint, status_server: StatusServer, make_reporter: MakeReporter
) -> None:
    reporter = make_reporter(endpoint, min_interval=60.0)
    reporter.report(progress=0.1)
    status_server.received_at_least(1)
    reporter.report(progress=0.9)  # paced: would wait a minute
    started = time.perf_counter()
    assert reporter.close() is True
    assert time.perf_counter() - started < 1.0
    assert [r.status["progressPercentage"] for r in status_server.received] == [10, 90]
    reporter.report(progress=1.0)  # after close: ignored
    assert reporter.close() is True
    assert len(status_server.received) == 2


def test_the_reporter_is_a_context_manager(endpoint: Endpoint, status_server: StatusServer) -> None:
    with ProgressReporter(endpoint, settings=ReporterSettings(min_interval=60.0)) as reporter:
        reporter.report(progress=0.1)
        reporter.report(progress=0.2)
    assert status_server.received[-1].status["progressPercentage"] == 20


def test_the_final_state_is_sent_at_interpreter_exit(
    endpoint: Endpoint, status_server: StatusServer
) -> None:
    script = (
        "from mxjob_progress import ProgressReporter, ReporterSettings\n"
        "reporter = ProgressReporter.from_env(settings=ReporterSettings(min_interval=60))\n"
        "reporter.report(progress=0.1)\n"
        "reporter.report(progress=0.7, metrics={'loss': 0.5})\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(SDK),
        ENV_URL: endpoint.url,
        ENV_CA_CERT: endpoint.ca_cert,
        ENV_TOKEN: endpoint.token_file,
    }
    done = subprocess.run(
        [sys.executable, "-c", script],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    last = status_server.received[-1]
    assert (last.status["progressPercentage"], last.metrics) == (70, {"loss": "0.5"})


def test_a_forked_copy_does_nothing(
    endpoint: Endpoint, status_server: StatusServer, make_reporter: MakeReporter
) -> None:
    reporter = make_reporter(endpoint)
    reporter._pid = -1  # as in a child process: the sender thread stayed in the parent
    reporter.report(progress=0.5)
    assert not reporter.due()
    assert reporter.close() is False  # and does not touch a lock that may be held
    assert status_server.received == []


# Without the operator


def test_without_the_environment_the_reporter_does_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    threads = _sender_threads()
    reporter = ProgressReporter.from_env(environ={})
    assert not reporter.enabled
    assert reporter.endpoint is None
    for step in range(100):
        reporter.report(progress=step / 100, metrics={"loss": 1.0})
    assert not reporter.due()
    assert _sender_threads() <= threads
    assert reporter.close() is True
    assert _warnings(caplog) == []


@pytest.mark.parametrize(
    ("environ", "warning"),
    [
        ({ENV_URL: "https://op.example/status"}, f"{ENV_CA_CERT}, {ENV_TOKEN} not set"),
        (
            {ENV_URL: "http://op.example/status", ENV_CA_CERT: "ca", ENV_TOKEN: "token"},
            "must be an https URL",
        ),
    ],
)
def test_a_half_set_environment_disables_reporting_with_a_warning(
    environ: dict[str, str], warning: str, caplog: pytest.LogCaptureFixture
) -> None:
    reporter = ProgressReporter.from_env(environ=environ)
    assert not reporter.enabled
    (logged,) = _warnings(caplog)
    assert warning in logged


def test_the_environment_names_the_endpoint_unless_disabled(
    endpoint: Endpoint, caplog: pytest.LogCaptureFixture
) -> None:
    environ = {ENV_URL: endpoint.url, ENV_CA_CERT: endpoint.ca_cert, ENV_TOKEN: endpoint.token_file}
    reporter = ProgressReporter.from_env(environ=environ)
    assert reporter.enabled
    assert reporter.endpoint == endpoint
    assert not ProgressReporter.from_env(environ=environ, enabled=False).enabled
    assert not ProgressReporter.disabled().enabled
    assert _warnings(caplog) == []


@pytest.mark.parametrize(
    "options",
    [
        {"min_interval": -1.0},
        {"send_timeout": 0.0},
        {"backoff_initial": 0.0},
        {"backoff_initial": 2.0, "backoff_max": 1.0},
        {"eta_time_constant": 0.0},
    ],
)
def test_settings_out_of_range_are_refused(options: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        ReporterSettings(**options)


def test_due_says_yes_at_most_once_per_interval(endpoint: Endpoint) -> None:
    paced = ProgressReporter(endpoint, settings=ReporterSettings(min_interval=60.0))
    assert [paced.due(), paced.due()] == [True, False]
    unpaced = ProgressReporter(endpoint, settings=ReporterSettings(min_interval=0.0))
    assert [unpaced.due(), unpaced.due()] == [True, True]
    unpaced.close()
    assert not unpaced.due()
