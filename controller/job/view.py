"""The job as the controller reads it: one frozen, typed view, built once per reconcile (pure).

An MXJob arrives as a plain dict, deep and optional, and defaulting may not have run on it (a job
stored while the webhooks were away, or before a default was added). Its spec is read from the
job defaulted by :func:`shared.defaults.apply_defaults`, never from the stored dict: the readers
of defaulted fields in :mod:`shared.spec` hold no default of their own. Every decision of a
reconcile asks it the same few questions: which replicas, how many of each, what run policy
(with the legacy top-level fields training-operator still writes), which queue, is it finished,
suspended, being deleted. They are answered here, once, by :mod:`shared.spec` and
:mod:`shared.queueing` (the parsers the webhook shares), so the rest of the controller reads
attributes and never walks the dict again.

The stored (``raw``) and defaulted dicts stay on the view for the writers that need them whole:
the status write sends the stored job back, and a pod is built from the defaulted templates.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from shared.conditions import ConditionType, get_condition
from shared.constants import (
    OPERATOR_NAME,
    CleanPodPolicy,
    DisruptionPolicy,
    JobMode,
    ReplicaType,
    RestartPolicy,
    RestartScope,
    SuccessPolicy,
)
from shared.defaults import apply_defaults
from shared.queueing import MULTIKUEUE, manager, prebuilt_workload, queue_name
from shared.spec import (
    active_deadline_seconds,
    as_mapping,
    backoff_limit,
    clean_pod_policy,
    disruption_policy,
    is_suspended,
    job_mode,
    pod_start_timeout_override,
    progress_deadline_seconds,
    replica_port,
    replica_specs,
    restart_policy,
    restart_scope,
    run_policy,
    spec_replica_count,
    success_policy,
    ttl_seconds_after_finished,
)

Obj = dict[str, Any]

MANAGED_BY_US: Final = frozenset({"", OPERATOR_NAME, f"kubeflow.org/{OPERATOR_NAME}"})
"""``managedBy`` values (shared.queueing.manager) that mean this operator; any other hands the
job to another controller (MultiKueue, say) and this one makes no pods for it."""


@dataclass(frozen=True)
class ReplicaView:
    """One ``mxReplicaSpecs`` entry, its defaults applied."""

    type: ReplicaType
    replicas: int
    template: Mapping[str, Any]
    restart_policy: RestartPolicy
    restart_scope: RestartScope
    port: int
    spec: Mapping[str, Any]
    """The replica spec as defaulting left it, for what the view does not name."""

    @property
    def lower(self) -> str:
        """``worker``: the replica type as pod names and labels spell it."""
        return self.type.value.lower()


@dataclass(frozen=True)
class RunPolicyView:
    """``spec.runPolicy``, with the fields older jobs keep under ``spec``
    (shared.spec.run_policy)."""

    clean_pod_policy: CleanPodPolicy
    backoff_limit: int
    active_deadline_seconds: int | None
    ttl_seconds_after_finished: int | None
    suspend: bool
    disruption_policy: DisruptionPolicy
    progress_deadline_seconds: int | None
    """Opt-in: a Running job without a progress report for this long restarts as a whole."""
    scheduling_policy: Mapping[str, Any]
    managed_by: str
    """``spec.managedBy``, else ``runPolicy.managedBy`` (shared.queueing.manager); "" for us."""


@dataclass(frozen=True)
class QueueingView:
    """What Kueue reads of the job's metadata."""

    queue_name: str
    """``kueue.x-k8s.io/queue-name``; "" when the job is not queued."""
    prebuilt_workload: str
    """The Workload MultiKueue made for this copy of a job; "" for a job of this cluster."""

    @property
    def wants_workload(self) -> bool:
        """Queued by Kueue: a queue name, or a MultiKueue copy with its own Workload."""
        return bool(self.queue_name or self.prebuilt_workload)


