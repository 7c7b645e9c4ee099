"""Carries out a reconcile's plan (controller/job/plan.py) against the API server.

Every write a reconcile makes for a job's pods and Services is here: the tracking finalizer
removed from the pods whose end status counts (controller/job/tracking.py), deletions, Services
adopted, then creations. Each create and delete is recorded in the expectations first, so that
a cache that has not yet seen it never causes a duplicate; a failed write is collected, the rest
go on, and the reconcile raises the first error afterwards (the job is retried with back-off).
The integrations prepare and decorate pods on the way, or refresh what they made for them when
no pod is created (controller/job/hooks.py).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from controller.job.desired import Slot, build_pod, build_service, job_labels
from controller.job.hooks import Integration, combined
from controller.job.memory import JobMemory
from controller.job.ownership import controller_uid
from controller.job.plan import Obj, Plan, object_name
from controller.job.status import Outcome
from controller.job.tracking import release_patch
from controller.job.view import MXJobView
from controller.runtime import events as ev
from controller.runtime.client import (
    JSON_PATCH,
    MERGE_PATCH,
    AlreadyExists,
    Conflict,
    Invalid,
    KubeClient,
    NotFound,
    pods_path,
    services_path,
)
from controller.runtime.events import EventRecorder
from controller.runtime.expectations import Expectations, Kind
from controller.runtime.failpoints import PODS_DELETED, PODS_HALF_CREATED, Failpoints
from shared.spec import as_mapping

log = logging.getLogger(__name__)


class NameConflictError(Exception):
    """A pod or Service name the job needs is taken by an object this job does not own."""


def _uid(obj: Mapping[str, Any]) -> str:
    return str(as_mapping(obj.get("metadata")).get("uid", ""))


def _resource_version(obj: Mapping[str, Any]) -> str:
    return str(as_mapping(obj.get("metadata")).get("resourceVersion", ""))


def _where(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = as_mapping(obj.get("metadata"))
    return str(meta.get("namespace")), str(meta.get("name"))


class JobWriter:
    """The writes of one job's reconcile (see the module docstring)."""

    def __init__(
        self,
        client: KubeClient,
        *,
        expectations: Expectations,
        recorder: EventRecorder,
        memory: JobMemory,
        integrations: Sequence[Integration],
        failpoints: Failpoints,
    ) -> None:
        self.client = client
        self.failpoints = failpoints
        self.expectations = expectations
        self.recorder = recorder
        self.memory = memory
        self.integrations = integrations

    # -- tracking finalizers --------------------------------------------------------------------
    def release_finalizers(
        self, key: str, pods: Sequence[Obj], errors: list[Exception], *, orphans: bool = False
    ) -> list[str]:
        """Remove the tracking finalizer from ``pods`` (one guarded JSON patch each).

        A pod released earlier whose cached version has not changed since is skipped: the
        cache has not caught up with our own PATCH yet.
        """
        slot = f"{key}#orphans" if orphans else key
        before = self.memory.released(slot)
        memory = {
            _uid(p): _resource_version(p)
            for p in pods
            if before.get(_uid(p)) == _resource_version(p)
        }
        released: list[str] = []
        for pod in pods:
            if _uid(pod) in memory:
                continue
            if self.remove_finalizer(pod, errors):
                memory[_uid(pod)] = _resource_version(pod)
                released.append(object_name(pod))
        self.memory.set_released(slot, memory)
        return released

    def remove_finalizer(self, pod: Obj, errors: list[Exception]) -> bool:
        """One guarded PATCH; True when it was sent and applied (or nothing was left to do)."""
        patch = release_patch(pod)
        if patch is None:
            return True
        namespace, name = _where(pod)
        try:
            self.client.request(
                "PATCH", pods_path(namespace, name), body=patch, content_type=JSON_PATCH
            )
        except NotFound:
            return True  # gone already
        except Invalid:
            return False  # a failed test: the cache is stale, the next event brings the pod
        except Exception as error:
            errors.append(error)
            return False
        return True

    # -- the plan -------------------------------------------------------------------------------
    def carry_out(self, job: MXJobView, plan: Plan, outcome: Outcome) -> None:
        """Release, delete, adopt, then create (see the module docstring); Events summarise."""
        key, errors = job.key, list[Exception]()
        self.release_finalizers(key, plan.release_pods, errors)
        deleted_pods = self._delete(key, "pods", plan.delete_pods, errors)
        if outcome.recreate and deleted_pods:
            self.failpoints.reach(PODS_DELETED)
        deleted_services = self._delete(key, "services", plan.delete_services, errors)
        self._patch_services(plan.patch_services, errors)
        created_pods = []
        if plan.create_pods:
            if self._prepare_pods(job, errors):
                created_pods = self._create_pods(
                    job, plan.create_pods, errors, attempt=outcome.attempt
                )
        elif not (outcome.finished or outcome.suspended):
            for integration in self.integrations:
                errors.extend(integration.refresh(job))
        created_services = self._create_services(job, plan.create_services, errors)
        for names, reason, verb, kind in (
            (created_pods, ev.SUCCESSFUL_CREATE_POD, "Created", "pod"),
            (created_services, ev.SUCCESSFUL_CREATE_SERVICE, "Created", "service"),
            (deleted_pods, ev.SUCCESSFUL_DELETE_POD, "Deleted", "pod"),
            (deleted_services, ev.SUCCESSFUL_DELETE_SERVICE, "Deleted", "service"),
        ):
            if names:
                self.recorder.record(job.raw, "Normal", reason, ev.summarize(verb, kind, names))
        if errors:
            raise errors[0]

    def _prepare_pods(self, job: MXJobView, errors: list[Exception]) -> bool:
        """Every integration makes what the pods need first (each one is asked, even after one
        held the pods back); any may hold them back, and their failed writes join the
        reconcile's."""
        labels = job_labels(job)
        prepared = combined([i.prepare_pods(job, labels=labels) for i in self.integrations])
        errors.extend(prepared.errors)
        return prepared.ready

    def _delete(
        self, key: str, kind: Kind, objects: Sequence[Obj], errors: list[Exception]
    ) -> list[str]:
        if not objects:
            return []
        self.expectations.expect_deletions(key, kind, [_uid(o) for o in objects])
        done: list[str] = []
        for obj in objects:
            namespace, name = _where(obj)
            path = pods_path(namespace, name) if kind == "pods" else services_path(namespace, name)
            try:
                if kind == "pods" and release_patch(obj) is not None:
                    # Nothing waits for a pod the controller deletes itself: its end is no
                    # replica's own (the restart it stands for is already in status).
                    released: list[Exception] = []
                    self.remove_finalizer(obj, released)
                    if released:
                        raise released[0]
                self.client.request("DELETE", path, body={"preconditions": {"uid": _uid(obj)}})
                done.append(name)
            except (NotFound, Conflict):
                self.expectations.deletion_observed(key, kind, _uid(obj))
            except Exception as error:
                self.expectations.deletion_observed(key, kind, _uid(obj))
                errors.append(error)
        return done

    def _patch_services(self, patches: Sequence[tuple[Obj, Obj]], errors: list[Exception]) -> None:
        for service, patch in patches:
            namespace, name = _where(service)
            body = {**patch, "metadata": {**patch.get("metadata", {}), "uid": _uid(service)}}
            try:
                self.client.request(
                    "PATCH", services_path(namespace, name), body=body, content_type=MERGE_PATCH
                )
                log.info(
                    "adopted Service brought to this operator's shape",
                    extra={"fields": {"namespace": namespace, "name": name, "kind": "Service"}},
                )
            except (NotFound, Conflict):
                pass
            except Exception as error:
                errors.append(error)

    def _create(self, job: MXJobView, kind: Kind, body: Obj, errors: list[Exception]) -> bool:
        namespace, name = _where(body)
        path = pods_path(namespace) if kind == "pods" else services_path(namespace)
        try:
            self.client.request("POST", path, body=body)
            return True
        except AlreadyExists:
            self.expectations.creation_observed(job.key, kind, name)
            self._name_taken(job, kind, namespace, name, errors)
            return False
        except Exception as error:
            self.expectations.creation_observed(job.key, kind, name)
            reason = ev.FAILED_CREATE_POD if kind == "pods" else ev.FAILED_CREATE_SERVICE
            self.recorder.record(job.raw, "Warning", reason, f"Error creating {name}: {error}")
            errors.append(error)
            return False

    def _name_taken(
        self, job: MXJobView, kind: Kind, namespace: str, name: str, errors: list[Exception]
    ) -> None:
        """A create found the name taken: ours (the cache will show it), or a conflict."""
        single = pods_path(namespace, name) if kind == "pods" else services_path(namespace, name)
        try:
            existing = self.client.request("GET", single)
        except NotFound:
            errors.append(Conflict(409, "Conflict", f"{kind} {name} vanished; retrying"))
            return
        if controller_uid(existing) == job.uid:
            return
        message = (
            f"{kind[:-1].capitalize()} {namespace}/{name} already exists and is not "
            "controlled by this MXJob; rename or delete it."
        )
        self.recorder.record(job.raw, "Warning", ev.NAME_CONFLICT, message)
        errors.append(NameConflictError(message))

    def _create_pods(
        self,
        job: MXJobView,
        wanted: Sequence[Slot],
        errors: list[Exception],
        *,
        attempt: int,
    ) -> list[str]:
        self.expectations.expect_creations(job.key, "pods", [slot.name for slot in wanted])
        created = []
        for slot in wanted:
            body = build_pod(job, slot, attempt=attempt)
            replica = job.replica(slot.replica_type.value)
            if replica is not None:
                for integration in self.integrations:
                    integration.decorate_pod(job, body, replica=replica)
            if self._create(job, "pods", body, errors):
                created.append(slot.name)
                if attempt > 0 and len(created) == 1 < len(wanted):
                    self.failpoints.reach(PODS_HALF_CREATED)
        return created

    def _create_services(
        self, job: MXJobView, wanted: Sequence[Slot], errors: list[Exception]
    ) -> list[str]:
        if not wanted:
            return []
        self.expectations.expect_creations(job.key, "services", [slot.name for slot in wanted])
        return [
            slot.name
            for slot in wanted
            if self._create(job, "services", build_service(job, slot), errors)
        ]
