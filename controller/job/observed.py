"""What a pod says about its replica, read once into a small frozen view (pure).

Pod status is deep, optional and shaped by whoever wrote it (a kubelet, an eviction, a test).
Status computation asks the same few questions of every pod (which replica? finished how? how
many restarts so far?), so they are answered here, totally: a malformed pod reads as "pending",
never as an exception.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from shared.constants import (
    CONTAINER_NAME,
    DEFAULT_TERMINATION_GRACE_SECONDS,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
    TRACKING_FINALIZER,
    ReplicaType,
)
from shared.spec import as_mapping, canonical_replica_type, is_int

ATTEMPT_ANNOTATION: Final = "mxjob.kubeflow.org/attempt"
"""Set by the controller on every pod it creates once the job has restarted as a whole: the
job's attempt (``status.attempt``) the pod belongs to. A pod of an earlier attempt is stale:
its end was counted when the attempt ended (or is the consequence of that end), and it only
has to go before the new attempt's pods are made (controller/job/recovery.py)."""

PENDING: Final = "Pending"
RUNNING: Final = "Running"
SUCCEEDED: Final = "Succeeded"
FAILED: Final = "Failed"
UNKNOWN: Final = "Unknown"


CANNOT_START_REASONS: Final = frozenset(
    {
        "ErrImagePull",
        "ImagePullBackOff",
        "InvalidImageName",
        "ErrImageNeverPull",
        "CreateContainerConfigError",
        "CreateContainerError",
    }
)
"""The kubelet's ``waiting`` reasons of a container that cannot be started until someone acts
(the image cannot be pulled, a ConfigMap or Secret it reads is missing): unlike
``ContainerCreating`` or ``PodInitializing`` they do not pass by themselves."""


@dataclass(frozen=True)
class StartProblem:
    """Why a pod's container cannot start, as the kubelet says it."""

    container: str
    reason: str
    message: str


@dataclass(frozen=True)
class PodView:
    """The facts about one pod that status computation needs."""

    name: str
    uid: str
    replica_type: ReplicaType | None
    index: int | None
    phase: str
    exit_code: int | None
    """The ``mxnet`` container's exit code when it terminated; None otherwise (or evicted)."""
    reason: str
    """Why it ended: the pod's ``status.reason`` (Evicted...) or the container's (Error...)."""
    terminating: bool
    """``deletionTimestamp`` is set: the pod is going away and counts as gone."""
    in_place_restarts: int
    """The ``mxnet`` container's ``restartCount`` (kubelet restarts under Always/OnFailure)."""
    last_exit_code: int | None
    """The exit code of the previous run of the container (after an in-place restart)."""
    grace_seconds: int = DEFAULT_TERMINATION_GRACE_SECONDS
    """``spec.terminationGracePeriodSeconds``: how long the pod may take to end by itself once
    its job has finished, before cleanPodPolicy deletes it."""
    tracked: bool = False
    """The pod carries :data:`~shared.constants.TRACKING_FINALIZER`: the controller has not yet
    let it go, so if it is terminating, the API server keeps it until its end is counted."""
    deletion_timestamp: str | None = None
    """``metadata.deletionTimestamp`` as written (the time by which the pod should be gone)."""
    start_problem: StartProblem | None = None
    """A container (init containers first) waits for a reason in :data:`CANNOT_START_REASONS`."""
    created_at: str | None = None
    """``metadata.creationTimestamp``: how long a pod that cannot start has been trying."""
    disruption: str | None = None
    """The reason of a true ``DisruptionTarget`` condition: who ended the pod
    (``PreemptionByScheduler``, ``EvictionByEvictionAPI``, ``DeletionByTaintManager``...)."""
    attempt: int = 0
    """From :data:`ATTEMPT_ANNOTATION` (0 when absent: the job's first attempt)."""
    ended_at: str | None = None
    """When the ``mxnet`` container ended (its ``finishedAt``), else when the pod was marked for
    disruption: which end came first in an attempt, and which followed from it."""
    lingering: bool = False
    """The ``mxnet`` container has ended for good (``phase`` says how) while the kubelet still
    reports the pod running: another container of it (a metrics collector, a service-mesh
    proxy) runs on. The replica has ended; the pod is cleaned up like a running one."""
    unschedulable: str | None = None
    """The scheduler's message while ``PodScheduled`` is False for ``Unschedulable``: no node
    fits the pod (controller/job/status/waiting.py says so in the job's status)."""
    node_name: str | None = None
    """``spec.nodeName``: the node the pod is bound to, None while unscheduled (a gang counts
    its placed pods by it, controller/integrations/gang/podgroups.py)."""

    @property
    def succeeded(self) -> bool:
        return self.phase == SUCCEEDED

    @property
    def failed(self) -> bool:
        return self.phase == FAILED

    @property
    def ended(self) -> bool:
        """Succeeded or Failed: the pod's end is known."""
        return self.phase in (SUCCEEDED, FAILED)

    @property
    def gone(self) -> bool:
        """Terminating and not (or not yet) an end to count: status treats it as gone.

        A terminating pod the controller still tracks and that has ended was deleted by someone
        else (a user, an eviction, the node's shutdown) before the controller counted it: its
        end counts like any other pod's. Every other terminating pod is on its way out: either
        the controller let it go (it deleted it, or already counted it), or it has not ended
        yet and is counted once it has.
        """
        return self.terminating and not (self.tracked and self.ended)

    @property
    def running(self) -> bool:
        return self.phase == RUNNING and not self.terminating

    @property
    def active(self) -> bool:
        """Pending or running, and not on its way out."""
        return self.phase in (PENDING, RUNNING, UNKNOWN) and not self.terminating

    @property
    def slot(self) -> str:
        """``<type>-<index>`` (lower-case type), the replica this pod plays."""
        rtype = self.replica_type.value.lower() if self.replica_type else "?"
        return f"{rtype}-{self.index}"


