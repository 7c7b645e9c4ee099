"""reconcile(key): read one job's world from the caches, compute, act on the difference.

Level-triggered and idempotent: nothing here remembers what the last event was. Each run reads
the MXJob, its pods and its Services from the informers' stores (never a LIST), the pods once
into a :class:`~controller.job.pods.JobPods` that every later stage shares (no stage observes a
pod again), asks the integrations what holds the job back
(:meth:`~controller.job.hooks.Integration.waits`), asks
:func:`controller.job.status.compute_status` what the status should be, which failed pods to
recreate and which slots the spec asks for, asks :func:`controller.job.plan.plan_actions`
(pure) which objects to create and delete against those slots, and then:

1. writes status through the status subresource, only when it changed, with the cached
   ``resourceVersion`` as precondition (a conflict means a newer job exists: retry from it).
   Status goes first so that a restart is persisted before the pod it replaces is deleted;
2. removes the tracking finalizer from the pods whose end that status counts
   (controller/job/tracking.py): status first, so a crash in between loses no end;
3. deletes (removing the tracking finalizer just before), then creates, pods and Services,
   recording expectations first so that a cache that has not yet seen them never causes a
   duplicate;
4. records Events (the outcome's, then the integrations'
   :meth:`~controller.job.hooks.Integration.notices`) and counts metrics
   (:func:`controller.job.tally.tally`); returns when a timer must fire next.

Pods nobody will count (their MXJob is gone or being deleted, or they belong to an older MXJob
of the same name) lose the tracking finalizer at once, so that none stays stuck.

Defence in depth: a job stored while the webhooks were not registered is validated here with
the same ``shared`` rules (an invalid one fails with a clear reason instead of running) and
defaulted in memory (the env and ports the pods need), without writing the job back.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable, Sequence

from controller.job.hooks import Integration
from controller.job.job_writes import MXJobWrites
from controller.job.memory import JobMemory
from controller.job.ownership import controller_uid
from controller.job.plan import Obj, plan_actions
from controller.job.pods import JobPods
from controller.job.status import DEFAULT_POD_START_TIMEOUT, Outcome, compute_status
from controller.job.tally import tally
from controller.job.tracking import release_patch
from controller.job.view import MANAGED_BY_US, MXJobView
from controller.job.writes import JobWriter
from controller.runtime.client import KubeClient, NotFound, mxjobs_path
from controller.runtime.events import EventRecorder
from controller.runtime.expectations import Expectations
from controller.runtime.failpoints import STATUS_WRITTEN, Failpoints
from controller.runtime.informers import Store
from controller.runtime.metrics import Metrics
from shared.apitime import format_time
from shared.queueing import manager
from shared.spec import as_mapping

log = logging.getLogger(__name__)


def job_key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


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
        integrations: Sequence[Integration] = (),
        now: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(datetime.UTC),
        pod_start_timeout: float = DEFAULT_POD_START_TIMEOUT,
        failpoints: Failpoints | None = None,
        job_writes: MXJobWrites | None = None,
    ) -> None:
        self.client = client
        self.job_writes = job_writes or MXJobWrites(client, jobs=jobs)
        """The one writer of MXJobs, shared with Kueue's integration (controller/job/
        job_writes.py)."""
        self.failpoints = failpoints or Failpoints()
        """Where a kill-point test makes the process die (controller/runtime/failpoints.py)."""
        self.pod_start_timeout = pod_start_timeout
        """Seconds a pod may be unable to start before its job fails (``--pod-start-timeout``)."""
        self.jobs = jobs
        self.pods = pods
        self.services = services
        self.expectations = expectations
        self.recorder = recorder
        self.metrics = metrics
        self.integrations = tuple(integrations)
        """Called at the named points of controller/job/hooks.py, in this order."""
        self._now = now
        self.memory = JobMemory()
        self.writer = JobWriter(
            client,
            expectations=expectations,
            recorder=recorder,
            memory=self.memory,
            integrations=self.integrations,
            failpoints=self.failpoints,
        )

    def now(self) -> datetime.datetime:
        return self._now()

    def forget(self, key: str) -> None:
        """The job is gone: drop what is remembered about it."""
        self.memory.forget(key)
        self.expectations.forget(key)

    def job_deleted(self, key: str, *, uid: str) -> None:
        """The informer saw the job deleted (``uid``: its last cached state's): forget it, but
        keep its uid for the reconcile that follows, where the integrations let go of what they
        made for it by that uid (:meth:`~controller.job.hooks.Integration.job_gone`)."""
        self.forget(key)
        if uid:
            self.memory.remember_gone(key, uid)

    # -- reconcile ------------------------------------------------------------------------------
    def reconcile(self, key: str) -> float | None:
        """Bring one job closer to its spec; return seconds until it must be looked at again."""
        deleted_uid = self.memory.take_gone(key)
        raw = self.jobs.get(key)
        namespace, _, name = key.partition("/")
        job = self.memory.view(key, raw) if raw is not None else None
        if job is None or job.being_deleted:
            # Gone, or being deleted: the garbage collector deletes the pods and the rest.
            if job is None:
                self.forget(key)
            self._job_gone(namespace, name, uid=job.uid if job is not None else deleted_uid)
            self._release_orphans(key, self.pods.by_index(namespace, name), check_live=job is None)
            return None
        # From the namespace's first job on, its counters exist at 0 (Metrics.touch_namespace).
        self.metrics.touch_namespace(namespace)
        if any(integration.takes_over(job) for integration in self.integrations):
            return None  # the job was written: its next version continues from here
        if not job.ours:
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
        return self._sync(job)

    def _job_gone(self, namespace: str, name: str, *, uid: str | None) -> None:
        """Every integration lets go of the job. Its uid is the cached job's while it is being
        deleted, else the one its deletion event carried (:meth:`job_deleted`). It is None only
        when the controller never cached the job: deleted while the controller was down, so no
        deletion was seen, its key queued by an event of what was made for it (a Workload's);
        an integration then finds what it made by the job's name instead."""
        for integration in self.integrations:
            integration.job_gone(namespace, name, uid=uid or None)

    def _sync(self, job: MXJobView) -> float | None:
        """Status, then the objects: the steps of the module docstring for one live job."""
        named = self.pods.by_index(job.namespace, job.name)
        pods = JobPods.read(p for p in named if controller_uid(p) == job.uid)
        # Pods of an older MXJob of the same name: the garbage collector deletes them.
        foreign = [
            p for p in named if controller_uid(p) != job.uid and release_patch(p) is not None
        ]
        services = [
            s
            for s in self.services.by_index(job.namespace, job.name)
            if controller_uid(s) == job.uid
        ]
        now = self._now()
        held = next((w for i in self.integrations if (w := i.waits(job, pods)) is not None), None)
        outcome = compute_status(
            job,
            pods,
            now=now,
            pod_start_timeout=self.pod_start_timeout,
            held=held,
        )
        if outcome.delete_job:
            self._delete_job(job)
            return None
        self._write_status(job, outcome, now)
        if outcome.recreate:
            self.failpoints.reach(STATUS_WRITTEN)
        self._record(job, outcome, pods)
        # Counted once the status saying so is written: a restarted controller reads it back.
        self.metrics.count_job(tally(job, outcome, pods, now=now))
        plan = plan_actions(job, outcome, pods, services)
        if foreign:
            self._release_orphans(job.key, foreign, check_live=True)
        self.writer.carry_out(job, plan, outcome)
        return outcome.requeue_after

    def _record(self, job: MXJobView, outcome: Outcome, pods: JobPods) -> None:
        """The outcome's Events, then what the integrations add while the job runs."""
        for event in outcome.events:
            self.recorder.record(job.raw, event.type, event.reason, event.message)
        if outcome.finished or outcome.suspended:
            return
        for integration in self.integrations:
            for notice in integration.notices(job, pods):
                self.recorder.record(job.raw, notice.type, notice.reason, notice.message)

    # -- writes of the job itself ---------------------------------------------------------------
    def _write_status(self, job: MXJobView, outcome: Outcome, now: datetime.datetime) -> None:
        old = {k: v for k, v in job.status.items() if k != "lastReconcileTime"}
        if old == outcome.status:
            return
        self.job_writes.status(job.raw, {**outcome.status, "lastReconcileTime": format_time(now)})

    def _delete_job(self, job: MXJobView) -> None:
        if self.job_writes.delete(namespace=job.namespace, name=job.name, uid=job.uid):
            log.info(
                "deleted after ttlSecondsAfterFinished",
                extra={"fields": {"namespace": job.namespace, "name": job.name}},
            )

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
        self.writer.release_finalizers(key, tracked, errors, orphans=True)
        if errors:
            raise errors[0]

    def _live_job_uid(self, key: str) -> str | None:
        """The uid of the MXJob ``key`` as the API server has it now, if it lives and is ours."""
        namespace, _, name = key.partition("/")
        try:
            found = self.client.request("GET", mxjobs_path(namespace, name))
        except NotFound:
            return None
        if not isinstance(found, dict):
            return None
        meta = as_mapping(found.get("metadata"))
        if meta.get("deletionTimestamp") or manager(found) not in MANAGED_BY_US:
            return None
        return str(meta.get("uid") or "")
