"""Pods that cannot start (an image that does not pull, a missing Secret): said at once, fatal
after the pod start timeout.

The kubelet keeps such a pod Pending forever, so without a limit the job would wait forever.
Nothing ran, so nothing counts against ``backoffLimit``; a cause fixed in time (the Secret
created) lets the job go on. The timeout is the controller's ``--pod-start-timeout`` unless the
job's own annotation sets it (shared.constants.POD_START_TIMEOUT_ANNOTATION); 0 never fails.
"""

from __future__ import annotations

from typing import Final

from controller.job.status.aftermath import finish
from controller.job.status.outcome import POD_START_TIMEOUT, EventSpec, Outcome
from controller.job.status.sync import Sync, sooner
from shared.apitime import parse_time
from shared.conditions import ConditionType, get_condition, set_condition

DEFAULT_POD_START_TIMEOUT: Final = 600.0
"""Seconds a pod may be unable to start before its job fails (``--pod-start-timeout``)."""


def fail_unstartable(sync: Sync) -> Outcome | None:
    """Pods that cannot start: said at once (the Running condition's reason and an Event);
    the job fails once one of them has been trying for the pod start timeout. Nothing ran, so
    nothing counts against ``backoffLimit``; a fixed cause (the Secret created) lets it go on."""
    stuck = [v for v in sync.by_slot.values() if v and v.active and v.start_problem]
    if not stuck:
        return None
    first = min(stuck, key=lambda v: v.created_at or sync.stamp)
    problem = first.start_problem
    assert problem is not None
    what = f"pod {first.name} cannot start its container {problem.container}: {problem.reason}" + (
        f": {problem.message}" if problem.message else ""
    )
    others = f" ({len(stuck) - 1} more pod(s) cannot start)" if len(stuck) > 1 else ""
    trying = (sync.now - (parse_time(first.created_at) or sync.now)).total_seconds()
    timeout = sync.pod_start_timeout
    if timeout > 0 and trying >= timeout:
        message = (
            f"MXJob {sync.job.name} has failed because {what}{others}; it has tried for "
            f"{trying:.0f} s, the pod start timeout is {timeout:g} s."
        )
        sync.events.append(EventSpec("Warning", problem.reason, what))
        return finish(sync, ConditionType.FAILED, POD_START_TIMEOUT, message)
    before = sync.conditions
    running = get_condition(before, ConditionType.RUNNING)
    message = f"MXJob {sync.job.name} is not running: {what}{others}."
    sync.conditions = set_condition(
        before, type=ConditionType.RUNNING, status=False, reason=problem.reason, message=message,
        now=sync.stamp,
    ) if running is None or running.get("message") != message else before  # fmt: skip
    if sync.conditions is not before:
        sync.events.append(EventSpec("Warning", problem.reason, what))
    if timeout > 0:
        sync.requeue_after = sooner(sync.requeue_after, timeout - trying)
    return None
