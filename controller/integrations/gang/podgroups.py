"""Gang scheduling: an MXJob → the objects a gang scheduler needs, and what its pods carry (pure).

A distributed MXNet job with one replica unplaced does not run slowly, it does not run at all:
ps-lite waits for every scheduler, server and worker it was told about. Two such jobs that each
got part of the GPUs they need wait for each other forever. A gang scheduler binds a job's pods
all together or not at all.

``runPolicy.schedulingPolicy.minAvailable`` keeps training-operator v1.8's meaning: how many of
the job's pods must be placed together, by default every replica of the job.

``native`` is Kubernetes' own (v1.36 ``scheduling.k8s.io/v1alpha2``, v1.37 ``v1alpha3``,
kube-scheduler's GangScheduling plugin): its Workload and PodGroup are built in
:mod:`controller.integrations.gang.native`; here only what its pods carry
(``spec.schedulingGroup.podGroupName``).

``volcano`` and ``scheduler-plugins`` write what kubeflow training-operator v1.8.1 writes
(``pkg/controller.v1/control/podgroup_control.go`` and ``common/job.go`` in its module), so jobs
move between the two operators without their scheduler noticing: one PodGroup per job of the
scheduler's own CRD (``scheduling.volcano.sh/v1beta1``, ``scheduling.x-k8s.io/v1alpha1``),
named after the job, owned by it and carrying the job's annotations, with ``minMember`` (
``minAvailable``), ``minResources`` (``schedulingPolicy.minResources``, else the requests of
the first ``minMember`` pods: :func:`min_resources`), and for Volcano the queue (``default``
unless given) and priority class, for scheduler-plugins ``scheduleTimeoutSeconds``. Pods get the
scheduler's name (unless their template names one) and the group's name: for Volcano the
annotations ``scheduling.k8s.io/group-name`` and ``volcano.sh/task-spec`` (the replica type),
for scheduler-plugins the label ``scheduling.x-k8s.io/pod-group``.

The I/O (discovery, creating and replacing the objects) is
:mod:`controller.integrations.gang.podgroup_writes`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

from controller.integrations.gang.quantity import Quantity, add, format_quantity, parse
from controller.job.ownership import owner_reference
from controller.job.pods import JobPods
from controller.job.view import MXJobView, ReplicaView
from shared.spec import as_mapping, is_int

GangScheduler = Literal["native", "volcano", "scheduler-plugins", "none"]
"""Which gang scheduler the controller writes for: ``native`` is kube-scheduler's Workload API,
``volcano`` and ``scheduler-plugins`` those projects' PodGroups, ``none`` writes nothing (pods
are scheduled one by one)."""

VOLCANO_GROUP: Final = "scheduling.volcano.sh"
VOLCANO_VERSION: Final = "v1beta1"
VOLCANO_SCHEDULER_NAME: Final = "volcano"
VOLCANO_GROUP_ANNOTATION: Final = "scheduling.k8s.io/group-name"
VOLCANO_TASK_ANNOTATION: Final = "volcano.sh/task-spec"
VOLCANO_DEFAULT_QUEUE: Final = "default"
VOLCANO_WAITING_PHASES: Final = ("", "Pending")
"""A Volcano PodGroup in these phases has not been admitted by Volcano's enqueue action yet:
training-operator creates no pod until it has (``DelayPodCreationDueToPodGroup``)."""
PLUGINS_GROUP: Final = "scheduling.x-k8s.io"
PLUGINS_VERSION: Final = "v1alpha1"
PLUGINS_SCHEDULER_NAME: Final = "scheduler-plugins-scheduler"
"""The name scheduler-plugins' own install (its Helm chart ``as-a-second-scheduler``) gives the
scheduler running its Coscheduling plugin."""
PLUGINS_POD_GROUP_LABEL: Final = "scheduling.x-k8s.io/pod-group"

GANG_WAITING: Final = "GangWaiting"
"""Event reason: the job's pods exist but fewer than ``minAvailable`` are placed on nodes."""


