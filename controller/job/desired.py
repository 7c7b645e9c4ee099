"""Where a pod is built: an MXJob → the pods and headless Services it should have (pure).

One pod and one Service per replica index, both named ``<job>-<lower type>-<index>``, so that the
``MX_CONFIG``/``DMLC_PS_ROOT_URI`` names the webhook wrote into the env resolve to the right pod.
Everything here is a function of the job's view (its defaulted spec) alone, plus the restart
history a replacement pod carries; reconcile compares the result with the cache and acts on the
difference. Integrations add their part to a pod after it is built (controller/job/hooks.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from controller.job.observed import ATTEMPT_ANNOTATION
from controller.job.ownership import owner_reference
from controller.job.view import MXJobView
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
from shared.defaults import DEFAULT_PORT
from shared.jsontree import copy_json
from shared.naming import job_role, replica_name
from shared.spec import as_mapping


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


def desired_slots(job: MXJobView) -> list[Slot]:
    """Every replica the spec asks for, in canonical type order, then by index."""
    return [
        Slot(replica.type, index, replica_name(job.name, replica.type, index))
        for replica in job.replicas
        for index in range(replica.replicas)
    ]


def job_labels(job: MXJobView) -> dict[str, str]:
    """The labels every object of the job carries (and the informers' selectors use)."""
    return {LABEL_OPERATOR_NAME: OPERATOR_NAME, LABEL_JOB_NAME: job.name}


def replica_labels(job: MXJobView, replica_type: ReplicaType, index: int) -> dict[str, str]:
    """The labels of one replica's pod and Service."""
    mode = job.mode.value if job.mode else ""
    return {
        **job_labels(job),
        LABEL_REPLICA_TYPE: replica_type.value.lower(),
        LABEL_REPLICA_INDEX: str(index),
        LABEL_JOB_ROLE: job_role(mode, replica_type, job.single_node),
    }


def replica_selector(job: MXJobView, replica_type: ReplicaType) -> str:
    """A label selector for the pods of one replica type (``replicaStatuses[].selector``)."""
    return f"{LABEL_JOB_NAME}={job.name},{LABEL_REPLICA_TYPE}={replica_type.value.lower()}"


def pod_restart_policy(policy: RestartPolicy) -> str:
    """The pod's restartPolicy: ExitCode is the controller's business, so the pod gets Never."""
    return RestartPolicy.NEVER.value if policy is RestartPolicy.EXIT_CODE else policy.value


def build_pod(
    job: MXJobView,
    slot: Slot,
    *,
    attempt: int = 0,
) -> dict[str, Any]:
    """The pod of one replica: the replica's template with our name, labels and owner.

    The template's own labels and annotations are kept (ours win on a clash); its spec is
    copied as is (the webhook already injected the env) with the restart policy translated.
    The pod carries the tracking finalizer (controller/job/tracking.py): deleted by anyone, it
    stays until the controller has counted how it ended. A gang scheduler's fields are added by
    its integration (Integration.decorate_pod).
    """
    replica = job.replica(slot.replica_type.value)
    template = replica.template if replica is not None else {}
    template_meta = as_mapping(template.get("metadata"))
    spec = copy_json(dict(as_mapping(template.get("spec"))))
    policy = replica.restart_policy if replica is not None else RestartPolicy.NEVER
    spec["restartPolicy"] = pod_restart_policy(policy)
    annotations = {
        **{str(k): str(v) for k, v in as_mapping(template_meta.get("annotations")).items()},
    }
    if attempt > 0:
        annotations[ATTEMPT_ANNOTATION] = str(attempt)
    metadata: dict[str, Any] = {
        "name": slot.name,
        "namespace": job.namespace,
        "labels": {
            **{str(k): str(v) for k, v in as_mapping(template_meta.get("labels")).items()},
            **replica_labels(job, slot.replica_type, slot.index),
        },
        "ownerReferences": [owner_reference(job)],
        "finalizers": [TRACKING_FINALIZER],
    }
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def build_service(job: MXJobView, slot: Slot) -> dict[str, Any]:
    """The headless Service of one replica: its stable DNS name, even before the pod is ready.

    ``publishNotReadyAddresses`` because MXNet's scheduler and servers must find each other
    while they start, before any readiness probe could pass.
    """
    labels = replica_labels(job, slot.replica_type, slot.index)
    replica = job.replica(slot.replica_type.value)
    port = replica.port if replica is not None else DEFAULT_PORT
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": slot.name,
            "namespace": job.namespace,
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
