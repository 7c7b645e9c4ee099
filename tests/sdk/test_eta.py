"""mxjob_progress.eta: the remaining time from the observed rate, on a clock moved by hand."""

from __future__ import annotations

import math

import pytest
from mxjob_progress import EtaEstimator

from tests.sdk.recording import FakeClock


def _estimator(clock: FakeClock, **options: float) -> EtaEstimator:
    return EtaEstimator(clock=clock, **options)


def test_no_estimate_before_the_warmup_or_without_progress() -> None:
    clock = FakeClock()
    eta = _estimator(clock, warmup=10.0)
    assert eta.remaining() is None
    eta.update(0.1)
    clock.now = 5.0
    eta.update(0.15)
    assert eta.remaining() is None  # 5 s is too little to tell
    clock.now = 30.0
    eta.update(0.1)  # no progress since the first report: no rate yet
    assert eta.remaining() is None


def test_a_steady_rate_gives_the_exact_time_left_and_it_ages_with_the_clock() -> None:
    clock = FakeClock(100.0)
    eta = _estimator(clock, warmup=10.0)
    eta.update(0.0)
    for elapsed in (10.0, 25.0, 60.0):
        clock.now = 100.0 + elapsed
        eta.update(elapsed / 100.0)  # 1 % a second
        assert eta.remaining() == pytest.approx(100.0 - elapsed)
    clock.now += 15.0  # no report since: the estimate counts down
    assert eta.remaining() == pytest.approx(25.0)
    clock.now += 60.0
    assert eta.remaining() == 0.0


def test_the_rate_is_counted_from_the_first_report_not_from_zero() -> None:
    clock = FakeClock()
    eta = _estimator(clock, warmup=10.0)
    eta.update(0.5)  # resumed from a checkpoint at half
    clock.now = 10.0
    eta.update(0.6)
    assert eta.remaining() == pytest.approx(40.0)


def test_a_changed_rate_moves_the_estimate_gradually() -> None:
    clock = FakeClock()
    eta = _estimator(clock, warmup=10.0, time_constant=30.0)
    eta.update(0.0)
    clock.now = 20.0
    eta.update(0.2)  # 1 % a second: 80 s left
    assert eta.remaining() == pytest.approx(80.0)
    clock.now = 25.0
    eta.update(0.4)  # a burst: the average since the first report says 37.5 s
    estimate = eta.remaining()
    assert estimate is not None
    aged, average, weight = 80.0 - 5.0, 37.5, 1.0 - math.exp(-5.0 / 30.0)
    assert estimate == pytest.approx(aged + weight * (average - aged))
    assert average < estimate < aged  # between, much nearer the previous


def test_the_smoothing_does_not_depend_on_how_often_progress_is_reported() -> None:
    def run(step: float) -> float:
        clock = FakeClock()
        eta = _estimator(clock, warmup=10.0, time_constant=30.0)
        done = 0.0
        while clock.now < 60.0:
            clock.now += step
            rate = 0.01 if clock.now <= 20.0 else 0.005  # slows down after 20 s
            done += rate * step
            eta.update(done)
        remaining = eta.remaining()
        assert remaining is not None
        return remaining

    every_batch, every_few_seconds = run(0.1), run(2.0)
    assert every_batch == pytest.approx(every_few_seconds, rel=0.05)


def test_progress_going_back_starts_over() -> None:
    clock = FakeClock()
    eta = _estimator(clock, warmup=10.0)
    eta.update(0.0)
    clock.now = 20.0
    eta.update(0.4)
    assert eta.remaining() is not None
    clock.now = 21.0
    eta.update(0.1)  # the job restarted from an older checkpoint
    assert eta.remaining() is None
    clock.now = 31.0
    eta.update(0.2)
    assert eta.remaining() == pytest.approx(80.0)


def test_done_means_nothing_left() -> None:
    clock = FakeClock()
    eta = _estimator(clock)
    eta.update(0.2)
    eta.update(1.0)
    assert eta.remaining() == 0.0


def test_out_of_range_options_are_refused() -> None:
    with pytest.raises(ValueError):
        EtaEstimator(warmup=-1.0)
    with pytest.raises(ValueError):
        EtaEstimator(time_constant=0.0)
