"""Which jobs' latest reports are due to be written now (pure; the caller passes the time).

Pods report as often as they like (every pod of a job, each every few seconds, or a buggy loop
at hundreds a second); the API server must see at most one write per job per interval. So a
job's latest report replaces its unwritten one, and is written once the interval since the
job's previous write has passed; a job not written within the interval is written at once, so
the first report of a job (or one after a quiet spell) shows without delay. A write that failed
for a while (the API server busy) is tried again one interval after the attempt, unless a newer
report replaced it meanwhile; an attempt counts as a write, so failures never speed writes up.

What a job costs here lasts one interval past its last write: then it is forgotten, so memory
follows the jobs reporting now, not every job ever seen. A clock that steps back (a wall clock
corrected) makes a job due rather than stalling it for the length of the step.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

JobKey = tuple[str, str]
"""(namespace, name) of an MXJob."""
Status = Mapping[str, Any]
"""The ``status.trainerStatus`` to write."""


class Coalescer:
    """The latest unwritten report of each job, and when each job was last written."""

    def __init__(self, *, interval: float) -> None:
        self.interval = interval
        self._pending: dict[JobKey, Status] = {}
        self._attempted: dict[JobKey, float] = {}

    def __len__(self) -> int:
        """Jobs with a report waiting."""
        return len(self._pending)

    def _due_at(self, key: JobKey, now: float) -> float:
        attempted = self._attempted.get(key)
        if attempted is None or attempted > now:
            return now
        return attempted + self.interval

    def offer(self, key: JobKey, status: Status) -> bool:
        """Keep ``status`` as the job's report to write; True when it replaced an unwritten one
        (the older one will never be written)."""
        replaced = key in self._pending
        self._pending[key] = status
        return replaced

    def take_due(self, *, now: float) -> list[tuple[JobKey, Status]]:
        """The reports to write now, each job's write counted as attempted at ``now``."""
        due = [key for key in self._pending if self._due_at(key, now) <= now]
        taken = [(key, self._pending.pop(key)) for key in due]
        for key in due:
            self._attempted[key] = now
        quiet = [
            key
            for key, at in self._attempted.items()
            if key not in self._pending and not at <= now < at + self.interval
        ]
        for key in quiet:
            del self._attempted[key]
        return taken

    def retry(self, key: JobKey, status: Status) -> None:
        """A write of ``status`` failed but may succeed later: write it at the job's next turn,
        unless a newer report is waiting already."""
        self._pending.setdefault(key, status)

    def forget(self, key: JobKey) -> None:
        """The job is gone: drop its waiting report, if any."""
        self._pending.pop(key, None)

    def seconds_to_next(self, *, now: float) -> float | None:
        """Seconds until the next report is due (0: now), None when none is waiting."""
        if not self._pending:
            return None
        return max(0.0, min(self._due_at(key, now) for key in self._pending) - now)
