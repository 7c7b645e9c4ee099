"""reconcile(key): read one job's world from the caches, compute, act on the difference.

Level-triggered and idempotent: nothing here remembers what the last event was. Each run reads
the MXJob, its pods and its Services from the informers' stores (never a LIST), asks
:func:`controller.job.status.compute_status` what the status should be and which failed pods to
recreate, asks :func:`controller.job.plan.plan_actions` (pure) which objects to create and delete,
and then:

1. writes status through the status subresource, only when it changed, with the cached
   ``resourceVersion`` as precondition (a conflict means a newer job exists: retry from it).
   Status goes first so that a restart is persisted before the pod it replaces is deleted;
2. removes the tracking finalizer from the pods whose end that status counts
   (controller/job/tracking.py): status first, so a crash in between loses no end;
3. deletes (removing the tracking finalizer just before), then creates, pods and Services,
   recording expectations first so that a cache that has not yet seen them never causes a
   duplicate;
4. records Events and counts metrics; returns when a timer must fire next.

Pods nobody will count (their MXJob is gone or being deleted, or they belong to an older MXJob
of the same name) lose the tracking finalizer at once, so that none stays stuck.

Defence in depth: a job stored while the webhooks were not registered is validated here with
the same ``shared`` rules (an invalid one fails with a clear reason instead of running) and
defaulted in memory (the env and ports the pods need), without writing the job back.
"""

from __future__ import annotations

import datetime
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from controller.integrations.budget.pdb import wants_budget
from controller.integrations.budget.pdb_writes import ensure_budget
from controller.integrations.gang.podgroup_writes import ensure_gang
from controller.integrations.gang.podgroups import GANG_WAITING, GangScheduler, gang_waiting
from controller.integrations.kueue.contract import wants_workload
from controller.integrations.kueue.workload_sync import WorkloadSync
from controller.job.desired import (
    Slot,
    build_pod,
    build_service,
    job_labels,
)
from controller.job.observed import observe
from controller.job.ownership import controller_uid
from controller.job.plan import Obj, Plan, object_name, plan_actions
from controller.job.status import (
    DEFAULT_POD_START_TIMEOUT,
    REMOVED_HISTORY,
    Outcome,
    compute_status,
)
from controller.job.tally import tally
from controller.job.tracking import JSON_PATCH, release_patch
from controller.runtime import events as ev
from controller.runtime.client import (
    MERGE_PATCH,
    AlreadyExists,
    Conflict,
    Invalid,
    KubeClient,
    NotFound,
    mxjobs_path,
    pods_path,
    services_path,
)
from controller.runtime.events import EventRecorder
from controller.runtime.expectations import Expectations, Kind
from controller.runtime.informers import Store
from controller.runtime.metrics import Metrics
from shared.apitime import format_time
from shared.constants import OPERATOR_NAME
from shared.defaults import apply_defaults
from shared.queueing import dispatched_by_multikueue, manager
from shared.spec import as_mapping
from shared.validation import replica_total_violations, validate

log = logging.getLogger(__name__)

MANAGED_BY_US: Final = frozenset({"", OPERATOR_NAME, f"kubeflow.org/{OPERATOR_NAME}"})
"""``managedBy`` values (shared.queueing.manager) that mean this operator; any other hands the
job to another controller (MultiKueue, say) and this one makes no pods for it."""


class NameConflictError(Exception):
    """A pod or Service name the job needs is taken by an object this job does not own."""


def job_key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


def _uid(obj: Mapping[str, Any]) -> str:
    return str(as_mapping(obj.get("metadata")).get("uid", ""))


def _resource_version(obj: Mapping[str, Any]) -> str:
    return str(as_mapping(obj.get("metadata")).get("resourceVersion", ""))


@dataclass
class _Defaulted:
    uid: str
    generation: object
    job: Obj
    violations: list[str]


