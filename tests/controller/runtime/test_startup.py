"""The controller waits for the API server at start-up instead of exiting."""

from __future__ import annotations

import threading

import pytest
from urllib3.exceptions import MaxRetryError, NewConnectionError

from controller.runtime.client import ApiError
from controller.runtime.startup import await_api_server


class ApiServerComingBack:
    """Answers ``/readyz`` after the given failures, counting the calls."""

    def __init__(self, *failures: Exception) -> None:
        self.failures = list(failures)
        self.paths: list[str] = []

    def request(self, method: str, path: str, *, timeout: float = 30) -> object:
        self.paths.append(f"{method} {path}")
        if self.failures:
            raise self.failures.pop(0)
        return "ok"


def refused() -> MaxRetryError:
    cause = NewConnectionError(None, "Failed to establish a new connection: [Errno 111]")  # type: ignore[arg-type]
    return MaxRetryError(None, "/readyz", cause)  # type: ignore[arg-type]


def test_an_api_server_that_is_ready_is_asked_once() -> None:
    server = ApiServerComingBack()
    assert await_api_server(server, stop=threading.Event())
    assert server.paths == ["GET /readyz"]


def test_refused_connections_and_a_starting_api_server_are_waited_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    starting = ApiError(500, "Internal Server Error", "[-]poststarthook/rbac failed")
    server = ApiServerComingBack(refused(), ConnectionResetError(104, "reset"), starting)
    ready = await_api_server(server, stop=threading.Event(), first_delay=0.001, longest_delay=0.002)
    assert ready
    assert len(server.paths) == 4
    assert "500 Internal Server Error" in caplog.text
    assert "Errno 111" in caplog.text


def test_a_stop_while_waiting_returns_false_without_asking_again() -> None:
    stop = threading.Event()

    class StopsOnFirstCall(ApiServerComingBack):
        def request(self, method: str, path: str, *, timeout: float = 30) -> object:
            stop.set()
            return super().request(method, path, timeout=timeout)

    server = StopsOnFirstCall(refused(), refused())
    assert not await_api_server(server, stop=stop, first_delay=10.0)
    assert len(server.paths) == 1


def test_an_error_that_is_no_connection_problem_is_not_swallowed() -> None:
    class Broken:
        def request(self, method: str, path: str, *, timeout: float = 30) -> object:
            raise KeyError("a bug")

    with pytest.raises(KeyError):
        await_api_server(Broken(), stop=threading.Event())
