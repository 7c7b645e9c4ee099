"""What reconcile creates and deletes for one job: a pure function of the job, its outcome and
the cache.

:func:`plan_actions` does no I/O; :class:`controller.job.reconciler.Reconciler` carries the plan
out. It sits beside :func:`controller.job.status.compute_status`: status decides what the job *is*,
the plan what must change in the cluster for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from controller.job.desired import Slot, build_service, service_adoption_patch
from controller.job.observed import PodView
from controller.job.pods import JobPod, JobPods
from controller.job.status import Outcome
from controller.job.tracking import to_release
from controller.job.view import MXJobView
from shared.constants import CleanPodPolicy
from shared.spec import as_mapping

Obj = dict[str, Any]


@dataclass
class Plan:
    """What to create and delete for one job (pure output of :func:`plan_actions`)."""

    create_pods: list[Slot] = field(default_factory=list)
    """Slots whose pod is missing."""
    create_services: list[Slot] = field(default_factory=list)
    delete_pods: list[Obj] = field(default_factory=list)
    delete_services: list[Obj] = field(default_factory=list)
    release_pods: list[Obj] = field(default_factory=list)
    """Pods whose end the new status counts: their tracking finalizer goes once it is written
    (pods deleted here lose it with the DELETE instead)."""
    patch_services: list[tuple[Obj, Obj]] = field(default_factory=list)
    """Services of a running job to bring to our shape (adopted ones), with the merge patch."""


def object_name(obj: Mapping[str, Any]) -> str:
    """``metadata.name`` ("" when absent)."""
    return str(as_mapping(obj.get("metadata")).get("name", ""))


def _terminating(obj: Mapping[str, Any]) -> bool:
    return bool(as_mapping(obj.get("metadata")).get("deletionTimestamp"))


def plan_actions(job: MXJobView, outcome: Outcome, pods: JobPods, services: Sequence[Obj]) -> Plan:
    """:func:`plan_objects`, plus the pods whose tracking finalizer goes (status counts them)."""
    plan = plan_objects(job, outcome, pods, services)
    deleting = frozenset(object_name(p) for p in plan.delete_pods)
    plan.release_pods = to_release(pods.raws, ends_counted=outcome.ends_counted, deleting=deleting)
    return plan


def plan_objects(job: MXJobView, outcome: Outcome, pods: JobPods, services: Sequence[Obj]) -> Plan:
    """The pods and Services to create and delete, from the job, the outcome and the cache
    (``pods``: the job's own, each observed once, controller/job/pods.py).

    - suspended: every pod and Service goes;
    - finished: cleanPodPolicy (All: every pod and Service; Running: the active pods; None:
      nothing), active pods only once their grace period is over (``Outcome.overdue``), and
      every active pod when the deadline passed. Services outlive their pods
      otherwise: a headless Service costs nothing, garbage collection removes it with the job,
      and not deleting it saves two API writes per replica (docs/explanation/performance.md
      counts writes per job);
    - otherwise: recreate what failed retryably, delete what the spec no longer has (scaling
      down removes the highest indices, since those are the ones beyond ``replicas``), create
      what is missing (the spec's slots as status matched them, ``Outcome.slots``). A pod still
      terminating keeps its slot until it is gone, and while a job restarts as a whole, no pod
      is made until every pod of the ended attempt is gone;
    - always: the pods of an ended attempt go.
    """
    live_pods = pods.live()
    live_services = [s for s in services if not _terminating(s)]
    if outcome.suspended:
        return Plan(delete_pods=[p.raw for p in live_pods], delete_services=live_services)
    if outcome.finished:
        plan = _plan_finished(job, outcome, live_pods, live_services)
    else:
        plan = _plan_running(job, outcome, pods, services)
    # Pods of an ended attempt go whatever the job's state (controller/job/recovery.py).
    stale = {view.name for view in outcome.stale}
    planned = {object_name(p) for p in plan.delete_pods}
    plan.delete_pods += [p.raw for p in live_pods if p.view.name in stale - planned]
    return plan


def _plan_finished(
    job: MXJobView, outcome: Outcome, live_pods: Sequence[JobPod], live_services: list[Obj]
) -> Plan:
    """Active pods go only when overdue (their grace period after finishing is over, or the
    deadline passed); under All, finished pods go at once and Services once settled."""
    policy = job.run_policy.clean_pod_policy
    delete_pods = [p.raw for p in live_pods if _cleaned_now(p.view, outcome, policy)]
    settled = policy is CleanPodPolicy.ALL and outcome.settled
    return Plan(delete_pods=delete_pods, delete_services=live_services if settled else [])


def _cleaned_now(view: PodView, outcome: Outcome, policy: CleanPodPolicy) -> bool:
    """Whether a live pod of a finished job is deleted now: one still running (or lingering on
    its sidecars) once overdue, one that has ended only under All."""
    if view.active or view.lingering:
        return view.name in outcome.overdue
    return policy is CleanPodPolicy.ALL


def _plan_running(
    job: MXJobView,
    outcome: Outcome,
    pods: JobPods,
    services: Sequence[Obj],
) -> Plan:
    """Recreate, delete what the spec no longer has, adopt Services, create what is missing."""
    plan = Plan()
    slots = outcome.slots
    wanted = {slot.name: slot for slot in slots}
    recreate = {view.name for view in outcome.recreate}
    for pod in pods.live():
        if pod.view.name not in wanted or pod.view.name in recreate:
            plan.delete_pods.append(pod.raw)
    for service in (s for s in services if not _terminating(s)):
        slot = wanted.get(object_name(service))
        if slot is None:
            plan.delete_services.append(service)
            continue
        patch = service_adoption_patch(service, build_service(job, slot))
        if patch is not None:
            plan.patch_services.append((service, patch))
    pod_names = pods.names()
    service_names = {object_name(s) for s in services}
    for slot in slots:
        if slot.name not in pod_names and not outcome.hold_creations:
            plan.create_pods.append(slot)
        if slot.name not in service_names:
            plan.create_services.append(slot)
    return plan
