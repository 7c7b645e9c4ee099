"""A keyed work queue with real timers and per-key rate-limited retries (client-go's, in small).

Why keyed: reconcile is level-triggered, so ten events about one job need one reconcile, not
ten. A key waiting in the queue absorbs further adds (dedup); a key being reconciled is never
handed to a second worker, and an add during its reconcile queues it once more for afterwards,
so the newest state is always looked at (one reconcile per job at a time, any number of jobs in
parallel).

Why real timers: activeDeadlineSeconds and ttlSecondsAfterFinished must fire on time with no
other event (training-operator only noticed a passed deadline on the next event
about the job). ``add_after`` keeps a heap of due times served by one timer thread that
sleeps on the queue's condition until the earliest is due.

Why per-key backoff: a job whose reconcile fails (API server away, a conflict) is retried
after 2^n * base seconds, capped, so one broken job neither spins a core nor delays the others;
``forget`` resets it after a success.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Protocol


class QueueMetrics(Protocol):
    """What a queue reports as it works, as client-go's workqueue ``MetricsProvider`` does.

    ``controller.runtime.metrics`` implements it with the ``workqueue_*`` metrics; a queue without
    one reports nothing.
    """

    def added(self) -> None:
        """A key entered the queue (an add absorbed by a waiting key is not counted)."""

    def started(self, waited: float) -> None:
        """A worker took a key that had waited ``waited`` seconds in the queue."""

    def finished(self, worked: float) -> None:
        """A worker finished a key it had held for ``worked`` seconds."""

    def retried(self) -> None:
        """A key was queued again after a failure (rate limited)."""


class _NoMetrics:
    def added(self) -> None:
        pass

    def started(self, waited: float) -> None:
        pass

    def finished(self, worked: float) -> None:
        pass

    def retried(self) -> None:
        pass


class WorkQueue:
    """Keys (``namespace/name``) waiting to be reconciled; every method is thread-safe."""

    def __init__(
        self,
        *,
        base_delay: float = 0.05,
        max_delay: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        metrics: QueueMetrics | None = None,
    ) -> None:
        self._metrics: QueueMetrics = metrics or _NoMetrics()
        self._base_delay = base_delay
        self._max_delay = max_delay
        self._clock = clock
        self._cond = threading.Condition()
        self._queue: deque[str] = deque()
        self._dirty: set[str] = set()
        self._processing: dict[str, float] = {}
        """Keys being reconciled, with the time their worker took them."""
        self._queued_at: dict[str, float] = {}
        self._timers: list[tuple[float, int, str]] = []
        self._due: dict[str, float] = {}
        self._sequence = itertools.count()
        self._failures: dict[str, int] = {}
        self._shutting_down = False
        self._timer_thread = threading.Thread(
            target=self._run_timers, name="workqueue-timers", daemon=True
        )
        self._timer_thread.start()

    # -- adding ---------------------------------------------------------------------------------
    def add(self, key: str) -> None:
        """Queue ``key`` now, unless it is already waiting (then this add is absorbed)."""
        with self._cond:
            self._add_locked(key)

    def _add_locked(self, key: str) -> None:
        if self._shutting_down or key in self._dirty:
            return
        self._dirty.add(key)
        self._queued_at[key] = self._clock()
        self._metrics.added()
        if key in self._processing:
            return  # queued again by done()
        self._queue.append(key)
        self._cond.notify_all()

    def add_after(self, key: str, delay: float) -> None:
        """Queue ``key`` once ``delay`` seconds have passed.

        Only the earliest pending timer per key is kept: a reconcile re-computes and re-arms the
        next due time every time it runs, so a later timer would be redundant.
        """
        if delay <= 0:
            self.add(key)
            return
        with self._cond:
            if self._shutting_down:
                return
            when = self._clock() + delay
            current = self._due.get(key)
            if current is not None and current <= when:
                return
            self._due[key] = when
            heapq.heappush(self._timers, (when, next(self._sequence), key))
            self._cond.notify_all()

    def add_rate_limited(self, key: str) -> float:
        """Queue ``key`` after its backoff (base * 2^failures, capped); return that delay."""
        with self._cond:
            failures = self._failures.get(key, 0)
            self._failures[key] = failures + 1
        self._metrics.retried()
        delay = min(self._base_delay * 2.0**failures, self._max_delay)
        self.add_after(key, delay)
        return delay

    def forget(self, key: str) -> None:
        """Reset the backoff of ``key`` (its reconcile succeeded)."""
        with self._cond:
            self._failures.pop(key, None)

    def num_requeues(self, key: str) -> int:
        """How many rate-limited retries ``key`` has had since it was last forgotten."""
        with self._cond:
            return self._failures.get(key, 0)

    # -- working --------------------------------------------------------------------------------
    def get(self, timeout: float | None = None) -> str | None:
        """The next key to reconcile, marked as processing; None on shutdown or timeout.

        The caller must call :meth:`done` with the key when its reconcile is over.
        """
        deadline = None if timeout is None else self._clock() + timeout
        with self._cond:
            while not self._queue and not self._shutting_down:
                remaining = None if deadline is None else deadline - self._clock()
                if remaining is not None and remaining <= 0:
                    return None
                self._cond.wait(remaining)
            if self._shutting_down:
                return None
            key = self._queue.popleft()
            now = self._clock()
            self._processing[key] = now
            self._dirty.discard(key)
            self._metrics.started(now - self._queued_at.pop(key, now))
            return key

    def done(self, key: str) -> None:
        """The reconcile of ``key`` is over; if it was added meanwhile, queue it again."""
        with self._cond:
            taken = self._processing.pop(key, None)
            if taken is not None:
                self._metrics.finished(self._clock() - taken)
            if key in self._dirty and not self._shutting_down:
                self._queue.append(key)
                self._cond.notify_all()

    # -- timers ---------------------------------------------------------------------------------
    def _run_timers(self) -> None:
        with self._cond:
            while not self._shutting_down:
                now = self._clock()
                while self._timers and self._timers[0][0] <= now:
                    when, _, key = heapq.heappop(self._timers)
                    if self._due.get(key) == when:
                        del self._due[key]
                        self._add_locked(key)
                wait = self._timers[0][0] - now if self._timers else None
                self._cond.wait(wait)

    # -- state ----------------------------------------------------------------------------------
    def depth(self) -> int:
        """Keys waiting for a worker (not counting those being reconciled or on a timer)."""
        with self._cond:
            return len(self._queue)

    def processing_seconds(self) -> list[float]:
        """How long each key being reconciled has been held by its worker."""
        with self._cond:
            now = self._clock()
            return [now - taken for taken in self._processing.values()]

    def pending_timers(self) -> int:
        """Keys waiting for their timer."""
        with self._cond:
            return len(self._due)

    def shutdown(self) -> None:
        """Stop handing out keys: every waiting :meth:`get` returns None; timers are dropped."""
        with self._cond:
            self._shutting_down = True
            self._cond.notify_all()
        self._timer_thread.join(timeout=5)