@dataclass(frozen=True)
class MXJobView:
    """One MXJob, read once (see the module docstring)."""

    namespace: str
    name: str
    uid: str
    generation: object
    resource_version: str
    created_at: str
    """``metadata.creationTimestamp`` as the API wrote it ("" before the API server saw it)."""
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    mode: JobMode | None
    replicas: tuple[ReplicaView, ...]
    """In canonical order (Scheduler, Server, Worker, TunerTracker, TunerServer, Tuner)."""
    run_policy: RunPolicyView
    queueing: QueueingView
    success_policy: SuccessPolicy
    pod_start_timeout: int | None
    """The job's own pod start timeout (annotation), None for the controller's flag."""
    status: Mapping[str, Any]
    succeeded: bool
    failed: bool
    end_message: str
    """The message of the Succeeded or Failed condition that ended the job, else ""."""
    active: bool
    """Some replica still has pending or running pods (``status.replicaStatuses[*].active``)."""
    being_deleted: bool
    raw: Mapping[str, Any]
    """The job as stored: what a status write sends back."""
    defaulted: Mapping[str, Any]
    """The job as defaulting makes it: what pods are built from."""
    violations: tuple[str, ...] = ()
    """Why the job cannot run (shared.validation), empty for a valid one."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def finished(self) -> bool:
        return self.succeeded or self.failed

    @property
    def suspended(self) -> bool:
        return self.run_policy.suspend

    @property
    def ours(self) -> bool:
        """This operator runs the job's pods (no other ``managedBy``)."""
        return self.run_policy.managed_by in MANAGED_BY_US

    @property
    def dispatched_by_multikueue(self) -> bool:
        """MultiKueue runs the job in a worker cluster; this cluster only queues it."""
        return self.run_policy.managed_by == MULTIKUEUE

    @property
    def single_node(self) -> bool:
        """The MXTrain single-node form: Worker is the only replica type (shared.spec)."""
        return self.mode is JobMode.MXTRAIN and [r.type for r in self.replicas] == [
            ReplicaType.WORKER
        ]

    @property
    def total_replicas(self) -> int:
        return sum(replica.replicas for replica in self.replicas)

    @property
    def conditions(self) -> list[Mapping[str, Any]]:
        return _conditions(self.status)

    def replica(self, replica_type: str) -> ReplicaView | None:
        """The replica type's view (its canonical spelling), None when the job has none."""
        return next((r for r in self.replicas if r.type.value == replica_type), None)

    def stored_template(self, replica_type: str) -> Mapping[str, Any]:
        """The replica's pod template as stored, before the controller's defaulting in memory:
        what Kueue's podSets carry (a Workload is compared with the job the API server holds)."""
        return _template(replica_specs(self.raw).get(replica_type))


def _template(spec: Mapping[str, Any] | None) -> Mapping[str, Any]:
    template = as_mapping(spec).get("template")
    return template if isinstance(template, Mapping) else {}


def _replicas(defaulted: Mapping[str, Any]) -> tuple[ReplicaView, ...]:
    return tuple(
        ReplicaView(
            type=ReplicaType(key),
            replicas=spec_replica_count(spec),
            template=_template(spec),
            restart_policy=restart_policy(defaulted, key),
            restart_scope=restart_scope(defaulted, key),
            port=replica_port(defaulted, key),
            spec=spec,
        )
        for key, spec in replica_specs(defaulted).items()
    )


def _run_policy(job: Mapping[str, Any]) -> RunPolicyView:
    return RunPolicyView(
        clean_pod_policy=clean_pod_policy(job),
        backoff_limit=backoff_limit(job),
        active_deadline_seconds=active_deadline_seconds(job),
        ttl_seconds_after_finished=ttl_seconds_after_finished(job),
        suspend=is_suspended(job),
        disruption_policy=disruption_policy(job),
        progress_deadline_seconds=progress_deadline_seconds(job),
        scheduling_policy=as_mapping(run_policy(job).get("schedulingPolicy")),
        managed_by=manager(job),
    )


