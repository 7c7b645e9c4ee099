"""Pods that cannot start (an image that does not pull, a missing Secret): said at once, fatal
after the pod start timeout.

The kubelet keeps such a pod Pending forever, so without a limit the job would wait forever.
Nothing ran, so nothing counts against ``backoffLimit``; a cause fixed in time (the Secret
created) lets the job go on. The timeout is the controller's ``--pod-start-timeout`` unless the
job's own annotation sets it (shared.constants.POD_START_TIMEOUT_ANNOTATION); 0 never fails.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from controller.job.observed import PodView
from controller.job.status.aftermath import finish
from controller.job.status.outcome import POD_START_TIMEOUT, EventSpec, Outcome
from controller.job.status.sync import Sync, sooner
from shared.apitime import parse_time
from shared.conditions import ConditionType, get_condition

DEFAULT_POD_START_TIMEOUT: Final = 600.0
"""Seconds a pod may be unable to start before its job fails (``--pod-start-timeout``)."""


@dataclass(frozen=True)
class Unstartable:
    """Pods of the job that cannot start: the first of them, what holds it, and for how long."""

    first: PodView
    what: str
    """``pod … cannot start its container …: <reason>: <message>``."""
    others: int
    trying: float
    """Seconds since the first of them was made."""


def find_unstartable(sync: Sync) -> Unstartable | None:
    """The job's pods that cannot start, the one trying longest first; None when all can."""
    stuck = [v for v in sync.by_slot.values() if v and v.active and v.start_problem]
    if not stuck:
        return None
    first = min(stuck, key=lambda v: v.created_at or sync.stamp)
    problem = first.start_problem
    assert problem is not None
    what = f"pod {first.name} cannot start its container {problem.container}: {problem.reason}" + (
        f": {problem.message}" if problem.message else ""
    )
    trying = (sync.now - (parse_time(first.created_at) or sync.now)).total_seconds()
    return Unstartable(first=first, what=what, others=len(stuck) - 1, trying=trying)


def timed_out(sync: Sync, found: Unstartable) -> bool:
    """A pod has been unable to start for the pod start timeout (0: never)."""
    timeout = sync.pod_start_timeout
    return timeout > 0 and found.trying >= timeout


def _others(found: Unstartable) -> str:
    return f" ({found.others} more pod(s) cannot start)" if found.others else ""


def fail_unstartable(sync: Sync, found: Unstartable) -> Outcome:
    """The job fails: a pod could not start for the pod start timeout. Nothing ran, so
    nothing counted against ``backoffLimit``."""
    problem = found.first.start_problem
    assert problem is not None
    message = (
        f"MXJob {sync.job.name} has failed because {found.what}{_others(found)}; it has tried "
        f"for {found.trying:.0f} s, the pod start timeout is {sync.pod_start_timeout:g} s."
    )
    sync.events.append(EventSpec("Warning", problem.reason, found.what))
    return finish(sync, ConditionType.FAILED, POD_START_TIMEOUT, message)


def say_unstartable(sync: Sync, found: Unstartable | None) -> None:
    """Said at once: the Running condition's reason and an Event, and a timer for the timeout;
    a fixed cause (the Secret created) lets the job go on."""
    if found is None:
        return
    problem = found.first.start_problem
    assert problem is not None
    message = f"MXJob {sync.job.name} is not running: {found.what}{_others(found)}."
    running = get_condition(sync.status.conditions, ConditionType.RUNNING)
    if running is None or running.get("message") != message:
        sync.status.force_condition(
            ConditionType.RUNNING, status=False, reason=problem.reason, message=message,
            now=sync.stamp,
        )  # fmt: skip
        sync.events.append(EventSpec("Warning", problem.reason, found.what))
    if sync.pod_start_timeout > 0:
        sync.requeue_after = sooner(sync.requeue_after, sync.pod_start_timeout - found.trying)