def min_available(job: MXJobView) -> int:
    """``schedulingPolicy.minAvailable`` when it is a positive count no larger than the job, else
    every replica of the job (training-operator v1.8's default)."""
    total = job.total_replicas
    value = job.run_policy.scheduling_policy.get("minAvailable")
    if is_int(value) and 0 < value <= total:
        return value
    return total


def join_pod(
    pod: dict[str, Any], job: MXJobView, scheduler: GangScheduler, *, replica_type: str
) -> None:
    """Join a pod built for ``job`` to the job's gang (in place).

    ``replica_type`` is lower case (``worker``), as training-operator writes it in
    ``volcano.sh/task-spec``. A scheduler name already in the pod's template is kept.
    """
    spec = pod.setdefault("spec", {})
    meta = pod.setdefault("metadata", {})
    if scheduler == "native":
        spec["schedulingGroup"] = {"podGroupName": job.name}
    elif scheduler == "volcano":
        spec["schedulerName"] = spec.get("schedulerName") or VOLCANO_SCHEDULER_NAME
        annotations = meta.setdefault("annotations", {})
        annotations[VOLCANO_GROUP_ANNOTATION] = job.name
        annotations[VOLCANO_TASK_ANNOTATION] = replica_type
    elif scheduler == "scheduler-plugins":
        spec["schedulerName"] = spec.get("schedulerName") or PLUGINS_SCHEDULER_NAME
        meta.setdefault("labels", {})[PLUGINS_POD_GROUP_LABEL] = job.name


# -- Volcano and scheduler-plugins PodGroups (as training-operator v1.8.1 writes them) ----------
def _pod_requests(template: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Per container: its requests, or its limits when it has no requests at all
    (``AddResourceList`` in training-operator's ``common/util.go``; init containers don't count)."""
    found = []
    for container in as_mapping(template.get("spec")).get("containers") or []:
        resources = as_mapping(as_mapping(container).get("resources"))
        chosen = resources.get("requests") if "requests" in resources else resources.get("limits")
        found.append(as_mapping(chosen))
    return found


def min_resources(job: MXJobView, *, priorities: Mapping[str, int] | None = None) -> dict[str, str]:
    """What the first ``minAvailable`` pods request in all (``CalcPGMinResources``).

    Replica types are taken by their template's priority class value, highest first
    (``priorities``: class name → value; unknown classes count 0), then in the job's order
    (training-operator iterates a Go map there, so with ``minAvailable`` below the job's size
    which pods count is random in it; every pod counts in the default case).
    """
    values = priorities or {}

    def rank(replica: ReplicaView) -> int:
        spec = as_mapping(replica.template.get("spec"))
        return -values.get(str(spec.get("priorityClassName") or ""), 0)

    needed, counted = min_available(job), 0
    sums: dict[str, Quantity] = {}
    for replica in sorted(job.replicas, key=rank):
        per_pod = _pod_requests(replica.template)
        for _ in range(replica.replicas):
            if counted >= needed:
                break
            counted += 1
            for requests in per_pod:
                for name, text in requests.items():
                    quantity = parse(str(text))
                    sums[str(name)] = add(sums[str(name)], quantity) if name in sums else quantity
    return {name: format_quantity(total) for name, total in sums.items()}


def _given_min_resources(job: MXJobView) -> dict[str, str] | None:
    given = job.run_policy.scheduling_policy.get("minResources")
    if given is None:
        return None
    return {str(k): str(v) for k, v in as_mapping(given).items()}


def _crd_metadata(job: MXJobView) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": job.name,
        "namespace": job.namespace,
        "ownerReferences": [owner_reference(job)],
    }
    if job.annotations:
        metadata["annotations"] = dict(job.annotations)
    return metadata


def volcano_pod_group_spec(
    job: MXJobView,
    *,
    priorities: Mapping[str, int] | None = None,
    existing_queue: str = "",
) -> dict[str, Any]:
    """A Volcano PodGroup's spec; a queue already set on the PodGroup wins (as in
    training-operator, so Volcano or an admin may move a group between queues)."""
    policy = job.run_policy.scheduling_policy
    spec: dict[str, Any] = {"minMember": min_available(job)}
    spec["queue"] = existing_queue or str(policy.get("queue") or VOLCANO_DEFAULT_QUEUE)
    if policy.get("priorityClass"):
        spec["priorityClassName"] = str(policy["priorityClass"])
    given = _given_min_resources(job)
    spec["minResources"] = given if given is not None else min_resources(job, priorities=priorities)
    return spec


def plugins_pod_group_spec(
    job: MXJobView, *, priorities: Mapping[str, int] | None = None
) -> dict[str, Any]:
    """A scheduler-plugins PodGroup's spec (its ``minResources`` is left out when empty)."""
    spec: dict[str, Any] = {"minMember": min_available(job)}
    given = _given_min_resources(job)
    resources = given if given is not None else min_resources(job, priorities=priorities)
    if resources:
        spec["minResources"] = resources
    timeout = job.run_policy.scheduling_policy.get("scheduleTimeoutSeconds")
    if is_int(timeout):
        spec["scheduleTimeoutSeconds"] = timeout
    return spec


