"""Kueue's side of an MXJob that the webhook and the controller both read. Pure.

Two routes queue MXJobs with Kueue (docs/how-to/queue-with-kueue.md). Kueue up to v0.10 has an MXJob
integration of its own: it suspends, admits and evicts the job itself, and the operator only
honours ``runPolicy.suspend``. Kueue from v0.11 dropped it; there the operator follows Kueue's
contract for an *external framework* (``integrations.externalFrameworks``): this controller
writes the job's Workload and starts or stops the job as Kueue admits or evicts it
(controller/integrations/kueue/contract.py), and the webhook creates queued jobs suspended. The
second route is switched on in both processes by ``--kueue-workloads``.

Where the job's manager lives: MultiKueue's adapter for external kinds reads ``spec.managedBy``
and only that path, and clears it on the copy it makes in a worker cluster. So the MultiKueue
value is kept there (defaulting moves it up from ``runPolicy.managedBy``, training-operator
v1.8.1's place, which every other value keeps); the copy in the worker then carries no manager
at all and is this operator's to run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from shared.kueue_topology import topology_problems
from shared.spec import as_mapping, is_suspended, run_policy

QUEUE_NAME_LABEL: Final = "kueue.x-k8s.io/queue-name"
"""The LocalQueue a job is queued in."""
PRIORITY_CLASS_LABEL: Final = "kueue.x-k8s.io/priority-class"
"""A WorkloadPriorityClass for the job's Workload."""
PREBUILT_WORKLOAD_LABEL: Final = "kueue.x-k8s.io/prebuilt-workload-name"
"""On a job MultiKueue copied into a worker cluster (annotation, or label before Kueue v0.18):
the Workload it made there for it."""
MULTIKUEUE: Final = "kueue.x-k8s.io/multikueue"
"""The ``managedBy`` value of a job MultiKueue dispatches to a worker cluster."""


def queue_name(job: Mapping[str, Any]) -> str:
    """The job's LocalQueue (``kueue.x-k8s.io/queue-name``), "" when it is not queued."""
    labels = as_mapping(as_mapping(job.get("metadata")).get("labels"))
    value = labels.get(QUEUE_NAME_LABEL)
    return value if isinstance(value, str) else ""


def prebuilt_workload(job: Mapping[str, Any]) -> str:
    """The Workload MultiKueue made for this copy of a job, "" for a job of this cluster.

    Kueue ≥ v0.18 writes its name as an annotation (its ``WorkloadIdentifierAnnotations``),
    older releases as a label of the same key; the annotation wins, as in Kueue."""
    meta = as_mapping(job.get("metadata"))
    for where in ("annotations", "labels"):
        value = as_mapping(meta.get(where)).get(PREBUILT_WORKLOAD_LABEL)
        if isinstance(value, str) and value:
            return value
    return ""


def manager(job: Mapping[str, Any]) -> str:
    """Who runs the job: ``spec.managedBy``, else ``spec.runPolicy.managedBy``, else ""."""
    for value in (as_mapping(job.get("spec")).get("managedBy"), run_policy(job).get("managedBy")):
        if isinstance(value, str) and value:
            return value
    return ""


def dispatched_by_multikueue(job: Mapping[str, Any]) -> bool:
    """MultiKueue runs the job in a worker cluster; this cluster only queues it."""
    return manager(job) == MULTIKUEUE


def suspend_for_queue(job: Mapping[str, Any]) -> bool:
    """On CREATE under the Workload route: a queued job that is not suspended yet must be,
    so it waits for Kueue's admission (Kueue's own webhooks do this for the kinds they know)."""
    return bool(queue_name(job)) and not is_suspended(job)


def queueing_problems(
    job: Mapping[str, Any], *, old: Mapping[str, Any] | None
) -> list[tuple[str, str]]:
    """(field path, message) for what Kueue's route cannot honour; [] when it can.

    - A Volcano queue (``runPolicy.schedulingPolicy.queue``) beside a Kueue queue: two quota
      systems would each hold the job back waiting for the other's decision.
    - The LocalQueue changed while the job runs: its quota is held in the first queue's
      ClusterQueue; Kueue allows the change only while the job is suspended.
    - Topology annotations Kueue would refuse on its own kinds (shared/kueue_topology.py): the
      Workload would ask for a placement Kueue cannot read, and the job would wait unexplained.
    """
    problems: list[tuple[str, str]] = []
    queue = queue_name(job)
    volcano_queue = as_mapping(run_policy(job).get("schedulingPolicy")).get("queue")
    if queue and isinstance(volcano_queue, str) and volcano_queue:
        problems.append(
            (
                "spec.runPolicy.schedulingPolicy.queue",
                f"must be empty on a job queued by Kueue (label {QUEUE_NAME_LABEL}={queue!r}; "
                f"got {volcano_queue!r}): Kueue's LocalQueue and a Volcano queue would each wait "
                "for the other; keep one of the two",
            )
        )
    if old is not None and queue_name(old) != queue and not is_suspended(old):
        problems.append(
            (
                f"metadata.labels[{QUEUE_NAME_LABEL}]",
                f"may change only while the job is suspended (was {queue_name(old)!r}, got "
                f"{queue!r}): its quota is held by the first queue",
            )
        )
    if queue:
        problems += topology_problems(job)
    return problems