def _conditions(status: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    found = status.get("conditions")
    return [c for c in found if isinstance(c, Mapping)] if isinstance(found, list) else []


def _ended(status: Mapping[str, Any]) -> tuple[bool, bool, str]:
    """(succeeded, failed, message) from the job's own conditions."""
    conditions = status.get("conditions")
    listed = (
        [c for c in conditions if isinstance(c, Mapping)] if isinstance(conditions, list) else []
    )
    for kind in (ConditionType.SUCCEEDED, ConditionType.FAILED):
        found = get_condition(listed, kind)
        if found is not None and found.get("status") == "True":
            message = str(found.get("message") or kind)
            return kind is ConditionType.SUCCEEDED, kind is ConditionType.FAILED, message
    return False, False, ""


def _active(status: Mapping[str, Any]) -> bool:
    statuses = as_mapping(status.get("replicaStatuses"))
    return any(
        isinstance(as_mapping(s).get("active"), int) and as_mapping(s)["active"] > 0
        for s in statuses.values()
    )


def _strings(value: object) -> dict[str, str]:
    return {k: v for k, v in as_mapping(value).items() if isinstance(v, str)}


@dataclass(frozen=True)
class SpecReading:
    """What the view reads from the job's spec: the same for every reconcile of one spec
    generation, so :class:`controller.job.memory.JobMemory` reads it once per generation."""

    defaulted: Mapping[str, Any]
    mode: JobMode | None
    replicas: tuple[ReplicaView, ...]
    run_policy: RunPolicyView
    success_policy: SuccessPolicy


def read_spec(defaulted: Mapping[str, Any]) -> SpecReading:
    """The spec of ``defaulted``, a job :func:`shared.defaults.apply_defaults` made (with or
    without the env). Nothing of the stored job is kept: the cache replaces it on every status
    change, and a reading held per generation would hold an old copy alive."""
    return SpecReading(
        defaulted=defaulted,
        mode=job_mode(defaulted),
        replicas=_replicas(defaulted),
        run_policy=_run_policy(defaulted),
        success_policy=success_policy(defaulted),
    )


def read_invalid_spec(reading: Mapping[str, Any]) -> SpecReading:
    """The spec of a job validation refuses, ``reading`` being it defaulted with
    ``invalid_as_unset``: its run policy, which says what becomes of its pods once it has
    failed, and none of its replicas. It runs none, and a replica of it may have nothing to
    read (no mxnet container, so no port): that may be why it is refused."""
    return SpecReading(
        defaulted=reading,
        mode=job_mode(reading),
        replicas=(),
        run_policy=_run_policy(reading),
        success_policy=success_policy(reading),
    )


def read_job(
    raw: Mapping[str, Any],
    *,
    defaulted: Mapping[str, Any] | None = None,
    violations: tuple[str, ...] = (),
    spec: SpecReading | None = None,
) -> MXJobView:
    """The view of ``raw``; its spec is read from ``defaulted`` unless ``spec`` was read already,
    its metadata and status from ``raw``, the newest the cache holds.

    Without either, the spec is read from ``raw`` defaulted here, without the env (its cost does
    not grow with the replica counts; a defaulted ``raw`` keeps its own): for a caller that needs
    no pod template. The reconciler reads each job defaulted once per spec generation instead
    (controller/job/memory.py)."""
    if spec is None:
        spec = read_spec(apply_defaults(raw, env=False) if defaulted is None else defaulted)
    meta = as_mapping(raw.get("metadata"))
    status = as_mapping(raw.get("status"))
    succeeded, failed, message = _ended(status)
    return MXJobView(
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""),
        uid=str(meta.get("uid") or ""),
        generation=meta.get("generation"),
        resource_version=str(meta.get("resourceVersion") or ""),
        created_at=str(meta.get("creationTimestamp") or ""),
        labels=_strings(meta.get("labels")),
        annotations=_strings(meta.get("annotations")),
        mode=spec.mode,
        replicas=spec.replicas,
        run_policy=spec.run_policy,
        queueing=QueueingView(queue_name=queue_name(raw), prebuilt_workload=prebuilt_workload(raw)),
        success_policy=spec.success_policy,
        pod_start_timeout=pod_start_timeout_override(raw),
        status=status,
        succeeded=succeeded,
        failed=failed,
        end_message=message,
        active=_active(status),
        being_deleted=bool(meta.get("deletionTimestamp")),
        raw=raw,
        defaulted=spec.defaulted,
        violations=violations,
    )
