"""Where a pod is built: an MXJob → the pods and headless Services it should have (pure).

One pod and one Service per replica index, both named ``<job>-<lower type>-<index>``, so that the
``MX_CONFIG``/``DMLC_PS_ROOT_URI`` names the webhook wrote into the env resolve to the right pod.
Everything here is a function of the (defaulted) job alone, plus the restart history a
replacement pod carries; reconcile compares the result with the cache and acts on the
difference.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from controller.integrations.gang.podgroups import GangScheduler, join_pod
from controller.job.observed import ATTEMPT_ANNOTATION, RESTARTS_BEFORE_ANNOTATION
from controller.job.ownership import owner_reference
from shared.constants import (
    LABEL_JOB_NAME,
    LABEL_JOB_ROLE,
    LABEL_OPERATOR_NAME,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
    OPERATOR_NAME,
    PORT_NAME,
    TRACKING_FINALIZER,
    ReplicaType,
    RestartPolicy,
)
from shared.jsontree import copy_json
from shared.naming import job_role, replica_name
from shared.spec import (
    as_mapping,
    is_single_node,
    job_mode,
    job_name,
    replica_count,
    replica_port,
    replica_specs,
    replica_template,
    restart_policy,
)


@dataclass(frozen=True, order=True)
class Slot:
    """One replica of a job: a type and an index, and the name its pod and Service share."""

    replica_type: ReplicaType
    index: int
    name: str

    @property
    def key(self) -> str:
        """``<lower type>-<index>``, as :attr:`controller.job.observed.PodView.slot`."""
        return f"{self.replica_type.value.lower()}-{self.index}"


def desired_slots(job: Mapping[str, Any]) -> list[Slot]:
    """Every replica the spec asks for, in canonical type order, then by index."""
    name = job_name(job)
    slots = []
    for rtype in replica_specs(job):
        canonical = ReplicaType(rtype)
        for index in range(replica_count(job, rtype)):
            slots.append(Slot(canonical, index, replica_name(name, canonical, index)))
    return slots


def job_labels(job: Mapping[str, Any]) -> dict[str, str]:
    """The labels every object of the job carries (and the informers' selectors use)."""
    return {LABEL_OPERATOR_NAME: OPERATOR_NAME, LABEL_JOB_NAME: job_name(job)}


def replica_labels(job: Mapping[str, Any], replica_type: ReplicaType, index: int) -> dict[str, str]:
    """The labels of one replica's pod and Service."""
    mode = job_mode(job)
    return {
        **job_labels(job),
        LABEL_REPLICA_TYPE: replica_type.value.lower(),
        LABEL_REPLICA_INDEX: str(index),
        LABEL_JOB_ROLE: job_role(mode.value if mode else "", replica_type, is_single_node(job)),
    }


def replica_selector(job: Mapping[str, Any], replica_type: ReplicaType) -> str:
    """A label selector for the pods of one replica type (``replicaStatuses[].selector``)."""
    return f"{LABEL_JOB_NAME}={job_name(job)},{LABEL_REPLICA_TYPE}={replica_type.value.lower()}"


def pod_restart_policy(policy: RestartPolicy) -> str:
    """The pod's restartPolicy: ExitCode is the controller's business, so the pod gets Never."""
    return RestartPolicy.NEVER.value if policy is RestartPolicy.EXIT_CODE else policy.value


def build_pod(
    job: Mapping[str, Any],
    slot: Slot,
    *,
    restarts_before: int = 0,
    attempt: int = 0,
    gang: GangScheduler = "none",
) -> dict[str, Any]:
    """The pod of one replica: the replica's template with our name, labels and owner.

    The template's own labels and annotations are kept (ours win on a clash); its spec is
    copied as is (the webhook already injected the env) with the restart policy translated,
    and joined to the job's gang when a gang scheduler is in use
    (:mod:`controller.integrations.gang.podgroups`). The pod carries the tracking finalizer
    (controller/job/tracking.py): deleted by anyone, it stays until the controller has counted how
    it ended.
    """
    template = replica_template(job, slot.replica_type) or {}
    template_meta = as_mapping(template.get("metadata"))
    spec = copy_json(dict(as_mapping(template.get("spec"))))
    spec["restartPolicy"] = pod_restart_policy(restart_policy(job, slot.replica_type))
    annotations = {
        **{str(k): str(v) for k, v in as_mapping(template_meta.get("annotations")).items()},
    }
    if restarts_before > 0:
        annotations[RESTARTS_BEFORE_ANNOTATION] = str(restarts_before)
    if attempt > 0:
        annotations[ATTEMPT_ANNOTATION] = str(attempt)
    metadata: dict[str, Any] = {
        "name": slot.name,
        "namespace": as_mapping(job.get("metadata")).get("namespace"),
        "labels": {
            **{str(k): str(v) for k, v in as_mapping(template_meta.get("labels")).items()},
            **replica_labels(job, slot.replica_type, slot.index),
        },
        "ownerReferences": [owner_reference(job)],
        "finalizers": [TRACKING_FINALIZER],
    }
    if annotations:
        metadata["annotations"] = annotations
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}
    join_pod(pod, job, gang, replica_type=slot.replica_type.value.lower())
    return pod


