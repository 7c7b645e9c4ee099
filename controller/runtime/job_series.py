"""The series of the job metrics as data: the states, the exit-code classes, and what one
reconcile adds (:class:`JobTally`).

They sit below the job room so that the registry (``controller.runtime.metrics``) can name every
series at start without importing the job room: ``controller.job.tally`` decides what a job
counts and fills a :class:`JobTally`, the registry only adds it. Pure, no Prometheus here, so the
deciding side imports no metrics library.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

NEW: Final = "New"
"""The state of a job the controller has not yet written a status for (no condition True)."""
JOB_STATES: Final = (NEW, "Created", "Running", "Restarting", "Suspended", "Succeeded", "Failed")
"""Every value of ``mxjob_controller_jobs{state}``: ``status.state`` (``shared.conditions``)."""
UNKNOWN_EXIT_CLASS: Final = "Unknown"
EXIT_CLASSES: Final = ("Succeeded", "Permanent", "Retryable", UNKNOWN_EXIT_CLASS)
"""``shared.exitcodes.ExitClass`` values, and ``Unknown`` for an in-place restart whose run's
exit code cannot be told apart from another pod's (``controller.job.tally``,
``restarts_by_exit_class``)."""
DEADLINE_STATES: Final = ("Restarting", "Failed")
"""What a job that exceeded its ``runPolicy.progressDeadlineSeconds`` became: it restarts as a
whole, or fails once its ``backoffLimit`` is spent (controller/job/status/backoff.py). The
values of ``mxjob_controller_job_progress_deadline_exceeded_total{state}``."""


@dataclass(frozen=True)
class JobGaugeValues:
    """What the leader's job gauges show of the cached jobs at one scrape
    (``controller.job.tally.job_gauges``)."""

    by_state: Mapping[tuple[str, str], int]
    """(namespace, state) → jobs, every state of :data:`JOB_STATES` for each namespace."""
    progress: Mapping[tuple[str, str], int]
    """(namespace, name) → percent done, of the unfinished jobs that report it."""


@dataclass(frozen=True)
class JobTally:
    """What one reconcile's written status adds to the job metrics."""

    namespace: str
    created: bool = False
    ended: str | None = None
    """``Succeeded`` or ``Failed`` when the job finished in this reconcile."""
    started_after: float | None = None
    """Seconds from creation to the first Running condition, when it was set now."""
    ended_after: float | None = None
    """Seconds from creation to the end, when the job finished now."""
    restarts: dict[str, int] = field(default_factory=dict)
    """New restarts by exit-code class."""
    progress_deadline: str | None = None
    """One of :data:`DEADLINE_STATES` when the job exceeded its progress deadline in this
    reconcile: the state the deadline put the job in."""
