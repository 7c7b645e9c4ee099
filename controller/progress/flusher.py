"""The thread that writes the due reports to their jobs' status.

A request is answered 202 as soon as its report is kept (controller/progress/coalescer.py): the
pod never waits on the API server, and a burst of reports costs one write per job per interval.
This thread wakes when a report arrives or the next one falls due, and writes each due report as
a JSON merge patch of ``{"status": {"trainerStatus": ...}}`` on the status subresource. A merge
patch names only ``trainerStatus``: the reconciler's own status fields (conditions, replica
counts, times) are neither read nor written here, so the two writers never conflict, and no
``resourceVersion`` is needed. Any replica can write; only the leader reconciles.

An answer 404 means the job is gone: its report is dropped. Another 4xx but 408 and 429 will
not change by trying again (the schema refuses the value, the controller may not patch): the
report is dropped and logged. Anything else (a timeout, 429, 5xx) is tried again at the job's
next turn, unless a newer report replaced it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from controller.progress.coalescer import Coalescer, JobKey, Status
from controller.progress.counters import ProgressCounters
from controller.runtime.client import ApiError, NotFound

log = logging.getLogger(__name__)

StatusWriter = Callable[[str, str, Mapping[str, Any]], None]
"""Writes ``status.trainerStatus`` of MXJob (namespace, name); raises ``ApiError``."""
WRITE_TIMEOUT = 10.0
"""Seconds one write may take: more than the API server's usual answer, less than an
interval's worth of waiting reports going stale."""


def is_permanent(error: ApiError) -> bool:
    """A refusal that trying again will not change."""
    return 400 <= error.status < 500 and error.status not in (408, 429)


class Flusher:
    """Keeps each job's latest report and writes the due ones from a thread of its own."""

    def __init__(
        self,
        write: StatusWriter,
        *,
        interval: float,
        counters: ProgressCounters,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._write = write
        self._counters = counters
        self._clock = clock
        self._coalescer = Coalescer(interval=interval)
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="progress-flusher", daemon=True)

    def offer(self, key: JobKey, status: Status) -> None:
        """Keep ``status`` as the job's latest report, and wake the thread."""
        with self._lock:
            replaced = self._coalescer.offer(key, status)
        if replaced:
            self._counters.add("coalesced")
        self._wake.set()

    def wake(self) -> None:
        """Look for due reports now (tests move their clock, then call this)."""
        self._wake.set()

    def waiting(self) -> int:
        """Jobs with a report not written yet."""
        with self._lock:
            return len(self._coalescer)

    def flush_due(self) -> int:
        """Write every report due now; return how many writes were tried."""
        with self._lock:
            due = self._coalescer.take_due(now=self._clock())
        for key, status in due:
            self._write_one(key, status)
        return len(due)

    def _write_one(self, key: JobKey, status: Status) -> None:
        namespace, name = key
        try:
            self._write(namespace, name, status)
        except NotFound:
            log.debug("progress of mxjob %s/%s not written: the job is gone", namespace, name)
            self._counters.add("dropped")
            with self._lock:
                self._coalescer.forget(key)
        except Exception as error:
            if isinstance(error, ApiError) and is_permanent(error):
                log.warning("progress of mxjob %s/%s dropped: %s", namespace, name, error)
                self._counters.add("dropped")
                return
            log.warning(
                "progress of mxjob %s/%s not written, trying again at its next turn: %s",
                namespace,
                name,
                error,
            )
            self._counters.add("write_failures")
            with self._lock:
                self._coalescer.retry(key, status)
        else:
            self._counters.add("writes")

    def _run(self) -> None:
        while not self._stopping.is_set():
            self._wake.clear()
            try:
                self.flush_due()
            except Exception:  # never let one bad write end the thread
                log.exception("progress flusher failed")
            with self._lock:
                delay = self._coalescer.seconds_to_next(now=self._clock())
            self._wake.wait(delay)

    def start(self) -> None:
        self._thread.start()

    def stop(self, *, timeout: float = 5.0) -> None:
        """End the thread (after the write in progress, if any). Reports not written yet are
        dropped: their pods send their state again, to whichever replica serves them next."""
        self._stopping.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
        left = self.waiting()
        if left:
            log.info("progress flusher stopped with %d jobs' reports unwritten", left)
