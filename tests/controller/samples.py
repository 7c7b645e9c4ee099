"""MXJobs and pods as the controller sees them, for the controller's unit tests: presets over
the tests' factories (tests/helpers/mxjobs.py, tests/helpers/pods.py).

Jobs come defaulted (as the mutating webhook stores them) with the metadata the API server adds;
pods are built by ``controller.job.desired`` and given the status a kubelet would write.
"""

from __future__ import annotations

import copy
import datetime
from typing import Any

from controller.job.desired import Slot, build_pod, build_service, desired_slots
from controller.job.view import MXJobView, read_job
from shared.defaults import apply_defaults
from tests.helpers import pods
from tests.helpers.mxjobs import TRAIN, mxjob

Obj = dict[str, Any]

NOW_TEXT = pods.NOW_TEXT
NOW = datetime.datetime.fromisoformat(NOW_TEXT)
"""The tests' clock: when sample containers started (``NOW_TEXT`` as a datetime)."""


def later(seconds: float) -> datetime.datetime:
    return NOW + datetime.timedelta(seconds=seconds)


def job(
    name: str = "mnist",
    *,
    mode: str = "MXTrain",
    replicas: dict[str, int] | None = None,
    restart_policy: str | None = None,
    restart_scope: str | None = None,
    run_policy: dict[str, Any] | None = None,
    success_policy: str | None = None,
    status: Obj | None = None,
    namespace: str = "ns",
    uid: str = "job-uid",
) -> Obj:
    """A defaulted MXJob as stored (``replicas`` default: Scheduler 1, Server 1, Worker 2).

    ``restart_scope`` is set on every replica type (``Replica`` on every one but the
    Scheduler, which ps-lite never readmits)."""
    return mxjob(
        name,
        namespace=namespace,
        uid=uid,
        metadata={"generation": 1, "resourceVersion": "10"},
        mode=mode,
        replicas=replicas or TRAIN,
        restart_policy=restart_policy,
        restart_scope=restart_scope,
        run_policy=run_policy or None,
        success_policy=success_policy,
        status=status,
        defaulted=True,
    )


def stored_before_the_new_defaults(job_obj: Obj) -> Obj:
    """``job_obj`` as the webhook stored it before it wrote ``restartScope`` and
    ``runPolicy.disruptionPolicy`` (they were read as absent then): a copy without them."""
    old = copy.deepcopy(job_obj)
    for replica in old["spec"]["mxReplicaSpecs"].values():
        del replica["restartScope"]
    del old["spec"]["runPolicy"]["disruptionPolicy"]
    return old


def view_of(job_obj: Obj, *, violations: tuple[str, ...] = ()) -> MXJobView:
    """The controller's view of a job as stored (its spec defaulted, as reconcile reads it)."""
    return read_job(job_obj, defaulted=apply_defaults(job_obj), violations=violations)


def slot(job_obj: Obj, key: str) -> Slot:
    """The slot ``<lower type>-<index>`` of a job."""
    for found in desired_slots(view_of(job_obj)):
        if found.key == key:
            return found
    raise KeyError(key)


def pod(
    job_obj: Obj,
    key: str,
    *,
    phase: str = "Running",
    exit_code: int | None = None,
    restarts: int = 0,
    reason: str | None = None,
    terminating: bool = False,
    uid: str | None = None,
    last_exit_code: int | None = None,
    attempt: int = 0,
    finished_at: str | None = None,
    disruption: str | None = None,
) -> Obj:
    """The pod the controller makes for slot ``key``, stored (``uid``, ``terminating``), with
    the status a kubelet writes (:func:`tests.helpers.pods.pod_status`; ``disruption``: the
    reason of its ``DisruptionTarget`` condition)."""
    built = build_pod(view_of(job_obj), slot(job_obj, key), attempt=attempt)
    built["metadata"]["uid"] = uid or f"pod-{key}"
    built["metadata"]["resourceVersion"] = "20"
    if terminating:
        built["metadata"]["deletionTimestamp"] = NOW_TEXT
    built["status"] = pods.pod_status(
        phase=phase,
        exit_code=exit_code,
        restarts=restarts,
        reason=reason,
        last_exit_code=last_exit_code,
        finished_at=finished_at,
        disruption=disruption,
    )
    return built


def with_running_sidecar(pod_obj: Obj, *, restart_policy: str) -> Obj:
    """``pod_obj`` as the kubelet shows it while a second container (a proxy) runs on."""
    pod_obj["spec"]["restartPolicy"] = restart_policy
    pod_obj["spec"]["containers"].append({"name": "proxy", "image": "proxy:1"})
    pod_obj["status"]["phase"] = "Running"
    pod_obj["status"]["containerStatuses"].append(pods.container_status("proxy", started_at="now"))
    return pod_obj


def pods_all(job_obj: Obj, **overrides: Any) -> list[Obj]:
    """A pod per slot, every one Running (``overrides`` apply to all)."""
    return [pod(job_obj, s.key, **overrides) for s in desired_slots(view_of(job_obj))]


def training_operator_labels(job_obj: Obj, key: str) -> dict[str, str]:
    """The labels kubeflow training-operator v1.8.1 puts on a replica's pod and Service.

    ``GenLabels`` (operator-name is its controller name, ``mxjob-controller``) plus the
    lower-case replica type and the index (pkg/controller.v1/common/pod.go, service.go).
    """
    rtype, index = key.rsplit("-", 1)
    return {
        "training.kubeflow.org/operator-name": "mxjob-controller",
        "training.kubeflow.org/job-name": job_obj["metadata"]["name"],
        "training.kubeflow.org/replica-type": rtype,
        "training.kubeflow.org/replica-index": index,
    }


def training_operator_pod(job_obj: Obj, key: str, **status: Any) -> Obj:
    """A pod of slot ``key`` as training-operator v1.8.1 made it (its Servers are "master")."""
    made = pod(job_obj, key, **status)
    labels = training_operator_labels(job_obj, key)
    if key.startswith("server-"):
        labels["training.kubeflow.org/job-role"] = "master"
    made["metadata"]["labels"] = labels
    made["metadata"]["uid"] = f"to-pod-{key}"
    return made


def training_operator_service(job_obj: Obj, key: str) -> Obj:
    """The headless Service of slot ``key`` as training-operator v1.8.1 made it."""
    built = build_service(view_of(job_obj), slot(job_obj, key))
    labels = training_operator_labels(job_obj, key)
    built["metadata"]["labels"] = labels
    built["metadata"]["uid"] = f"to-svc-{key}"
    built["metadata"]["resourceVersion"] = "20"
    built["spec"] = {
        "clusterIP": "None",
        "selector": dict(labels),
        "ports": [{"name": "mxjob-port", "port": 9091, "protocol": "TCP", "targetPort": 9091}],
    }
    return built