def build_crd_pod_group(
    job: MXJobView,
    scheduler: GangScheduler,
    *,
    priorities: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """The job's PodGroup for ``volcano`` or ``scheduler-plugins``."""
    if scheduler == "volcano":
        api_version = f"{VOLCANO_GROUP}/{VOLCANO_VERSION}"
        spec = volcano_pod_group_spec(job, priorities=priorities)
    elif scheduler == "scheduler-plugins":
        api_version = f"{PLUGINS_GROUP}/{PLUGINS_VERSION}"
        spec = plugins_pod_group_spec(job, priorities=priorities)
    else:
        raise ValueError(f"no CRD PodGroup for gang scheduler {scheduler!r}")
    return {
        "apiVersion": api_version,
        "kind": "PodGroup",
        "metadata": _crd_metadata(job),
        "spec": spec,
    }


def crd_pod_group_update(
    existing: Mapping[str, Any],
    job: MXJobView,
    scheduler: GangScheduler,
    *,
    priorities: Mapping[str, int] | None = None,
) -> dict[str, Any] | None:
    """The existing PodGroup with the spec the job wants now, or None when it already has it
    (training-operator updates the spec in place: ``SyncPodGroup`` in ``common/scheduling.go``)."""
    current = as_mapping(existing.get("spec"))
    if scheduler == "volcano":
        # The whole spec is replaced, Volcano's other fields (minTaskMember) too, as there.
        wanted = volcano_pod_group_spec(
            job, priorities=priorities, existing_queue=str(current.get("queue") or "")
        )
    else:
        wanted = plugins_pod_group_spec(job, priorities=priorities)
    if wanted == dict(current):
        return None
    return {**existing, "spec": wanted}


def delays_pods(pod_group: Mapping[str, Any] | None, scheduler: GangScheduler) -> bool:
    """Whether pod creation waits for the PodGroup: Volcano's until its enqueue action admitted
    it (phase past ``Pending``), as training-operator does; scheduler-plugins' never."""
    if scheduler != "volcano":
        return False
    if pod_group is None:
        return True
    phase = as_mapping(pod_group.get("status")).get("phase") or ""
    return phase in VOLCANO_WAITING_PHASES


def gang_waiting(job: MXJobView, pods: JobPods, scheduler: GangScheduler) -> str | None:
    """A message when the job's pods wait for their gang to fit, None otherwise.

    Waiting means: the job has all its pods, and fewer than ``minAvailable`` are on a node
    (a gang scheduler binds them together, so until then they stay Pending as a whole). Read
    from the pods' views (not terminating, bound to a node), as the reconcile observed them.
    """
    if scheduler == "none":
        return None
    live = [view for view in pods.views if not view.terminating]
    if len(live) < job.total_replicas:
        return None
    placed = sum(1 for view in live if view.node_name)
    needed = min_available(job)
    if placed >= needed:
        return None
    return (
        f"Waiting for the gang: {placed} of {len(live)} pods placed; the scheduler binds "
        f"{needed} (minAvailable) together once they fit."
    )
