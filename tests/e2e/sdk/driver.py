"""Drives the operator with the ``kubeflow-training==1.8.1`` SDK, as its users' code does.

Run with the SDK's own virtualenv (``make sdk-venv``: ``.venv-sdk/bin/python``), never the
project's: the SDK needs a ``kubernetes`` client older than the operator's (see
``tests/e2e/sdk/requirements.txt``). It imports nothing of this project, so what it proves is
what a user's script sees. ``tests/e2e/test_sdk_client.py`` runs it against the local control
plane and asserts on the JSON report it prints on stdout: one entry per SDK call, holding what the
call returned (as the JSON the API server speaks) or the exception it raised, with its chain.

The job is ``examples/v1/train/mx_job_dist_cpu.yaml`` built from the SDK's models, with two
differences a user of the SDK would have: ``jobMode`` left at the model's default (``""``), and
each replica type's ``mxjob-port`` given on the command line (every pod here shares the host's
loopback, see ``localkube.scenarios.demo.on_free_ports``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubernetes
from kubeflow.training import TrainingClient, models
from kubernetes import client

IMAGE = "mxjob/mxnet-examples:1.9.1-cpu"
COMMAND = ["python", "-m", "train_dist"]
WORKER_ARGS = ["--epochs", "5", "--samples", "2048", "--batch-size", "32"]
ANNOTATION = "example.com/updated-by"
TTL_AFTER_UPDATE = 3600


@dataclass(frozen=True)
class Settings:
    """What the test decides: where the control plane is, which job, which ports."""

    kubeconfig: Path
    namespace: str
    name: str
    ports: dict[str, int]
    """``mxjob-port`` per replica type (Scheduler, Server, Worker): free loopback ports."""
    timeout: float
    """Seconds for the job to succeed, and again for its pods to go after ``delete_job``."""


def replica(
    *, replicas: int, port: int, cpu: str, memory: str, args: list[str] | None = None
) -> models.KubeflowOrgV1ReplicaSpec:
    container = client.V1Container(
        name="mxnet",
        image=IMAGE,
        command=COMMAND,
        args=args,
        ports=[client.V1ContainerPort(name="mxjob-port", container_port=port)],
        resources=client.V1ResourceRequirements(requests={"cpu": cpu, "memory": memory}),
    )
    return models.KubeflowOrgV1ReplicaSpec(
        replicas=replicas,
        restart_policy="Never",
        template=client.V1PodTemplateSpec(spec=client.V1PodSpec(containers=[container])),
    )


def train_job(*, name: str, ports: dict[str, int]) -> models.KubeflowOrgV1MXJob:
    """``examples/v1/train/mx_job_dist_cpu.yaml``, written with the SDK's models."""
    return models.KubeflowOrgV1MXJob(
        api_version="kubeflow.org/v1",
        kind="MXJob",
        metadata=client.V1ObjectMeta(name=name),
        spec=models.KubeflowOrgV1MXJobSpec(
            # job_mode left out: the model sends "" (training-operator defaulted it to MXTrain).
            run_policy=models.KubeflowOrgV1RunPolicy(
                clean_pod_policy="Running", active_deadline_seconds=600
            ),
            mx_replica_specs={
                "Scheduler": replica(
                    replicas=1, port=ports["Scheduler"], cpu="250m", memory="512Mi"
                ),
                "Server": replica(replicas=1, port=ports["Server"], cpu="250m", memory="512Mi"),
                "Worker": replica(
                    replicas=2, port=ports["Worker"], cpu="1", memory="1Gi", args=WORKER_ARGS
                ),
            },
        ),
    )


def bad_job(*, name: str, ports: dict[str, int]) -> models.KubeflowOrgV1MXJob:
    """Two schedulers, and workers without an ``mxnet`` container: the webhook refuses both."""
    job = train_job(name=name, ports=ports)
    specs = job.spec.mx_replica_specs
    specs["Scheduler"].replicas = 2
    specs["Worker"].template.spec.containers[0].name = "trainer"
    return job


def as_json(value: Any) -> Any:
    """What the SDK returned, as the API server's JSON (camelCase keys, ISO times)."""
    return client.ApiClient().sanitize_for_serialization(value)


def error_report(error: BaseException) -> dict[str, Any]:
    """The exception as a user sees it: its type, its text, and the whole chain printed.

    The SDK wraps every API error in ``RuntimeError("Failed to create MXJob: ...")`` raised inside
    its ``except``, so the API server's answer (the webhook's message) is the chained context.
    """
    chained = error.__cause__ or error.__context__
    return {
        "type": type(error).__name__,
        "message": str(error),
        "chained": None if chained is None else f"{type(chained).__name__}: {chained}",
        "traceback": "".join(traceback.format_exception(error)),
    }


