"""Carries out controller/integrations/kueue/contract.py's steps against the API server: Kueue's
Workload route.

One :class:`WorkloadSync` per controller, used (through
:class:`controller.integrations.kueue.integration.KueueIntegration`) for every job with a
``kueue.x-k8s.io/queue-name`` label (or a MultiKueue copy's prebuilt Workload) when
``--kueue-workloads`` is on. Each reconcile makes at most one write for the job's Workload and
reports whether the job itself was written, so the reconcile stops there and continues from
the job's next version. The Workloads come from their own informer (never a LIST here);
ResourceFlavors and priority classes are read when a Workload is made or a job starts.

Starting and stopping a job rewrites its spec (``runPolicy.suspend`` and the pod templates):
a PUT of the stored job (``MXJobView.raw``) with its ``resourceVersion``, so a concurrent change
is a conflict and the reconcile is retried from the newer job, never lost.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
from collections.abc import Callable, Mapping
from typing import Any, Final

from controller.integrations.kueue.contract import Step, StepKind, decide
from controller.integrations.kueue.podsets import (
    PodSetConflictError,
    admitted_infos,
    started,
    stopped,
)
from controller.integrations.kueue.status_applies import (
    ADMISSION_MANAGER,
    PODS_READY_MANAGER,
    RECLAIMABLE_MANAGER,
    finished_apply,
)
from controller.integrations.kueue.workload import (
    FINALIZER,
    JOB_UID_LABEL,
    KUEUE_GROUP,
    KUEUE_VERSION,
    Priority,
    build_kueue_workload,
    priority_class,
)
from controller.job.job_writes import MXJobWrites
from controller.job.ownership import controller_uid, controlling_job, owner_reference
from controller.job.tally import admission_wait_seconds
from controller.job.view import MXJobView
from controller.runtime.client import APPLY_PATCH, KubeClient, NotFound, resource_path
from controller.runtime.events import EventRecorder
from controller.runtime.informers import Store
from controller.runtime.metrics import Metrics
from shared.apitime import format_time
from shared.queueing import PRIORITY_CLASS_LABEL
from shared.spec import as_mapping

log = logging.getLogger(__name__)

Obj = dict[str, Any]
StepHandler = Callable[[MXJobView, Step], bool]
"""Carries out one kind of step; True when the job itself was written."""


class KueueRouteError(RuntimeError):
    """The cluster cannot take the Workload route; the message says what to change."""


def kueue_workloads_path(
    namespace: str | None = None, name: str | None = None, *, status: bool = False
) -> str:
    return resource_path(
        group=KUEUE_GROUP, version=KUEUE_VERSION, plural="workloads", namespace=namespace,
        name=name, subresource="status" if status else None,
    )  # fmt: skip


def verify_kueue_route(client: KubeClient) -> None:
    """Refuse to start where the route cannot work: no Kueue, or a Kueue of the v0.10 line,
    which queues MXJobs through its own integration (both at once would make two Workloads per
    job). Kueue ≥ v0.15 serves Workloads as ``kueue.x-k8s.io/v1beta2``; v0.10 only v1beta1."""
    try:
        client.request("GET", f"/apis/{KUEUE_GROUP}/{KUEUE_VERSION}")
    except NotFound:
        try:
            client.request("GET", f"/apis/{KUEUE_GROUP}/v1beta1")
        except NotFound:
            raise KueueRouteError(
                "--kueue-workloads: the cluster serves no Kueue Workload API "
                f"({KUEUE_GROUP}); install Kueue v0.15 or later with MXJob.v1.kubeflow.org in "
                "integrations.externalFrameworks (docs/how-to/queue-with-kueue.md), or turn the "
                "flag off"
            ) from None
        raise KueueRouteError(
            f"--kueue-workloads: this cluster's Kueue serves only {KUEUE_GROUP}/v1beta1 "
            "Workloads, so it is older than v0.15; Kueue up to v0.10 queues MXJobs itself "
            "(integrations.frameworks: kubeflow.org/mxjob) and both routes at once would make two "
            "Workloads per job. Turn --kueue-workloads off for that Kueue, or upgrade Kueue "
            "(docs/how-to/queue-with-kueue.md)"
        ) from None


def workload_owner_key(workload: Mapping[str, Any]) -> str | None:
    """``namespace/name`` of the MXJob controlling a Workload, None for anyone else's."""
    return controlling_job(workload)


