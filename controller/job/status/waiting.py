"""Why a job waits, in its status: the ``Pending`` condition and its Event.

A job can sit without running for reasons that live outside it: Kueue has not admitted its
Workload (no quota, no topology placement, an inactive ClusterQueue), its gang does not fit yet,
or kube-scheduler finds no node for its pods. Each is written somewhere the user does not look
first (a Workload's ``QuotaReserved`` condition, an Event on a pod). While one holds, the job
carries ``Pending`` True with that reason and message, ``kubectl get mxjobs`` shows the reason
(the ``Waiting`` column) and ``kubectl describe`` an Event each time it changes; once the job
runs, finishes or waits for nothing, the condition goes.

What an integration knows (Kueue's Workload, the gang, an object of the name the job's pods
need that is not the job's own: ``ForeignObjectExists``, controller/integrations/children/
foreign.py) comes in as :class:`Wait` from the reconciler (controller/job/hooks.py,
``Integration.waits``) and wins over the pods' own ``Unschedulable``: it is the cause, the
scheduler's message its echo.
"""

from __future__ import annotations

from collections.abc import Sequence

from controller.job.observed import PodView
from controller.job.status.outcome import EventSpec, Wait
from controller.job.status.sync import Sync
from shared.conditions import ConditionType, Reason, get_condition

UNSCHEDULABLE = "Unschedulable"
"""The condition's reason while kube-scheduler finds no node for some of the job's pods."""


def unschedulable(views: Sequence[PodView]) -> Wait | None:
    """kube-scheduler's word on the job's pods that no node fits, None when every pod that
    waits to be placed is still being considered."""
    stuck = [v for v in views if v.unschedulable and not v.ended and not v.terminating]
    if not stuck:
        return None
    first = min(stuck, key=lambda view: view.name)
    return Wait(
        UNSCHEDULABLE,
        f"{len(stuck)} pod(s) unschedulable; {first.name}: {first.unschedulable}",
    )


def explain_wait(sync: Sync) -> None:
    """Set ``Pending`` from what holds the job (:attr:`Sync.held`, else its pods), or remove it
    when nothing does; an Event whenever the reason or message changes."""
    wait = None
    if not sync.job.finished:
        wait = sync.held or unschedulable(sync.views)
    existing = get_condition(sync.status.conditions, ConditionType.PENDING)
    if wait is None:
        if existing is not None:
            sync.status.drop_condition(ConditionType.PENDING)
        return
    if existing is None or (existing.get("reason"), existing.get("message")) != (
        wait.reason, wait.message,
    ):  # fmt: skip
        message = f"MXJob {sync.job.name} waits: {wait.reason}: {wait.message}"
        sync.events.append(EventSpec("Normal", Reason.PENDING, message))
    sync.condition(ConditionType.PENDING, status=True, reason=wait.reason, message=wait.message)
