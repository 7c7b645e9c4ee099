"""controller/progress/counters.py: every answer is counted once, accepted or refused by code."""

from __future__ import annotations

import threading

from controller.progress.counters import ProgressCounters, ProgressCounts


def test_answers_are_counted_by_code_and_add_up() -> None:
    counters = ProgressCounters()
    for status in (202, 202, 401, 403, 401, 413):
        counters.answered(status)
    counters.add("writes")
    counters.add("coalesced", 3)
    counts = counters.snapshot()
    assert counts == ProgressCounts(
        received=6, accepted=2, rejected={401: 2, 403: 1, 413: 1}, writes=1, coalesced=3
    )
    assert counts.received == counts.accepted + sum(counts.rejected.values())


def test_a_snapshot_does_not_move_with_later_counts() -> None:
    counters = ProgressCounters()
    counters.answered(400)
    before = counters.snapshot()
    counters.answered(400)
    assert before.rejected == {400: 1}


def test_threads_lose_no_count() -> None:
    counters = ProgressCounters()

    def answer() -> None:
        for _ in range(1000):
            counters.answered(202)

    threads = [threading.Thread(target=answer) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert counters.snapshot().accepted == 4000
