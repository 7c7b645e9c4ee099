"""controller/progress/coalescer.py: the latest report of a job wins, and a job is written at
most once per interval, its first report at once."""

from __future__ import annotations

import pytest

from controller.progress.coalescer import Coalescer

A = ("team", "a")
B = ("team", "b")


def _status(n: int) -> dict[str, int]:
    return {"progressPercentage": n}


def test_a_first_report_is_due_at_once_and_the_next_one_an_interval_after() -> None:
    coalescer = Coalescer(interval=5.0)
    coalescer.offer(A, _status(1))
    assert coalescer.take_due(now=100.0) == [(A, _status(1))]
    coalescer.offer(A, _status(2))
    assert coalescer.take_due(now=104.9) == []
    assert coalescer.seconds_to_next(now=104.9) == pytest.approx(0.1)
    assert coalescer.take_due(now=105.0) == [(A, _status(2))]
    assert coalescer.seconds_to_next(now=105.0) is None


def test_the_latest_unwritten_report_replaces_the_older_one() -> None:
    coalescer = Coalescer(interval=5.0)
    coalescer.offer(A, _status(1))
    coalescer.take_due(now=0.0)
    assert coalescer.offer(A, _status(2)) is False
    assert coalescer.offer(A, _status(3)) is True
    assert len(coalescer) == 1
    assert coalescer.take_due(now=5.0) == [(A, _status(3))]


def test_jobs_are_paced_each_on_its_own() -> None:
    coalescer = Coalescer(interval=5.0)
    coalescer.offer(A, _status(1))
    coalescer.take_due(now=0.0)
    coalescer.offer(A, _status(2))
    coalescer.offer(B, _status(7))
    assert coalescer.take_due(now=1.0) == [(B, _status(7))]
    assert coalescer.seconds_to_next(now=1.0) == 4.0


def test_a_failed_write_is_retried_at_the_next_turn_unless_a_newer_report_came() -> None:
    coalescer = Coalescer(interval=5.0)
    coalescer.offer(A, _status(1))
    [(_, taken)] = coalescer.take_due(now=0.0)
    coalescer.retry(A, taken)
    assert coalescer.take_due(now=4.0) == []
    assert coalescer.take_due(now=5.0) == [(A, _status(1))]
    coalescer.offer(A, _status(2))
    coalescer.retry(A, _status(1))  # the write of 1 failed meanwhile: 2 is newer
    assert coalescer.take_due(now=10.0) == [(A, _status(2))]


def test_a_gone_job_is_forgotten() -> None:
    coalescer = Coalescer(interval=5.0)
    coalescer.offer(A, _status(1))
    coalescer.forget(A)
    assert coalescer.take_due(now=0.0) == [] and len(coalescer) == 0


def test_a_job_quiet_for_an_interval_is_written_at_once_again() -> None:
    coalescer = Coalescer(interval=5.0)
    coalescer.offer(A, _status(1))
    coalescer.take_due(now=0.0)
    coalescer.take_due(now=60.0)
    coalescer.offer(A, _status(2))
    assert coalescer.take_due(now=60.0) == [(A, _status(2))]


def test_a_clock_stepping_back_makes_a_job_due_rather_than_stalled() -> None:
    coalescer = Coalescer(interval=5.0)
    coalescer.offer(A, _status(1))
    coalescer.take_due(now=1000.0)
    coalescer.offer(A, _status(2))
    assert coalescer.take_due(now=10.0) == [(A, _status(2))]


def test_100_reports_a_second_from_8_pods_for_3_seconds_make_4_writes() -> None:
    """The contract's figure without threads: every 10 ms one of 8 pods reports, and the due
    reports are taken as they come (the flusher wakes on each); then one interval passes."""
    coalescer = Coalescer(interval=1.0)
    written = []
    for tick in range(300):
        now = tick * 0.01
        coalescer.offer(A, {"pod": tick % 8, "seq": tick})
        written += [(now, status) for _, status in coalescer.take_due(now=now)]
    written += [(4.0, status) for _, status in coalescer.take_due(now=4.0)]
    assert [round(at, 2) for at, _ in written] == [0.0, 1.0, 2.0, 4.0]
    assert written[-1][1] == {"pod": 299 % 8, "seq": 299}
