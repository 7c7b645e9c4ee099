"""controller/progress/flusher.py: the due reports are written as a merge patch of
``status.trainerStatus`` only; a gone job's report is dropped, a failed write tried again at the
job's next turn."""

from __future__ import annotations

import logging

import pytest

from controller.progress.counters import ProgressCounters
from controller.progress.flusher import Flusher
from controller.runtime.client import MERGE_PATCH, ApiError, error_for
from tests.controller.progress.progress_samples import STATUS_PATH, FakeClock, FakeKube, writer
from tests.helpers.waiting import wait_for

JOB = ("team", "mnist")
STATUS = {"progressPercentage": 45, "lastUpdatedTime": "2025-06-15T15:06:40Z"}


def _flusher(kube: FakeKube, clock: FakeClock) -> tuple[Flusher, ProgressCounters]:
    counters = ProgressCounters()
    flusher = Flusher(writer(kube), interval=5.0, counters=counters, clock=clock)
    return flusher, counters


def _error(status: int) -> ApiError:
    return error_for(status, "", {"kind": "Status", "code": status, "message": f"HTTP {status}"})


def test_a_report_is_written_as_a_merge_patch_of_trainer_status_only() -> None:
    kube = FakeKube()
    flusher, counters = _flusher(kube, FakeClock())
    flusher.offer(JOB, STATUS)
    assert flusher.flush_due() == 1
    [patch] = kube.patches()
    assert (patch.path, patch.content_type) == (STATUS_PATH, MERGE_PATCH)
    assert patch.body == {"status": {"trainerStatus": STATUS}}
    assert counters.snapshot().writes == 1


def test_reports_between_two_writes_are_coalesced() -> None:
    kube, clock = FakeKube(), FakeClock()
    flusher, counters = _flusher(kube, clock)
    flusher.offer(JOB, {"progressPercentage": 1})
    flusher.flush_due()
    for percent in (2, 3, 4):
        flusher.offer(JOB, {"progressPercentage": percent})
        assert flusher.flush_due() == 0
    clock.advance(5)
    flusher.flush_due()
    assert [p.body["status"]["trainerStatus"] for p in kube.patches()] == [
        {"progressPercentage": 1},
        {"progressPercentage": 4},
    ]
    assert counters.snapshot().coalesced == 2


def test_a_gone_job_drops_its_report() -> None:
    kube = FakeKube(failures=[_error(404)])
    flusher, counters = _flusher(kube, FakeClock())
    flusher.offer(JOB, STATUS)
    flusher.flush_due()
    assert flusher.waiting() == 0
    assert counters.snapshot().dropped == 1


def test_a_refusal_for_good_drops_the_report_and_says_so(caplog: pytest.LogCaptureFixture) -> None:
    kube, clock = FakeKube(failures=[_error(422)]), FakeClock()
    flusher, counters = _flusher(kube, clock)
    flusher.offer(JOB, STATUS)
    with caplog.at_level(logging.WARNING, logger="controller.progress.flusher"):
        flusher.flush_due()
    assert "progress of mxjob team/mnist dropped: 422" in caplog.text
    clock.advance(5)
    assert flusher.flush_due() == 0
    assert counters.snapshot().dropped == 1


@pytest.mark.parametrize("failure", [_error(500), _error(429), TimeoutError("read timed out")])
def test_a_failed_write_is_tried_again_at_the_next_turn(failure: Exception) -> None:
    kube, clock = FakeKube(failures=[failure]), FakeClock()
    flusher, counters = _flusher(kube, clock)
    flusher.offer(JOB, STATUS)
    flusher.flush_due()
    clock.advance(4.9)
    assert flusher.flush_due() == 0, "no sooner than an interval after the attempt"
    clock.advance(0.1)
    assert flusher.flush_due() == 1
    assert len(kube.patches()) == 2
    counts = counters.snapshot()
    assert (counts.write_failures, counts.writes) == (1, 1)


def test_the_thread_writes_as_reports_arrive_and_stops() -> None:
    kube, clock = FakeKube(), FakeClock()
    flusher, _ = _flusher(kube, clock)
    flusher.start()
    try:
        flusher.offer(JOB, {"progressPercentage": 1})
        wait_for("the first write", kube.patches, lambda p: len(p) == 1, timeout=5)
        flusher.offer(JOB, {"progressPercentage": 2})
        clock.advance(5)
        flusher.wake()
        wait_for("the second write", kube.patches, lambda p: len(p) == 2, timeout=5)
    finally:
        flusher.stop()
    assert kube.patches()[-1].body["status"]["trainerStatus"] == {"progressPercentage": 2}