def _non_negative_int(value: object) -> int:
    if is_int(value) and value >= 0:
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return 0


def main_container_status(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    """The status of the ``mxnet`` container (or of the sole container), else empty."""
    statuses = as_mapping(pod.get("status")).get("containerStatuses")
    if not isinstance(statuses, list):
        return {}
    found = [s for s in statuses if isinstance(s, Mapping)]
    for status in found:
        if status.get("name") == CONTAINER_NAME:
            return status
    return found[0] if len(found) == 1 else {}


def _finished_at(state: object, status: Mapping[str, Any]) -> str | None:
    finished = _text(as_mapping(as_mapping(state).get("terminated")).get("finishedAt"))
    if finished is not None:
        return finished
    conditions = status.get("conditions")
    for condition in conditions if isinstance(conditions, list) else ():
        found = as_mapping(condition)
        if found.get("type") == "DisruptionTarget" and found.get("status") == "True":
            return _text(found.get("lastTransitionTime"))
    return None


def _exit_code(state: object) -> tuple[int | None, str]:
    terminated = as_mapping(as_mapping(state).get("terminated"))
    code = terminated.get("exitCode")
    reason = terminated.get("reason")
    return (code if is_int(code) else None), (reason if isinstance(reason, str) else "")


def observe(pod: Mapping[str, Any]) -> PodView:
    """The :class:`PodView` of a pod dict as the API returns it."""
    meta = as_mapping(pod.get("metadata"))
    labels = as_mapping(meta.get("labels"))
    annotations = as_mapping(meta.get("annotations"))
    status = as_mapping(pod.get("status"))
    spec = as_mapping(pod.get("spec"))
    index_label = labels.get(LABEL_REPLICA_INDEX)
    index = int(index_label) if isinstance(index_label, str) and index_label.isdigit() else None
    main = main_container_status(pod)
    exit_code, container_reason = _exit_code(main.get("state"))
    kubelet_phase = status.get("phase")
    kubelet_phase = kubelet_phase if isinstance(kubelet_phase, str) and kubelet_phase else PENDING
    pod_reason = status.get("reason")
    phase = _replica_phase(kubelet_phase, exit_code, spec, pod_reason)
    last_exit_code, _ = _exit_code(main.get("lastState"))
    return PodView(
        name=str(meta.get("name", "")),
        uid=str(meta.get("uid", "")),
        replica_type=canonical_replica_type(labels.get(LABEL_REPLICA_TYPE)),
        index=index,
        phase=phase,
        exit_code=exit_code,
        reason=pod_reason if isinstance(pod_reason, str) and pod_reason else container_reason,
        terminating=bool(meta.get("deletionTimestamp")),
        in_place_restarts=_non_negative_int(main.get("restartCount")),
        last_exit_code=last_exit_code,
        grace_seconds=_grace_seconds(spec.get("terminationGracePeriodSeconds")),
        tracked=is_tracked(pod),
        deletion_timestamp=_text(meta.get("deletionTimestamp")),
        start_problem=start_problem(status),
        created_at=_text(meta.get("creationTimestamp")),
        disruption=_disruption(status),
        attempt=_non_negative_int(annotations.get(ATTEMPT_ANNOTATION)),
        ended_at=_finished_at(main.get("state"), status),
        lingering=kubelet_phase in (PENDING, RUNNING) and phase in (SUCCEEDED, FAILED),
        unschedulable=_unschedulable(status),
        node_name=_text(spec.get("nodeName")),
    )


def _unschedulable(status: Mapping[str, Any]) -> str | None:
    """The ``PodScheduled`` condition's message when the scheduler found no node for the pod."""
    for condition in status.get("conditions") or []:
        found = as_mapping(condition)
        if (found.get("type"), found.get("status"), found.get("reason")) == (
            "PodScheduled", "False", "Unschedulable",
        ):  # fmt: skip
            return str(found.get("message") or "no node fits the pod")
    return None


def _replica_phase(
    kubelet_phase: str, exit_code: int | None, spec: Mapping[str, Any], pod_reason: object
) -> str:
    """The pod's phase as its replica lived it: the ``mxnet`` container's end decides.

    The kubelet calls a pod Running while any of its containers runs, so a pod with a sidecar
    that outlives the training process (Katib's metrics collector finishing its report, a
    service-mesh proxy that never ends) would keep its replica running. Once ``mxnet`` has
    terminated and the pod's ``restartPolicy`` will not start it again, the replica has ended
    with ``mxnet``'s exit code. Likewise a pod the kubelet calls Failed only because a sidecar
    failed (no pod-level reason such as ``Evicted``) ran a replica that succeeded. (A native
    sidecar, an init container with ``restartPolicy: Always``, needs none of this: the kubelet
    stops it once ``mxnet`` ended and judges the pod by ``mxnet`` alone.)
    """
    if exit_code is None:
        return kubelet_phase
    if kubelet_phase == FAILED and exit_code == 0 and not pod_reason:
        return SUCCEEDED
    if kubelet_phase not in (PENDING, RUNNING):
        return kubelet_phase
    policy = spec.get("restartPolicy") or "Always"
    if policy == "Never" or (policy == "OnFailure" and exit_code == 0):
        return SUCCEEDED if exit_code == 0 else FAILED
    return kubelet_phase


def _disruption(status: Mapping[str, Any]) -> str | None:
    conditions = status.get("conditions")
    for condition in conditions if isinstance(conditions, list) else ():
        found = as_mapping(condition)
        if found.get("type") == "DisruptionTarget" and found.get("status") == "True":
            return _text(found.get("reason"))
    return None


def start_problem(status: Mapping[str, Any]) -> StartProblem | None:
    """The first container (init containers first) the kubelet cannot start, and why."""
    for key in ("initContainerStatuses", "containerStatuses"):
        statuses = status.get(key)
        for container in statuses if isinstance(statuses, list) else ():
            waiting = as_mapping(as_mapping(as_mapping(container).get("state")).get("waiting"))
            reason = waiting.get("reason")
            if isinstance(reason, str) and reason in CANNOT_START_REASONS:
                message = waiting.get("message")
                return StartProblem(
                    container=str(as_mapping(container).get("name", "")),
                    reason=reason,
                    message=message if isinstance(message, str) else "",
                )
    return None


def is_tracked(pod: Mapping[str, Any]) -> bool:
    """Whether the pod carries the controller's tracking finalizer."""
    finalizers = as_mapping(pod.get("metadata")).get("finalizers")
    return isinstance(finalizers, list) and TRACKING_FINALIZER in finalizers


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _grace_seconds(value: object) -> int:
    return value if is_int(value) and value >= 0 else DEFAULT_TERMINATION_GRACE_SECONDS
