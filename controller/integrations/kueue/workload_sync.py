"""Carries out controller/integrations/kueue/contract.py's steps against the API server: Kueue's
Workload route.

One :class:`WorkloadSync` per controller, used by the reconciler for every job with a
``kueue.x-k8s.io/queue-name`` label (or a MultiKueue copy's prebuilt Workload) when
``--kueue-workloads`` is on. Each reconcile makes at most one write for the job's Workload and
reports whether the job itself was written, so the reconcile stops there and continues from
the job's next version. The Workloads come from their own informer (never a LIST here);
ResourceFlavors and priority classes are read when a Workload is made or a job starts.

Starting and stopping a job rewrites its spec (``runPolicy.suspend`` and the pod templates):
a PUT of the cached job with its ``resourceVersion``, so a concurrent change is a conflict and
the reconcile is retried from the newer job, never lost.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
from collections.abc import Callable, Mapping
from typing import Any, Final

from controller.integrations.kueue.contract import Step, decide
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
    GROUP,
    JOB_UID_LABEL,
    VERSION,
    Priority,
    build_workload,
    owner_reference,
    priority_class,
)
from controller.job.tally import admission_wait_seconds
from controller.runtime.client import KubeClient, NotFound, mxjobs_path, resource_path
from controller.runtime.events import EventRecorder
from controller.runtime.informers import Store
from controller.runtime.metrics import Metrics
from shared.apitime import format_time
from shared.queueing import PRIORITY_CLASS_LABEL, prebuilt_workload
from shared.spec import as_mapping

log = logging.getLogger(__name__)

Obj = dict[str, Any]
APPLY_PATCH: Final = "application/apply-patch+yaml"


class KueueRouteError(RuntimeError):
    """The cluster cannot take the Workload route; the message says what to change."""


def workloads_path(
    namespace: str | None = None, name: str | None = None, *, status: bool = False
) -> str:
    return resource_path(
        group=GROUP, version=VERSION, plural="workloads", namespace=namespace, name=name,
        subresource="status" if status else None,
    )  # fmt: skip


def check_route(client: KubeClient) -> None:
    """Refuse to start where the route cannot work: no Kueue, or a Kueue of the v0.10 line,
    which queues MXJobs through its own integration (both at once would make two Workloads per
    job). Kueue ≥ v0.15 serves Workloads as ``kueue.x-k8s.io/v1beta2``; v0.10 only v1beta1."""
    try:
        client.request("GET", f"/apis/{GROUP}/{VERSION}")
    except NotFound:
        try:
            client.request("GET", f"/apis/{GROUP}/v1beta1")
        except NotFound:
            raise KueueRouteError(
                "--kueue-workloads: the cluster serves no Kueue Workload API "
                f"({GROUP}); install Kueue v0.15 or later with MXJob.v1.kubeflow.org in "
                "integrations.externalFrameworks (docs/queueing.md), or turn the flag off"
            ) from None
        raise KueueRouteError(
            f"--kueue-workloads: this cluster's Kueue serves only {GROUP}/v1beta1 Workloads, so "
            "it is older than v0.15; Kueue up to v0.10 queues MXJobs itself "
            "(integrations.frameworks: kubeflow.org/mxjob) and both routes at once would make two "
            "Workloads per job. Turn --kueue-workloads off for that Kueue, or upgrade Kueue "
            "(docs/queueing.md)"
        ) from None


def workload_owner_key(workload: Mapping[str, Any]) -> str | None:
    """``namespace/name`` of the MXJob controlling a Workload, None for anyone else's."""
    meta = as_mapping(workload.get("metadata"))
    for ref in meta.get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller") and ref.get("kind") == "MXJob":
            return f"{meta.get('namespace')}/{ref.get('name')}"
    return None