class Reconciler:
    """Carries out one job's reconcile against the API server."""

    def __init__(
        self,
        client: KubeClient,
        *,
        jobs: Store,
        pods: Store,
        services: Store,
        expectations: Expectations,
        recorder: EventRecorder,
        metrics: Metrics,
        now: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(datetime.UTC),
        gang: GangScheduler = "none",
        pod_start_timeout: float = DEFAULT_POD_START_TIMEOUT,
    ) -> None:
        self.client = client
        self.gang = gang
        self.pod_start_timeout = pod_start_timeout
        """Seconds a pod may be unable to start before its job fails (``--pod-start-timeout``)."""
        """The gang scheduler the pods are written for (resolved at start-up, see manager)."""
        self.jobs = jobs
        self.pods = pods
        self.services = services
        self.expectations = expectations
        self.recorder = recorder
        self.metrics = metrics
        self._now = now
        self.workload_sync: WorkloadSync | None = None
        """Kueue's Workload route (controller/integrations/kueue/workload_sync.py), set when
        ``--kueue-workloads``."""
        self._lock = threading.Lock()
        self._carries: dict[str, tuple[str, dict[str, int]]] = {}
        self._defaulted: dict[str, _Defaulted] = {}
        self._released: dict[str, dict[str, str]] = {}
        """Per job: uid → resourceVersion of pods whose finalizer was removed, so that a
        reconcile running before the cache shows it does not send the same PATCH again."""

    def now(self) -> datetime.datetime:
        return self._now()

    # -- memory per job ---------------------------------------------------------------------------
    def forget(self, key: str) -> None:
        """The job is gone: drop what is remembered about it."""
        with self._lock:
            self._carries.pop(key, None)
            self._defaulted.pop(key, None)
        self.expectations.forget(key)

    def _carries_for(self, key: str, uid: str) -> dict[str, int]:
        with self._lock:
            found = self._carries.get(key)
            return dict(found[1]) if found and found[0] == uid else {}

    def _set_carry(self, key: str, uid: str, slot: str, value: int | None) -> None:
        with self._lock:
            found = self._carries.get(key)
            table = found[1] if found and found[0] == uid else {}
            if value is None:
                table.pop(slot, None)
            else:
                table[slot] = value
            if table:
                self._carries[key] = (uid, table)
            else:
                self._carries.pop(key, None)

    def _defaults(self, key: str, job: Obj) -> _Defaulted:
        """The job validated and defaulted, computed once per spec generation."""
        meta = as_mapping(job.get("metadata"))
        uid, generation = _uid(job), meta.get("generation")
        with self._lock:
            cached = self._defaulted.get(key)
        if cached is not None and cached.uid == uid and cached.generation == generation:
            # Status changes do not bump generation: keep the cached spec, take the new status.
            return _Defaulted(
                uid,
                generation,
                {**cached.job, "status": job.get("status"), "metadata": meta},
                cached.violations,
            )
        # Validate what defaulting makes of the job: that is what would run, and the env the
        # operator owns is stale in a stored job after scaling until defaulting recomputes it.
        # Except the replica total: defaulting's env grows with it, so it is checked first.
        too_many = replica_total_violations(job)
        defaulted = dict(job) if too_many else apply_defaults(job)
        violations = [str(v) for v in too_many or validate(defaulted)]
        entry = _Defaulted(uid, generation, defaulted, violations)
        with self._lock:
            self._defaulted[key] = entry
        return entry

    # -- reconcile ------------------------------------------------------------------------------
    def reconcile(self, key: str) -> float | None:
        """Bring one job closer to its spec; return seconds until it must be looked at again."""
        job = self.jobs.get(key)
        namespace, _, name = key.partition("/")
        if job is None:
            self.forget(key)
            if self.workload_sync is not None:
                self.workload_sync.let_go(namespace, name)
            self._release_orphans(key, self.pods.by_index(namespace, name), check_live=True)
            return None
        # From the namespace's first job on, its counters exist at 0 (Metrics.touch_namespace).
        self.metrics.touch_namespace(namespace)
        meta = as_mapping(job.get("metadata"))
        if meta.get("deletionTimestamp"):
            # Being deleted: the garbage collector deletes the pods and the Workload.
            if self.workload_sync is not None:
                self.workload_sync.let_go(namespace, name)
            self._release_orphans(key, self.pods.by_index(namespace, name))
            return None
        ours = manager(job) in MANAGED_BY_US
        if (
            self.workload_sync is not None
            and wants_workload(job)
            and (ours or dispatched_by_multikueue(job))
            and self.workload_sync.sync(job)
        ):
            return None  # the job was written: its next version continues from here
        if not ours:
            # Someone else's job (MultiKueue runs it in a worker cluster, say): no pods here.
            self._release_orphans(key, self.pods.by_index(namespace, name))
            return None
        if not self.expectations.satisfied(key):
            log.debug(
                "waiting for %s expected changes",
                self.expectations.outstanding(key),
                extra={"fields": {"namespace": namespace, "name": name}},
            )
            return None
        namespace, name, uid = str(meta.get("namespace")), str(meta.get("name")), _uid(job)
        entry = self._defaults(key, job)
        named = self.pods.by_index(namespace, name)
        pods = [p for p in named if controller_uid(p) == uid]
        # Pods of an older MXJob of the same name: the garbage collector deletes them.
        foreign = [p for p in named if controller_uid(p) != uid and release_patch(p) is not None]
        services = [s for s in self.services.by_index(namespace, name) if controller_uid(s) == uid]
        now = self._now()
        outcome = compute_status(
            entry.job,
            pods,
            now=now,
            carries=self._carries_for(key, uid),
            violations=entry.violations,
            pod_start_timeout=self.pod_start_timeout,
        )
        if outcome.delete_job:
            self._delete_job(namespace, name, uid)
            return None
        self._write_status(job, outcome, now)
        for event in outcome.events:
            self.recorder.record(job, event.type, event.reason, event.message)
        waiting = gang_waiting(entry.job, pods, self.gang)
        if waiting and not outcome.finished and not outcome.suspended:
            self.recorder.record(job, "Normal", GANG_WAITING, waiting)
        # Counted once the status saying so is written: a restarted controller reads it back.
        self.metrics.count_job(tally(job, outcome, pods, now=now))
        plan = plan_actions(entry.job, outcome, pods, services)
        if foreign:
            self._release_orphans(key, foreign, check_live=True)
        self._act(key, entry.job, plan, outcome)
        return outcome.requeue_after

    # -- writes ---------------------------------------------------------------------------------
    def _write_status(self, job: Obj, outcome: Outcome, now: datetime.datetime) -> None:
        old = {k: v for k, v in as_mapping(job.get("status")).items() if k != "lastReconcileTime"}
        if old == outcome.status:
            return
        meta = as_mapping(job.get("metadata"))
        body = {**job, "status": {**outcome.status, "lastReconcileTime": format_time(now)}}
        written = self.client.request(
            "PUT",
            mxjobs_path(str(meta.get("namespace")), str(meta.get("name")), subresource="status"),
            body=body,
        )
        self.metrics.api_writes.labels(verb="update", resource="mxjobs/status").inc()
        if isinstance(written, dict):
            self.jobs.write_through(written)

    def _delete_job(self, namespace: str, name: str, uid: str) -> None:
        try:
            self.client.request(
                "DELETE",
                mxjobs_path(namespace, name),
                body={"propagationPolicy": "Background", "preconditions": {"uid": uid}},
            )
            self.metrics.api_writes.labels(verb="delete", resource="mxjobs").inc()
            log.info(
                "deleted after ttlSecondsAfterFinished",
                extra={"fields": {"namespace": namespace, "name": name}},
            )
        except (NotFound, Conflict):
            pass

    def _release_orphans(self, key: str, pods: Sequence[Obj], *, check_live: bool = False) -> None:
        """Let go of pods nobody will count (see the module docstring).

        With ``check_live``, the cache's word that their MXJob is gone (or is another one) is
        checked with one GET first: a new leader's job cache may lag behind its pod cache.
        """
        tracked = [p for p in pods if release_patch(p) is not None]
        if tracked and check_live:
            live = self._live_job_uid(key)
            tracked = [p for p in tracked if live is None or controller_uid(p) != live]
        errors: list[Exception] = []
        self._release(key, tracked, errors, orphans=True)
        if errors:
            raise errors[0]

    def _live_job_uid(self, key: str) -> str | None:
        """The uid of the MXJob ``key`` as the API server has it now, if it lives and is ours."""
        namespace, _, name = key.partition("/")
        try:
            job = self.client.request("GET", mxjobs_path(namespace, name))
        except NotFound:
            return None
        if not isinstance(job, dict):
            return None
        meta = as_mapping(job.get("metadata"))
        if meta.get("deletionTimestamp") or manager(job) not in MANAGED_BY_US:
            return None
        return _uid(job)

    def _release(
        self, key: str, pods: Sequence[Obj], errors: list[Exception], *, orphans: bool = False
    ) -> list[str]:
        """Remove the tracking finalizer from ``pods`` (one guarded JSON patch each).

        A pod released earlier whose cached version has not changed since is skipped: the
        cache has not caught up with our own PATCH yet.
        """
        slot = f"{key}#orphans" if orphans else key
        with self._lock:
            before = self._released.get(slot, {})
        memory = {
            _uid(p): _resource_version(p)
            for p in pods
            if before.get(_uid(p)) == _resource_version(p)
        }
        released: list[str] = []
        for pod in pods:
            if _uid(pod) in memory:
                continue
            if self._remove_finalizer(pod, errors):
                memory[_uid(pod)] = _resource_version(pod)
                released.append(object_name(pod))
        with self._lock:
            if memory:
                self._released[slot] = memory
            else:
                self._released.pop(slot, None)
        return released

    def _remove_finalizer(self, pod: Obj, errors: list[Exception]) -> bool:
        """One guarded PATCH; True when it was sent and applied (or nothing was left to do)."""
        patch = release_patch(pod)
        if patch is None:
            return True
        meta = as_mapping(pod.get("metadata"))
        try:
            self.client.request(
                "PATCH",
                pods_path(str(meta.get("namespace")), str(meta.get("name"))),
                body=patch,
                content_type=JSON_PATCH,
            )
        except NotFound:
            return True  # gone already
        except Invalid:
            return False  # a failed test: the cache is stale, the next event brings the pod
        except Exception as error:
            errors.append(error)
            return False
        self.metrics.api_writes.labels(verb="patch", resource="pods").inc()
        return True

    def _act(self, key: str, job: Obj, plan: Plan, outcome: Outcome) -> None:
        uid = _uid(job)
        errors: list[Exception] = []
        self._release(key, plan.release_pods, errors)
        # Remember each recreated slot's history before its pod goes (see compute_status).
        for view in outcome.recreate:
            self._set_carry(key, uid, view.slot, outcome.restarts_before.get(view.slot, 0))
        deleted_pods = self._delete(key, "pods", plan.delete_pods, errors)
        if not outcome.finished:
            self._remember_removed(key, uid, plan, outcome, deleted_pods)
        deleted_services = self._delete(key, "services", plan.delete_services, errors)
        self._patch_services(plan.patch_services, errors)
        self._ensure_budget(job, plan, errors)
        creatable = plan.create_pods if self._gang_ready(job, plan, errors) else []
        created_pods = self._create_pods(key, job, creatable, errors, attempt=outcome.attempt)
        created_services = self._create_services(key, job, plan.create_services, errors)
        for names, reason, verb, kind in (
            (created_pods, ev.SUCCESSFUL_CREATE_POD, "Created", "pod"),
            (created_services, ev.SUCCESSFUL_CREATE_SERVICE, "Created", "service"),
            (deleted_pods, ev.SUCCESSFUL_DELETE_POD, "Deleted", "pod"),
            (deleted_services, ev.SUCCESSFUL_DELETE_SERVICE, "Deleted", "service"),
        ):
            if names:
                self.recorder.record(job, "Normal", reason, ev.summarize(verb, kind, names))
        if errors:
            raise errors[0]

    def _ensure_budget(self, job: Obj, plan: Plan, errors: list[Exception]) -> None:
        """Before pods are created, the gang's PodDisruptionBudget exists
        (:mod:`controller.integrations.budget.pdb`); one that cannot be written does not hold the
        pods back."""
        if not plan.create_pods or not wants_budget(job, self.gang):
            return
        try:
            for write in ensure_budget(self.client, job, labels=job_labels(job)):
                resource, _, verb = write.partition(":")
                self.metrics.api_writes.labels(verb=verb or "create", resource=resource).inc()
        except Exception as error:
            errors.append(error)

    def _gang_ready(self, job: Obj, plan: Plan, errors: list[Exception]) -> bool:
        """Before pods are created, the gang they join exists
        (:mod:`controller.integrations.gang.podgroup_writes`)."""
        if not plan.create_pods or self.gang == "none":
            return True
        try:
            for write in ensure_gang(self.client, job, labels=job_labels(job), scheduler=self.gang):
                resource, _, verb = write.partition(":")
                self.metrics.api_writes.labels(verb=verb or "create", resource=resource).inc()
        except Exception as error:
            errors.append(error)
            return False
        return True

    def _remember_removed(
        self, key: str, uid: str, plan: Plan, outcome: Outcome, deleted: Sequence[str]
    ) -> None:
        """Keep the restart history of pods removed for good (not recreated) in memory."""
        # A stale pod's history went on with its slot when its attempt ended.
        recreated = {view.name for view in (*outcome.recreate, *outcome.stale)}
        removed = sum(
            observe(pod).slot_restarts
            for pod in plan.delete_pods
            if object_name(pod) in deleted and object_name(pod) not in recreated
        )
        if removed:
            before = self._carries_for(key, uid).get(REMOVED_HISTORY, 0)
            self._set_carry(key, uid, REMOVED_HISTORY, before + removed)

    def _delete(
        self,
        key: str,
        kind: Kind,
        objects: Sequence[Obj],
        errors: list[Exception],
    ) -> list[str]:
        if not objects:
            return []
        self.expectations.expect_deletions(key, kind, [_uid(o) for o in objects])
        done: list[str] = []
        for obj in objects:
            meta = as_mapping(obj.get("metadata"))
            namespace, name = str(meta.get("namespace")), str(meta.get("name"))
            path = pods_path(namespace, name) if kind == "pods" else services_path(namespace, name)
            try:
                if kind == "pods" and release_patch(obj) is not None:
                    # Nothing waits for a pod the controller deletes itself: its end is no
                    # replica's own (the restart it stands for is already in status).
                    released: list[Exception] = []
                    self._remove_finalizer(obj, released)
                    if released:
                        raise released[0]
                self.client.request("DELETE", path, body={"preconditions": {"uid": _uid(obj)}})
                self.metrics.api_writes.labels(verb="delete", resource=kind).inc()
                done.append(name)
            except (NotFound, Conflict):
                self.expectations.deletion_observed(key, kind, _uid(obj))
            except Exception as error:
                self.expectations.deletion_observed(key, kind, _uid(obj))
                errors.append(error)
        return done

    def _patch_services(self, patches: Sequence[tuple[Obj, Obj]], errors: list[Exception]) -> None:
        for service, patch in patches:
            meta = as_mapping(service.get("metadata"))
            namespace, name = str(meta.get("namespace")), str(meta.get("name"))
            body = {**patch, "metadata": {**patch.get("metadata", {}), "uid": _uid(service)}}
            try:
                self.client.request(
                    "PATCH", services_path(namespace, name), body=body, content_type=MERGE_PATCH
                )
                self.metrics.api_writes.labels(verb="patch", resource="services").inc()
                log.info(
                    "adopted Service brought to this operator's shape",
                    extra={"fields": {"namespace": namespace, "name": name, "kind": "Service"}},
                )
            except (NotFound, Conflict):
                pass
            except Exception as error:
                errors.append(error)

    def _create(self, key: str, job: Obj, kind: Kind, body: Obj, errors: list[Exception]) -> bool:
        meta = body["metadata"]
        namespace, name = str(meta["namespace"]), str(meta["name"])
        path = pods_path(namespace) if kind == "pods" else services_path(namespace)
        try:
            self.client.request("POST", path, body=body)
            self.metrics.api_writes.labels(verb="create", resource=kind).inc()
            return True
        except AlreadyExists:
            self.expectations.creation_observed(key, kind, name)
            single = (
                pods_path(namespace, name) if kind == "pods" else services_path(namespace, name)
            )
            try:
                existing = self.client.request("GET", single)
            except NotFound:
                errors.append(Conflict(409, "Conflict", f"{kind} {name} vanished; retrying"))
                return False
            if controller_uid(existing) == _uid(job):
                return False  # ours: the cache will show it
            message = (
                f"{kind[:-1].capitalize()} {namespace}/{name} already exists and is not "
                "controlled by this MXJob; rename or delete it."
            )
            self.recorder.record(job, "Warning", ev.NAME_CONFLICT, message)
            errors.append(NameConflictError(message))
            return False
        except Exception as error:
            self.expectations.creation_observed(key, kind, name)
            reason = ev.FAILED_CREATE_POD if kind == "pods" else ev.FAILED_CREATE_SERVICE
            self.recorder.record(job, "Warning", reason, f"Error creating {name}: {error}")
            errors.append(error)
            return False

    def _create_pods(
        self,
        key: str,
        job: Obj,
        wanted: Sequence[tuple[Slot, int]],
        errors: list[Exception],
        *,
        attempt: int,
    ) -> list[str]:
        if not wanted:
            return []
        uid = _uid(job)
        self.expectations.expect_creations(key, "pods", [slot.name for slot, _ in wanted])
        created = []
        for slot, restarts_before in wanted:
            body = build_pod(
                job, slot, restarts_before=restarts_before, attempt=attempt, gang=self.gang
            )
            if self._create(key, job, "pods", body, errors):
                created.append(slot.name)
                self._set_carry(key, uid, slot.key, None)
        return created

    def _create_services(
        self, key: str, job: Obj, wanted: Sequence[Slot], errors: list[Exception]
    ) -> list[str]:
        if not wanted:
            return []
        self.expectations.expect_creations(key, "services", [slot.name for slot in wanted])
        return [
            slot.name
            for slot in wanted
            if self._create(key, job, "services", build_service(job, slot), errors)
        ]
