"""Jobs that fail on a real node the way users' jobs do, for this operator and, side by side,
for training-operator v1.8.1: an image that cannot be pulled and a worker past its memory
limit. The same builders on both sides make the comparison in docs/explanation/recovery.md fair."""

from __future__ import annotations

import json
import time
from typing import Any

from localkube.base.api import Api
from tests.e2e.admission_traffic import single_worker_job
from tests.e2e.real_node_fixtures import InstalledCluster

UNPULLABLE = "127.0.0.1:1/mxjob-tests/missing:1"
"""An image on a registry address that refuses connections at once (loopback, nothing there)."""


UNPULLABLE_CASE = "the image cannot be pulled"
OOM_CASE = "the worker OOM-killed at its 64 MiB limit every time (`backoffLimit` 1)"
"""The cases both operators run (test_real_node_failures.py, bench_training_operator_failures.py),
named alike so that docs/explanation/recovery.md puts both in one row."""


def unpullable_job(name: str) -> dict[str, Any]:
    """One worker whose image can never be pulled (pulled ``Always``, never from a cache)."""
    job = single_worker_job(name, UNPULLABLE, ["true"])
    job["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0][
        "imagePullPolicy"] = "Always"  # fmt: skip
    return job


def oom_job(name: str, image: str, *, backoff_limit: int) -> dict[str, Any]:
    """One worker writing 256 MiB (not only reserving it) past a 64 MiB limit, so the kernel
    kills it every time (exit 137, ``OOMKilled``), under ``restartPolicy: ExitCode``."""
    job = single_worker_job(name, image, ["python", "-c", "b = b'x' * (256 << 20)"])
    worker = job["spec"]["mxReplicaSpecs"]["Worker"]
    worker["restartPolicy"] = "ExitCode"
    worker["template"]["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "10m", "memory": "64Mi"}, "limits": {"memory": "64Mi"}}  # fmt: skip
    job["spec"]["runPolicy"] = {"backoffLimit": backoff_limit}
    return job


def mxjob(api: Api, namespace: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = api.request(
        "GET", f"/apis/kubeflow.org/v1/namespaces/{namespace}/mxjobs/{name}"
    )
    return found


def condition(job: dict[str, Any], ctype: str) -> dict[str, Any]:
    conditions = job.get("status", {}).get("conditions", [])
    return next((c for c in conditions if c["type"] == ctype), {})


def events_of(api: Api, namespace: str, name: str, *, kind: str = "Warning") -> list[str]:
    """``reason: message`` of the Events of type ``kind`` about the object called ``name``."""
    events = api.request(
        "GET", f"/api/v1/namespaces/{namespace}/events",
        query=[("fieldSelector", f"involvedObject.name={name}")],
    )["items"]  # fmt: skip
    return [f"{e['reason']}: {e['message']}" for e in events if e["type"] == kind]


def create(installed: InstalledCluster, namespace: str, job: dict[str, Any]) -> float:
    """``job`` created; the moment before ``kubectl create`` (its pods are made after it)."""
    before = time.monotonic()
    installed.plane.kubectl("create", "-n", namespace, "-f", "-", input_text=json.dumps(job))
    return before
