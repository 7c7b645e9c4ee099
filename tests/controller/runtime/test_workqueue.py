"""WorkQueue: dedup, one reconcile per key at a time, real timers, backoff, shutdown."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from controller.runtime.workqueue import WorkQueue


@pytest.fixture
def queue() -> Iterator[WorkQueue]:
    q = WorkQueue(base_delay=0.01, max_delay=0.08)
    yield q
    q.shutdown()


def test_adds_of_a_waiting_key_are_absorbed(queue: WorkQueue) -> None:
    for _ in range(5):
        queue.add("ns/a")
    queue.add("ns/b")
    assert queue.depth() == 2
    assert [queue.get(timeout=1), queue.get(timeout=1)] == ["ns/a", "ns/b"]
    assert queue.get(timeout=0.05) is None


def test_a_key_being_processed_is_not_handed_out_again_until_done(queue: WorkQueue) -> None:
    queue.add("ns/a")
    assert queue.get(timeout=1) == "ns/a"
    queue.add("ns/a")  # an event during its reconcile
    assert queue.get(timeout=0.05) is None
    queue.done("ns/a")
    assert queue.get(timeout=1) == "ns/a"  # ...is reconciled once more afterwards


def test_add_after_fires_on_time_without_any_other_add(queue: WorkQueue) -> None:
    started = time.monotonic()
    queue.add_after("ns/a", 0.2)
    assert queue.depth() == 0 and queue.pending_timers() == 1
    assert queue.get(timeout=2) == "ns/a"
    assert 0.18 <= time.monotonic() - started < 1.0


def test_the_earliest_timer_of_a_key_wins(queue: WorkQueue) -> None:
    queue.add_after("ns/a", 5)
    queue.add_after("ns/a", 0.05)
    queue.add_after("ns/a", 10)
    assert queue.get(timeout=1) == "ns/a"
    assert queue.pending_timers() == 0


def test_rate_limited_retries_back_off_exponentially_up_to_the_cap(queue: WorkQueue) -> None:
    delays = [queue.add_rate_limited("ns/a") for _ in range(6)]
    assert delays == [0.01, 0.02, 0.04, 0.08, 0.08, 0.08]
    assert queue.num_requeues("ns/a") == 6
    queue.forget("ns/a")
    assert queue.add_rate_limited("ns/a") == 0.01


def test_shutdown_wakes_every_waiting_worker() -> None:
    q = WorkQueue()
    results: list[str | None] = []
    workers = [threading.Thread(target=lambda: results.append(q.get())) for _ in range(3)]
    for worker in workers:
        worker.start()
    q.shutdown()
    for worker in workers:
        worker.join(timeout=2)
    assert results == [None, None, None]
    q.add("ns/a")
    assert q.depth() == 0


class _Recorded:
    """A QueueMetrics that keeps what it was told."""

    def __init__(self) -> None:
        self.adds = 0
        self.waits: list[float] = []
        self.works: list[float] = []
        self.retries = 0

    def added(self) -> None:
        self.adds += 1

    def started(self, waited: float) -> None:
        self.waits.append(waited)

    def finished(self, worked: float) -> None:
        self.works.append(worked)

    def retried(self) -> None:
        self.retries += 1


def test_metrics_count_queued_adds_and_time_the_wait_and_the_work() -> None:
    now = [100.0]
    recorded = _Recorded()
    queue = WorkQueue(clock=lambda: now[0], metrics=recorded)
    try:
        queue.add("ns/a")
        queue.add("ns/a")  # absorbed: not an add of the queue's
        now[0] += 2
        assert queue.get(timeout=0) == "ns/a"
        now[0] += 3
        assert queue.processing_seconds() == [3.0]
        queue.add_rate_limited("ns/a")
        queue.done("ns/a")
        assert (recorded.adds, recorded.waits, recorded.works) == (1, [2.0], [3.0])
        assert recorded.retries == 1
        assert queue.processing_seconds() == []
    finally:
        queue.shutdown()
