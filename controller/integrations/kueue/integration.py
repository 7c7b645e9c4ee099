"""Kueue's Workload route as an :class:`~controller.job.hooks.Integration`: the reconciler's
points where Kueue has a say (controller/job/hooks.py).

Before a job's pods are looked at, a queued job's Workload takes its next step
(:class:`~controller.integrations.kueue.workload_sync.WorkloadSync`); when that step wrote the
job (suspended or started it), the reconcile stops and continues from the job's next version.
A job that is gone lets go of its Workloads, which Kueue's finalizer would otherwise keep. While
Kueue holds a job back, its Workload's word on why becomes the job's ``Pending`` condition.

The Workloads are cached by the informer the route declares (:data:`WORKLOADS`), indexed by the
uid of their job; the RBAC it declares (:data:`RULES`) ships in
manifests/components/kueue-workloads/rbac.yaml and the chart's kueue-workloads-rbac.yaml.
"""

from __future__ import annotations

from typing import Final

from controller.integrations.kueue.workload import (
    JOB_UID_LABEL,
    KUEUE_GROUP,
    KUEUE_VERSION,
    held_back,
)
from controller.integrations.kueue.workload_sync import WorkloadSync, workload_owner_key
from controller.job.declaration import Declaration, Rule, Stores, Watch
from controller.job.hooks import NoHooks
from controller.job.pods import JobPods
from controller.job.status.outcome import Wait
from controller.job.view import MXJobView

WORKLOADS: Final = Watch(
    group=KUEUE_GROUP,
    version=KUEUE_VERSION,
    plural="workloads",
    index_label=JOB_UID_LABEL,
    job_of=workload_owner_key,
    queues_gone_jobs=True,
)
"""Every Workload, by its job's uid; a change queues the MXJob controlling it, gone or not (a
gone job's reconcile lets go of its Workloads)."""

RULES: Final = (
    # One Workload per queued job: created, replaced when the job no longer matches it, adopted
    # (a MultiKueue copy's prebuilt one), and Kueue's finalizer removed at the end.
    Rule(api_groups=(KUEUE_GROUP,), resources=("workloads",),
         verbs=("get", "list", "watch", "create", "update", "delete")),
    # Finished, PodsReady, reclaimable pods, quota given back: applies under Kueue's managers.
    Rule(api_groups=(KUEUE_GROUP,), resources=("workloads/status",), verbs=("patch",)),
    Rule(api_groups=(KUEUE_GROUP,), resources=("resourceflavors", "workloadpriorityclasses"),
         verbs=("get",)),
    # Starting and stopping a job rewrites runPolicy.suspend and its pod templates.
    Rule(api_groups=("kubeflow.org",), resources=("mxjobs",), verbs=("update",)),
    # A Workload's priority from its pods' PriorityClass, or the cluster's default one.
    Rule(api_groups=("scheduling.k8s.io",), resources=("priorityclasses",),
         verbs=("get", "list")),
)  # fmt: skip
"""What controller/integrations/kueue/workload_sync.py sends."""


class KueueIntegration(NoHooks):
    """``--kueue-workloads``: this controller writes queued jobs' Workloads
    (controller/integrations/kueue/contract.py)."""

    name = "kueue"

    def __init__(self, sync: WorkloadSync) -> None:
        self.sync = sync

    def declaration(self) -> Declaration:
        return Declaration(watches=(WORKLOADS,), rules=RULES)

    def bind(self, stores: Stores) -> None:
        self.sync.workloads = stores[WORKLOADS.name]

    def job_gone(self, namespace: str, name: str, *, uid: str | None) -> None:
        self.sync.let_go(namespace, name, uid=uid)

    def takes_over(self, job: MXJobView) -> bool:
        """A queued job of ours, or one MultiKueue dispatches from this cluster (its Workload
        lives here while a worker runs it), takes one Workload step; True when the job was
        written. Another manager's job is that manager's to queue."""
        if not job.queueing.wants_workload:
            return False
        if not (job.ours or job.dispatched_by_multikueue):
            return False
        return self.sync.sync(job)

    def waits(self, job: MXJobView, pods: JobPods) -> Wait | None:
        """A suspended queued job waits for Kueue: its Workload says why (``QuotaReserved``
        False, or quota reserved and ``Admitted`` not yet True)."""
        if not (job.queueing.wants_workload and job.suspended):
            return None
        workloads = self.sync.owned_workloads(job)
        held = held_back(workloads[0]) if len(workloads) == 1 else None
        return Wait(*held) if held else None
