"""Kueue's Workload route as an :class:`~controller.job.hooks.Integration`: the reconciler's
two points where Kueue has a say (controller/job/hooks.py).

Before a job's pods are looked at, a queued job's Workload takes its next step
(:class:`~controller.integrations.kueue.workload_sync.WorkloadSync`); when that step wrote the
job (suspended or started it), the reconcile stops and continues from the job's next version.
A job that is gone lets go of its Workloads, which Kueue's finalizer would otherwise keep. While
Kueue holds a job back, its Workload's word on why becomes the job's ``Pending`` condition.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from controller.integrations.kueue.workload import held_back
from controller.integrations.kueue.workload_sync import WorkloadSync
from controller.job.hooks import NoHooks
from controller.job.status.outcome import Wait
from controller.job.view import MXJobView


class KueueIntegration(NoHooks):
    """``--kueue-workloads``: this controller writes queued jobs' Workloads
    (controller/integrations/kueue/contract.py)."""

    name = "kueue"

    def __init__(self, sync: WorkloadSync) -> None:
        self.sync = sync

    def job_gone(self, namespace: str, name: str) -> None:
        self.sync.let_go(namespace, name)

    def takes_over(self, job: MXJobView) -> bool:
        """A queued job of ours, or one MultiKueue dispatches from this cluster (its Workload
        lives here while a worker runs it), takes one Workload step; True when the job was
        written. Another manager's job is that manager's to queue."""
        if not job.queueing.wants_workload:
            return False
        if not (job.ours or job.dispatched_by_multikueue):
            return False
        return self.sync.sync(job)

    def waits(self, job: MXJobView, pods: Sequence[Mapping[str, Any]]) -> Wait | None:
        """A suspended queued job waits for Kueue: its Workload says why (``QuotaReserved``
        False, or quota reserved and ``Admitted`` not yet True)."""
        if not (job.queueing.wants_workload and job.suspended):
            return None
        workloads = self.sync.owned_workloads(job)
        held = held_back(workloads[0]) if len(workloads) == 1 else None
        return Wait(*held) if held else None