class Report:
    """One entry per step, in order; a step that raises is recorded and the run goes on."""

    def __init__(self) -> None:
        self.steps: dict[str, Any] = {}

    def step(self, name: str, call: Callable[[], Any]) -> Any:
        started = time.monotonic()
        try:
            result = call()
        except Exception as error:
            self.steps[name] = {"error": error_report(error)}
            return None
        self.steps[name] = {"result": as_json(result), "seconds": time.monotonic() - started}
        return result


def pod_names(pods: list[client.V1Pod]) -> list[str]:
    return sorted(pod.metadata.name for pod in pods)


def wait_gone(sdk: TrainingClient, settings: Settings) -> dict[str, Any]:
    """After ``delete_job``: poll ``get_job`` (until a 404) and ``get_job_pods`` (until none).

    The pods go through kube-controller-manager's garbage collector (owner references), which
    notices a CRD installed moments before only at its next discovery, up to 30 s later.
    """
    started = time.monotonic()
    job_gone = pods_gone = None
    while time.monotonic() - started < settings.timeout:
        if job_gone is None:
            try:
                sdk.get_job(settings.name)
            except RuntimeError as error:
                if getattr(error.__context__, "status", None) != 404:
                    raise
                job_gone = time.monotonic() - started
        if pods_gone is None and not sdk.get_job_pods(settings.name):
            pods_gone = time.monotonic() - started
        if job_gone is not None and pods_gone is not None:
            break
        time.sleep(0.2)
    return {
        "job_gone_after": job_gone,
        "pods_gone_after": pods_gone,
        "pods_left": pod_names(sdk.get_job_pods(settings.name)),
    }


def update(sdk: TrainingClient, name: str) -> None:
    """The SDK's update pattern: read the job, change it, send it back whole."""
    job = sdk.get_job(name)
    job.metadata.annotations = {**(job.metadata.annotations or {}), ANNOTATION: "kubeflow-sdk"}
    job.spec.run_policy.ttl_seconds_after_finished = TTL_AFTER_UPDATE
    sdk.update_job(job, name)


def run(settings: Settings) -> dict[str, Any]:
    sdk = TrainingClient(
        config_file=str(settings.kubeconfig), namespace=settings.namespace, job_kind="MXJob"
    )
    name = settings.name
    report = Report()
    job = train_job(name=name, ports=settings.ports)
    report.steps["sent"] = as_json(job)
    rejected = bad_job(name=f"{name}-bad", ports=settings.ports)
    report.step("create_bad_job", lambda: sdk.create_job(rejected))
    report.step("create_job", lambda: sdk.create_job(job))
    report.step("get_job", lambda: sdk.get_job(name))
    report.step("list_jobs", sdk.list_jobs)
    report.step(
        "wait_for_job_conditions",
        lambda: sdk.wait_for_job_conditions(
            name,
            expected_conditions={"Succeeded"},
            wait_timeout=int(settings.timeout),
            polling_interval=1,
        ),
    )
    report.step("get_job_conditions", lambda: sdk.get_job_conditions(name))
    report.step("is_job_succeeded", lambda: sdk.is_job_succeeded(name))
    report.step("get_job_pods", lambda: pod_names(sdk.get_job_pods(name)))
    report.step("get_job_pods_master", lambda: pod_names(sdk.get_job_pods(name, is_master=True)))
    report.step(
        "get_job_pods_workers", lambda: pod_names(sdk.get_job_pods(name, replica_type="worker"))
    )
    report.step(
        "get_job_pods_worker_1",
        lambda: pod_names(sdk.get_job_pods(name, replica_type="worker", replica_index=1)),
    )
    report.step(
        "get_job_pod_names_scheduler",
        lambda: sorted(sdk.get_job_pod_names(name, replica_type="scheduler")),
    )
    report.step("get_job_logs_master", lambda: sdk.get_job_logs(name)[0])
    report.step(
        "get_job_logs_workers",
        lambda: sdk.get_job_logs(name, is_master=False, replica_type="worker")[0],
    )
    report.step("update_job", lambda: update(sdk, name))
    report.step("get_job_after_update", lambda: sdk.get_job(name))
    report.step("delete_job", lambda: sdk.delete_job(name))
    report.step("after_delete", lambda: wait_gone(sdk, settings))
    return {"kubernetes_client": kubernetes.__version__, "steps": report.steps}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", type=Path, required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--name", default="dist-train-cpu")
    parser.add_argument(
        "--ports", type=json.loads, required=True, help='{"Scheduler": p, "Server": p, ...}'
    )
    parser.add_argument("--timeout", type=float, default=120)
    args = parser.parse_args(argv)
    settings = Settings(
        kubeconfig=args.kubeconfig,
        namespace=args.namespace,
        name=args.name,
        ports={str(k): int(v) for k, v in args.ports.items()},
        timeout=args.timeout,
    )
    out, sys.stdout = sys.stdout, sys.stderr  # whatever the SDK prints stays out of the report
    try:
        report = run(settings)
    finally:
        sys.stdout = out
    json.dump(report, out, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
