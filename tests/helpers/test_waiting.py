"""tests.helpers.waiting: polls until the condition holds, and says what it last saw if not."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

from tests.helpers.waiting import SHOWN, wait_for


def _counter(start: int = 0) -> Callable[[], int]:
    values: Iterator[int] = iter(range(start, 1_000_000))
    return lambda: next(values)


def test_returns_the_first_value_for_which_the_condition_holds() -> None:
    fetch = _counter()
    assert wait_for("three", fetch, lambda n: n >= 3, timeout=5, interval=0.001) == 3
    assert fetch() == 4  # fetched no more than needed


def test_a_value_that_holds_at_once_is_returned_without_waiting() -> None:
    started = time.monotonic()
    assert wait_for("anything", lambda: "ready", bool, timeout=5, interval=1) == "ready"
    assert time.monotonic() - started < 0.5


def test_times_out_naming_what_it_waited_for_the_timeout_and_the_last_value() -> None:
    fetch = _counter()
    started = time.monotonic()
    with pytest.raises(AssertionError) as raised:
        wait_for("the job to succeed", fetch, lambda n: n < 0, timeout=0.2, interval=0.01)
    assert 0.2 <= time.monotonic() - started < 2
    message = str(raised.value)
    assert message.startswith("timed out after 0.2 s waiting for the job to succeed")
    last = int(message.rsplit("last value: ", 1)[1])
    assert last == fetch() - 1  # the value of the final fetch, at the deadline


def test_a_long_last_value_is_shown_truncated() -> None:
    with pytest.raises(AssertionError) as raised:
        wait_for("a short list", lambda: list(range(10_000)), lambda v: len(v) < 3, timeout=0)
    message = str(raised.value)
    assert "[0, 1, 2, 3" in message and f"({len(repr(list(range(10_000))))} characters)" in message
    assert len(message) < SHOWN + 200


def test_an_exception_from_fetch_is_retried() -> None:
    calls = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionError("the API server restarts")
        return "answered"

    assert wait_for("an answer", flaky, lambda v: v == "answered", timeout=5, interval=0.001) == (
        "answered"
    )
    assert len(calls) == 3


def test_the_last_exception_from_fetch_is_reported_on_timeout() -> None:
    def missing() -> dict[str, str]:
        raise LookupError("pods/worker-0 not found")

    with pytest.raises(AssertionError) as raised:
        wait_for("the worker", missing, bool, timeout=0.05, interval=0.01)
    message = str(raised.value)
    assert "waiting for the worker" in message and "no value fetched" in message
    assert "last error: LookupError('pods/worker-0 not found')" in message
    assert isinstance(raised.value.__cause__, LookupError)


def test_an_exception_after_a_value_reports_both() -> None:
    answers: Iterator[int] = iter([7])

    def once_then_gone() -> int:
        return next(answers)  # StopIteration from the second call on

    with pytest.raises(AssertionError) as raised:
        wait_for("eight", once_then_gone, lambda n: n == 8, timeout=0.05, interval=0.01)
    assert "last value: 7" in str(raised.value) and "StopIteration" in str(raised.value)


def test_an_assertion_in_fetch_fails_at_once() -> None:
    def verdict() -> int:
        raise AssertionError("refused with the wrong message")

    started = time.monotonic()
    with pytest.raises(AssertionError, match="wrong message"):
        wait_for("a refusal", verdict, bool, timeout=30)
    assert time.monotonic() - started < 1