class WorkloadSync:
    """Kueue's job contract for MXJobs, one step per reconcile
    (controller/integrations/kueue/contract.py)."""

    def __init__(
        self,
        client: KubeClient,
        *,
        workloads: Store,
        jobs: Store,
        recorder: EventRecorder,
        metrics: Metrics,
        now: Callable[[], datetime.datetime],
    ) -> None:
        self.client = client
        self.workloads = workloads
        self.jobs = jobs
        self.recorder = recorder
        self.metrics = metrics
        self._now = now

    # -- reads ------------------------------------------------------------------------------------
    def owned(self, job: Mapping[str, Any]) -> list[Obj]:
        meta = as_mapping(job.get("metadata"))
        uid = str(meta.get("uid"))
        return [
            w
            for w in self.workloads.by_index(str(meta.get("namespace")), uid)
            if any(
                r.get("uid") == uid and r.get("controller")
                for r in w["metadata"].get("ownerReferences") or []
            )
        ]

    def _prebuilt(self, job: Mapping[str, Any]) -> Obj | None:
        name = prebuilt_workload(job)
        if not name:
            return None
        return self.workloads.get(f"{as_mapping(job.get('metadata')).get('namespace')}/{name}")

    # -- the step -------------------------------------------------------------------------------
    def sync(self, job: Obj) -> bool:
        """Make the job's next Workload step; True when the job itself was written."""
        step = decide(
            job,
            owned=self.owned(job),
            prebuilt=self._prebuilt(job),
            wait_for_pods_ready=True,
            now=format_time(self._now()),
        )
        if step.kind == "wait":
            return False
        log.debug("workload step %s", step.kind, extra={"fields": _fields(job)})
        handler = getattr(self, "_" + step.kind.replace("-", "_"))
        return bool(handler(job, step))

    def _create(self, job: Obj, step: Step) -> bool:
        workload = build_workload(job, priority=self._priority(job))
        namespace = str(workload["metadata"]["namespace"])
        written = self.client.request("POST", workloads_path(namespace), body=workload)
        self._wrote("create")
        self.workloads.write_through(written)
        self.recorder.record(
            job,
            "Normal",
            "CreatedWorkload",
            f"Created Workload: {namespace}/{workload['metadata']['name']}",
        )
        return False

    def _adopt(self, job: Obj, step: Step) -> bool:
        """A prebuilt Workload (MultiKueue's, in a worker cluster) gets the job as controller."""
        assert step.workload is not None
        workload = dict(step.workload)
        meta = dict(workload["metadata"])
        meta["ownerReferences"] = [*(meta.get("ownerReferences") or []), owner_reference(job)]
        uid = str(job["metadata"]["uid"])
        meta["labels"] = {**(meta.get("labels") or {}), JOB_UID_LABEL: uid}
        workload["metadata"] = meta
        self._put(workload)
        return False

    def _out_of_sync(self, job: Obj, step: Step) -> bool:
        assert step.workload is not None
        now = format_time(self._now())
        body = finished_apply(step.workload, reason="OutOfSync", message=step.message, now=now)
        self._apply(step.workload, body, manager=ADMISSION_MANAGER)
        return False

    def _replace(self, job: Obj, step: Step) -> bool:
        for workload in step.extra:
            self._delete(workload)
            name = workload["metadata"]["name"]
            self.recorder.record(
                job,
                "Normal",
                "DeletedWorkload",
                f"Deleted not matching Workload: {job['metadata']['namespace']}/{name}",
            )
        return False

    def _let_go(self, job: Obj, step: Step) -> bool:
        assert step.workload is not None
        self._remove_finalizer(step.workload)
        return False

    def _finish(self, job: Obj, step: Step) -> bool:
        assert step.workload is not None and step.body is not None
        self._apply(step.workload, step.body, manager=ADMISSION_MANAGER)
        name = step.workload["metadata"]["name"]
        self.recorder.record(
            job,
            "Normal",
            "FinishedWorkload",
            f"Workload '{job['metadata']['namespace']}/{name}' is declared finished",
        )
        return False

    def _reclaim(self, job: Obj, step: Step) -> bool:
        assert step.workload is not None and step.body is not None
        self._apply(step.workload, step.body, manager=RECLAIMABLE_MANAGER)
        return False

    def _pods_ready(self, job: Obj, step: Step) -> bool:
        assert step.workload is not None and step.body is not None
        self._apply(step.workload, step.body, manager=PODS_READY_MANAGER)
        return False

    def _release(self, job: Obj, step: Step) -> bool:
        assert step.workload is not None and step.body is not None
        self._apply(step.workload, step.body, manager=ADMISSION_MANAGER)
        return False

    def _stop(self, job: Obj, step: Step) -> bool:
        if as_mapping(as_mapping(job.get("spec")).get("runPolicy")).get("suspend") is True:
            return False
        self._put_job(stopped(job, step.workload))
        self.recorder.record(job, "Normal", "Stopped", step.message[:1024])
        return True

    def _start(self, job: Obj, step: Step) -> bool:
        assert step.workload is not None
        workload = step.workload
        flavors = self._flavors(workload)
        try:
            running = started(job, admitted_infos(workload, flavors))
        except PodSetConflictError as error:
            now = format_time(self._now())
            body = finished_apply(workload, reason="FailedToStart", message=str(error), now=now)
            self._apply(workload, body, manager=ADMISSION_MANAGER)
            self.recorder.record(job, "Warning", "FailedToStart", str(error)[:1024])
            return False
        self._put_job(running)
        namespace = str(as_mapping(job.get("metadata")).get("namespace") or "")
        self.metrics.job_admitted(namespace, admission_wait_seconds(workload, self._now()))
        queue = as_mapping(as_mapping(workload.get("status")).get("admission")).get("clusterQueue")
        self.recorder.record(job, "Normal", "Started", f"Admitted by clusterQueue {queue}")
        return True

    def _queue_name(self, job: Obj, step: Step) -> bool:
        """The suspended job moved to another LocalQueue: so does its pending Workload."""
        assert step.workload is not None
        workload = {**step.workload, "spec": {**step.workload["spec"], "queueName": step.message}}
        self._put(workload)
        return False

    # -- writes ---------------------------------------------------------------------------------
    def _wrote(self, verb: str, resource: str = "workloads") -> None:
        self.metrics.api_writes.labels(verb=verb, resource=resource).inc()

    def _put(self, workload: Obj) -> None:
        meta = workload["metadata"]
        path = workloads_path(str(meta["namespace"]), str(meta["name"]))
        written = self.client.request("PUT", path, body=workload)
        self._wrote("update")
        self.workloads.write_through(written)

    def _apply(self, workload: Mapping[str, Any], body: Obj, *, manager: str) -> None:
        meta = as_mapping(workload.get("metadata"))
        path = workloads_path(str(meta.get("namespace")), str(meta.get("name")), status=True)
        written = self.client.request(
            "PATCH", path, body=body, content_type=APPLY_PATCH,
            query=[("fieldManager", manager), ("force", "true")],
        )  # fmt: skip
        self._wrote("patch", "workloads/status")
        if isinstance(written, dict):
            self.workloads.write_through(written)

    def _remove_finalizer(self, workload: Mapping[str, Any]) -> None:
        finalizers = workload["metadata"].get("finalizers") or []
        if FINALIZER not in finalizers:
            return
        updated = {
            **workload,
            "metadata": {
                **workload["metadata"],
                "finalizers": [f for f in finalizers if f != FINALIZER],
            },
        }
        with contextlib.suppress(NotFound):
            self._put(updated)

    def _delete(self, workload: Obj) -> None:
        meta = workload["metadata"]
        try:
            self._remove_finalizer(workload)
            self.client.request(
                "DELETE", workloads_path(str(meta["namespace"]), str(meta["name"])),
                body={"preconditions": {"uid": meta.get("uid")}},
            )  # fmt: skip
            self._wrote("delete")
        except NotFound:
            pass

    def _put_job(self, job: Obj) -> None:
        meta = job["metadata"]
        body = {k: v for k, v in job.items() if k != "status"}
        written = self.client.request(
            "PUT", mxjobs_path(str(meta["namespace"]), str(meta["name"])), body=body
        )
        self._wrote("update", "mxjobs")
        if isinstance(written, dict):
            self.jobs.write_through(written)

    def let_go(self, namespace: str, name: str) -> None:
        """The job is gone (or being deleted): its Workloads lose Kueue's finalizer, so the
        garbage collector deletes them with it and their quota is free."""
        for workload in self.workloads.objects():
            if workload_owner_key(workload) == f"{namespace}/{name}":
                self._remove_finalizer(workload)

    # -- lookups --------------------------------------------------------------------------------
    def _flavors(self, workload: Mapping[str, Any]) -> dict[str, Obj]:
        names = {
            str(flavor)
            for assignment in as_mapping(as_mapping(workload.get("status")).get("admission")).get(
                "podSetAssignments"
            )
            or []
            for flavor in as_mapping(assignment.get("flavors")).values()
        }
        return {
            name: self.client.request(
                "GET",
                resource_path(group=GROUP, version=VERSION, plural="resourceflavors", name=name),
            )
            for name in sorted(names)
        }

    def _priority(self, job: Mapping[str, Any]) -> Priority:
        """Kueue's ``ExtractPriority``: a WorkloadPriorityClass label wins, else the pods'
        PriorityClass; without either, the cluster's default PriorityClass, else 0."""
        labels = as_mapping(as_mapping(job.get("metadata")).get("labels"))
        workload_class = labels.get(PRIORITY_CLASS_LABEL)
        if isinstance(workload_class, str) and workload_class:
            found = self.client.request(
                "GET",
                resource_path(
                    group=GROUP,
                    version=VERSION,
                    plural="workloadpriorityclasses",
                    name=workload_class,
                ),
            )
            return Priority(
                int(found.get("value") or 0), GROUP, "WorkloadPriorityClass", workload_class
            )
        name = priority_class(job)
        if name:
            found = self.client.request(
                "GET",
                resource_path(
                    group="scheduling.k8s.io", version="v1", plural="priorityclasses", name=name
                ),
            )
            return Priority(
                int(found.get("value") or 0), "scheduling.k8s.io", "PriorityClass", name
            )
        listed = self.client.request(
            "GET", resource_path(group="scheduling.k8s.io", version="v1", plural="priorityclasses")
        )
        for item in listed.get("items") or []:
            if item.get("globalDefault"):
                return Priority(
                    int(item.get("value") or 0),
                    "scheduling.k8s.io",
                    "PriorityClass",
                    item["metadata"]["name"],
                )
        return Priority()


def _fields(job: Mapping[str, Any]) -> dict[str, Any]:
    meta = as_mapping(job.get("metadata"))
    return {"namespace": meta.get("namespace"), "name": meta.get("name")}