class WorkloadSync:
    """Kueue's job contract for MXJobs, one step per reconcile
    (controller/integrations/kueue/contract.py)."""

    def __init__(
        self,
        client: KubeClient,
        *,
        workloads: Store,
        job_writes: MXJobWrites,
        recorder: EventRecorder,
        metrics: Metrics,
        now: Callable[[], datetime.datetime],
    ) -> None:
        self.client = client
        self.workloads = workloads
        self.job_writes = job_writes
        """Starting and stopping a job is a write of the job: the reconciler's own writer's."""
        self.recorder = recorder
        self.metrics = metrics
        self._now = now
        self.handlers: Final[dict[StepKind, StepHandler]] = {
            "create": self._create_workload,
            "adopt": self._adopt_prebuilt,
            "out-of-sync": self._finish_out_of_sync,
            "replace": self._delete_mismatched,
            "let-go": self._let_go_of_workload,
            "finish": self._finish_workload,
            "reclaim": self._apply_reclaimable,
            "pods-ready": self._apply_pods_ready,
            "stop": self._stop_job,
            "unreserve": self._unreserve_quota,
            "start": self._start_job,
            "queue-name": self._follow_queue,
        }
        """Every step kind but ``wait`` (nothing to write) → the method that carries it out."""

    # -- reads ------------------------------------------------------------------------------------
    def owned_workloads(self, job: MXJobView) -> list[Obj]:
        """The cached Workloads whose controller is the job."""
        return self._controlled_by(job.namespace, job.uid)

    def _controlled_by(self, namespace: str, uid: str) -> list[Obj]:
        """The cached Workloads the job of ``uid`` controls, found by its uid label."""
        return [w for w in self.workloads.by_index(namespace, uid) if controller_uid(w) == uid]

    def _prebuilt(self, job: MXJobView) -> Obj | None:
        name = job.queueing.prebuilt_workload
        return self.workloads.get(f"{job.namespace}/{name}") if name else None

    # -- the step -------------------------------------------------------------------------------
    def sync(self, job: MXJobView) -> bool:
        """Make the job's next Workload step; True when the job itself was written."""
        step = decide(
            job,
            owned=self.owned_workloads(job),
            prebuilt=self._prebuilt(job),
            wait_for_pods_ready=True,
            now=format_time(self._now()),
        )
        if step.kind == "wait":
            return False
        log.debug(
            "workload step %s",
            step.kind,
            extra={"fields": {"namespace": job.namespace, "name": job.name}},
        )
        return self.handlers[step.kind](job, step)

    def _create_workload(self, job: MXJobView, step: Step) -> bool:
        workload = build_kueue_workload(job, priority=self._priority(job))
        written = self.client.request("POST", kueue_workloads_path(job.namespace), body=workload)
        self.workloads.write_through(written)
        name = workload["metadata"]["name"]
        message = f"Created Workload: {job.namespace}/{name}"
        self.recorder.record(job.raw, "Normal", "CreatedWorkload", message)
        return False

    def _adopt_prebuilt(self, job: MXJobView, step: Step) -> bool:
        """A prebuilt Workload (MultiKueue's, in a worker cluster) gets the job as controller."""
        assert step.workload is not None
        workload = dict(step.workload)
        meta = dict(workload["metadata"])
        meta["ownerReferences"] = [*(meta.get("ownerReferences") or []), owner_reference(job)]
        meta["labels"] = {**(meta.get("labels") or {}), JOB_UID_LABEL: job.uid}
        workload["metadata"] = meta
        self._put_workload(workload)
        return False

    def _finish_out_of_sync(self, job: MXJobView, step: Step) -> bool:
        assert step.workload is not None
        now = format_time(self._now())
        body = finished_apply(step.workload, reason="OutOfSync", message=step.message, now=now)
        self._apply_status(step.workload, body, manager=ADMISSION_MANAGER)
        return False

    def _delete_mismatched(self, job: MXJobView, step: Step) -> bool:
        for workload in step.extra:
            self._delete_workload(workload)
            message = (
                f"Deleted not matching Workload: {job.namespace}/{workload['metadata']['name']}"
            )
            self.recorder.record(job.raw, "Normal", "DeletedWorkload", message)
        return False

    def _let_go_of_workload(self, job: MXJobView, step: Step) -> bool:
        assert step.workload is not None
        self._remove_kueue_finalizer(step.workload)
        return False

    def _finish_workload(self, job: MXJobView, step: Step) -> bool:
        assert step.workload is not None and step.body is not None
        self._apply_status(step.workload, step.body, manager=ADMISSION_MANAGER)
        name = step.workload["metadata"]["name"]
        message = f"Workload '{job.namespace}/{name}' is declared finished"
        self.recorder.record(job.raw, "Normal", "FinishedWorkload", message)
        return False

    def _apply_reclaimable(self, job: MXJobView, step: Step) -> bool:
        assert step.workload is not None and step.body is not None
        self._apply_status(step.workload, step.body, manager=RECLAIMABLE_MANAGER)
        return False

    def _apply_pods_ready(self, job: MXJobView, step: Step) -> bool:
        assert step.workload is not None and step.body is not None
        self._apply_status(step.workload, step.body, manager=PODS_READY_MANAGER)
        return False

    def _unreserve_quota(self, job: MXJobView, step: Step) -> bool:
        assert step.workload is not None and step.body is not None
        self._apply_status(step.workload, step.body, manager=ADMISSION_MANAGER)
        return False

    def _stop_job(self, job: MXJobView, step: Step) -> bool:
        if job.suspended:
            return False
        self._put_job(stopped(job, step.workload))
        self.recorder.record(job.raw, "Normal", "Stopped", step.message[:1024])
        return True

    def _start_job(self, job: MXJobView, step: Step) -> bool:
        assert step.workload is not None
        workload = step.workload
        try:
            running = started(job, admitted_infos(workload, self._flavors(workload)))
        except PodSetConflictError as error:
            now = format_time(self._now())
            body = finished_apply(workload, reason="FailedToStart", message=str(error), now=now)
            self._apply_status(workload, body, manager=ADMISSION_MANAGER)
            self.recorder.record(job.raw, "Warning", "FailedToStart", str(error)[:1024])
            return False
        self._put_job(running)
        self.metrics.job_admitted(job.namespace, admission_wait_seconds(workload, self._now()))
        queue = as_mapping(as_mapping(workload.get("status")).get("admission")).get("clusterQueue")
        self.recorder.record(job.raw, "Normal", "Started", f"Admitted by clusterQueue {queue}")
        return True

    def _follow_queue(self, job: MXJobView, step: Step) -> bool:
        """The suspended job moved to another LocalQueue: so does its pending Workload."""
        assert step.workload is not None
        spec = {**step.workload["spec"], "queueName": step.queue_name}
        self._put_workload({**step.workload, "spec": spec})
        return False

    # -- writes ---------------------------------------------------------------------------------
    def _put_workload(self, workload: Obj) -> None:
        meta = workload["metadata"]
        path = kueue_workloads_path(str(meta["namespace"]), str(meta["name"]))
        self.workloads.write_through(self.client.request("PUT", path, body=workload))

    def _apply_status(self, workload: Mapping[str, Any], body: Obj, *, manager: str) -> None:
        meta = as_mapping(workload.get("metadata"))
        path = kueue_workloads_path(str(meta.get("namespace")), str(meta.get("name")), status=True)
        written = self.client.request(
            "PATCH", path, body=body, content_type=APPLY_PATCH,
            query=[("fieldManager", manager), ("force", "true")],
        )  # fmt: skip
        if isinstance(written, dict):
            self.workloads.write_through(written)

    def _remove_kueue_finalizer(self, workload: Mapping[str, Any]) -> None:
        finalizers = workload["metadata"].get("finalizers") or []
        if FINALIZER not in finalizers:
            return
        kept = [f for f in finalizers if f != FINALIZER]
        updated = {**workload, "metadata": {**workload["metadata"], "finalizers": kept}}
        with contextlib.suppress(NotFound):
            self._put_workload(updated)

    def _delete_workload(self, workload: Obj) -> None:
        meta = workload["metadata"]
        with contextlib.suppress(NotFound):
            self._remove_kueue_finalizer(workload)
            self.client.request(
                "DELETE", kueue_workloads_path(str(meta["namespace"]), str(meta["name"])),
                body={"preconditions": {"uid": meta.get("uid")}},
            )  # fmt: skip

    def _put_job(self, stored: Obj) -> None:
        """The stored job as started or stopped, through the one writer of MXJobs."""
        self.job_writes.spec(stored)

    def let_go(self, namespace: str, name: str, *, uid: str | None) -> None:
        """The job is gone (or being deleted): its Workloads lose Kueue's finalizer, so the
        garbage collector deletes them with it and their quota is free.

        They are the cached Workloads its uid indexes (every Workload this controller makes or
        adopts carries the uid label, :func:`~controller.integrations.kueue.workload.
        build_kueue_workload`) and that it controls. A job whose uid is unknown was never
        cached (controller/job/reconciler.py): every cached Workload is looked at for a
        controller reference of the job's name, the one way left to find them."""
        if uid:
            found = self._controlled_by(namespace, uid)
        else:
            key = f"{namespace}/{name}"
            found = [w for w in self.workloads.objects() if workload_owner_key(w) == key]
        for workload in found:
            self._remove_kueue_finalizer(workload)

    # -- lookups --------------------------------------------------------------------------------
    def _flavors(self, workload: Mapping[str, Any]) -> dict[str, Obj]:
        admission = as_mapping(as_mapping(workload.get("status")).get("admission"))
        names = {
            str(flavor)
            for assignment in admission.get("podSetAssignments") or []
            for flavor in as_mapping(assignment.get("flavors")).values()
        }
        return {
            name: self.client.request("GET", _kueue_path("resourceflavors", name))
            for name in sorted(names)
        }

    def _priority(self, job: MXJobView) -> Priority:
        """Kueue's ``ExtractPriority``: a WorkloadPriorityClass label wins, else the pods'
        PriorityClass; without either, the cluster's default PriorityClass, else 0."""
        workload_class = job.labels.get(PRIORITY_CLASS_LABEL)
        if workload_class:
            found = self.client.request(
                "GET", _kueue_path("workloadpriorityclasses", workload_class)
            )
            return Priority(
                int(found.get("value") or 0), KUEUE_GROUP, "WorkloadPriorityClass", workload_class
            )
        name = priority_class(job)
        if name:
            found = self.client.request("GET", _priority_classes_path(name))
            return Priority(
                int(found.get("value") or 0), "scheduling.k8s.io", "PriorityClass", name
            )
        for item in self.client.request("GET", _priority_classes_path()).get("items") or []:
            if item.get("globalDefault"):
                return Priority(
                    int(item.get("value") or 0),
                    "scheduling.k8s.io",
                    "PriorityClass",
                    item["metadata"]["name"],
                )
        return Priority()


def _kueue_path(plural: str, name: str) -> str:
    """A cluster-scoped Kueue object (ResourceFlavor, WorkloadPriorityClass)."""
    return resource_path(group=KUEUE_GROUP, version=KUEUE_VERSION, plural=plural, name=name)


def _priority_classes_path(name: str | None = None) -> str:
    return resource_path(
        group="scheduling.k8s.io", version="v1", plural="priorityclasses", name=name
    )
