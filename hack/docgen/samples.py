"""The example jobs the job-contract page shows the operator's objects for.

The page does not describe the pods, Services and env in words alone: it runs the webhook's
defaulting (``shared/defaults.py``) and the controller's builders (``controller/job/desired.py``)
on these two jobs and prints what they make, so the examples are exactly what a cluster gets.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from controller.job.desired import Slot, build_pod, build_service, desired_slots
from controller.job.view import MXJobView, read_job
from shared.constants import (
    API_VERSION_V1,
    CONTAINER_NAME,
    KIND,
    TUNER_SERVER_KEY_ANNOTATION,
    JobMode,
    ReplicaType,
)
from shared.defaults import apply_defaults

IMAGE = "example.com/mxnet:latest"


def _replica(count: int, annotations: Mapping[str, str] | None = None) -> dict[str, Any]:
    template: dict[str, Any] = {
        "spec": {"containers": [{"name": CONTAINER_NAME, "image": IMAGE}]},
    }
    if annotations:
        template["metadata"] = {"annotations": dict(annotations)}
    return {"replicas": count, "template": template}


def train_job() -> dict[str, Any]:
    """``mnist``: 1 Scheduler, 2 Servers, 2 Workers."""
    return _job(
        "mnist",
        JobMode.MXTRAIN,
        {ReplicaType.SCHEDULER: _replica(1), ReplicaType.SERVER: _replica(2)}
        | {ReplicaType.WORKER: _replica(2)},
    )


def tune_job() -> dict[str, Any]:
    """``tune``: a TunerTracker, 2 TunerServers registering under the key ``cpu-local``, a
    Tuner."""
    key = {TUNER_SERVER_KEY_ANNOTATION: "cpu-local"}
    return _job(
        "tune",
        JobMode.MXTUNE,
        {ReplicaType.TUNER_TRACKER: _replica(1), ReplicaType.TUNER_SERVER: _replica(2, key)}
        | {ReplicaType.TUNER: _replica(1)},
    )


def _job(name: str, mode: JobMode, replicas: Mapping[ReplicaType, Any]) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION_V1,
        "kind": KIND,
        "metadata": {"name": name, "namespace": "default", "uid": "00000000-0000-0000-0000-0"},
        "spec": {
            "jobMode": mode.value,
            "mxReplicaSpecs": {t.value: r for t, r in replicas.items()},
        },
    }


@dataclass(frozen=True)
class Made:
    """What the operator makes of one job: its defaulted view, and per replica its pod and
    Service."""

    view: MXJobView
    pods: dict[Slot, dict[str, Any]]
    services: dict[Slot, dict[str, Any]]

    def slot(self, replica_type: ReplicaType, index: int) -> Slot:
        return next(s for s in self.pods if s.replica_type is replica_type and s.index == index)


def made(job: Mapping[str, Any]) -> Made:
    view = read_job(apply_defaults(job))
    slots = desired_slots(view)
    return Made(
        view=view,
        pods={s: build_pod(view, s) for s in slots},
        services={s: build_service(view, s) for s in slots},
    )


def container_env(pod: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ``env`` of the pod's mxnet container."""
    for container in pod["spec"]["containers"]:
        if container.get("name") == CONTAINER_NAME:
            return list(container.get("env") or [])
    raise ValueError(f"pod {pod['metadata']['name']} has no {CONTAINER_NAME} container")