def build_service(job: Mapping[str, Any], slot: Slot) -> dict[str, Any]:
    """The headless Service of one replica: its stable DNS name, even before the pod is ready.

    ``publishNotReadyAddresses`` because MXNet's scheduler and servers must find each other
    while they start, before any readiness probe could pass.
    """
    labels = replica_labels(job, slot.replica_type, slot.index)
    port = replica_port(job, slot.replica_type)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": slot.name,
            "namespace": as_mapping(job.get("metadata")).get("namespace"),
            "labels": labels,
            "ownerReferences": [owner_reference(job)],
        },
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": {
                LABEL_JOB_NAME: labels[LABEL_JOB_NAME],
                LABEL_REPLICA_TYPE: labels[LABEL_REPLICA_TYPE],
                LABEL_REPLICA_INDEX: labels[LABEL_REPLICA_INDEX],
            },
            "ports": [{"name": PORT_NAME, "port": port, "targetPort": port, "protocol": "TCP"}],
        },
    }


def service_adoption_patch(
    service: Mapping[str, Any], desired: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The JSON merge patch that makes an existing Service of a slot what we would build, or None.

    A Service kubeflow training-operator made for a job this controller took over selects its
    pods by ``operator-name=mxjob-controller`` too, and does not publish not-ready addresses: a
    pod this controller creates for the slot (a retry) would fall outside it, and a starting one
    would not resolve. The Service is kept (its name and DNS record stay) and its selector,
    ``publishNotReadyAddresses`` and our labels are set; keys only it had are removed (None).
    """
    spec = as_mapping(service.get("spec"))
    wanted_spec = as_mapping(desired.get("spec"))
    selector = as_mapping(spec.get("selector"))
    wanted_selector = as_mapping(wanted_spec.get("selector"))
    labels = as_mapping(as_mapping(service.get("metadata")).get("labels"))
    wanted_labels = as_mapping(as_mapping(desired.get("metadata")).get("labels"))
    patch_spec: dict[str, Any] = {}
    if dict(selector) != dict(wanted_selector):
        patch_spec["selector"] = {
            **{key: None for key in selector if key not in wanted_selector},
            **wanted_selector,
        }
    wanted_publish = wanted_spec.get("publishNotReadyAddresses")
    if spec.get("publishNotReadyAddresses") != wanted_publish:
        patch_spec["publishNotReadyAddresses"] = wanted_publish
    if not patch_spec:
        return None
    patch: dict[str, Any] = {"spec": patch_spec}
    missing_labels = {k: v for k, v in wanted_labels.items() if labels.get(k) != v}
    if missing_labels:
        patch["metadata"] = {"labels": missing_labels}
    return patch
