"""Item 2: what admission costs end to end: MXJobs created with the webhooks registered vs not.

A real API server (the benchmark's own control plane) with the CRD installed and the webhook
served by gunicorn over TLS (``LocalOperator``, as ``make dev-up``), no controller. The same
client creates ``jobs`` MXJobs (the 1 scheduler, 1 server, 2 workers job of the controller
benchmark) from a few threads with the webhooks registered as installed (a creation is reviewed
by the mutating webhook alone), and again with them removed. The segments run as A B C C B A
(half the jobs each), so a drift over the run (etcd growing, a neighbour's load) falls on every
configuration equally.

C is a third configuration that splits the difference in two: webhooks removed, but the client
sends each job already defaulted (``shared.defaults.apply_defaults``), so the API server stores
the same object as with the webhooks. ``defaulted / removed`` is what the defaults themselves
cost the API server (the injected env makes a stored job several times larger, by design);
``registered / defaulted`` is what calling the webhook costs. The target is on
``registered / removed``, the product of the two.

Each segment checks it measured what it claims: the webhook's own review counter must grow by
one review per job with the webhooks registered and by none without them.
"""

from __future__ import annotations

import concurrent.futures
import functools
import ssl
import time
import urllib.request
from collections.abc import Callable, Sequence
from typing import Any, Literal

from bench.common import jobs_main, ratio
from controller.runtime.client import KubeClient, mxjobs_path
from localkube.base.api import ensure_namespace
from localkube.base.processes import stop_process
from localkube.plane.controlplane import ControlPlane
from localkube.plane.operator import LocalOperator
from shared.defaults import apply_defaults
from shared.progress_pods import inject_progress
from webhook.settings import WebhookSettings

TARGET_RATIO = 1.3

Configuration = Literal["registered", "removed", "defaulted"]
ORDER: tuple[Configuration, ...] = (
    "registered",
    "removed",
    "defaulted",
    "defaulted",
    "removed",
    "registered",
)


def scale_job(name: str) -> dict[str, Any]:
    """1 scheduler, 1 server, 2 workers: the job of items 2 and 3."""

    def template(script: str) -> dict[str, Any]:
        return {
            "spec": {
                "containers": [
                    {"name": "mxnet", "image": "mxjob/mxnet:cpu", "command": ["python", script]}
                ]
            }
        }

    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "MXJob",
        "metadata": {"name": name},
        "spec": {
            "jobMode": "MXTrain",
            "mxReplicaSpecs": {
                "Scheduler": {"replicas": 1, "template": template("scheduler.py")},
                "Server": {"replicas": 1, "template": template("server.py")},
                "Worker": {"replicas": 2, "template": template("worker.py")},
            },
        },
    }


def defaulted_scale_job(name: str, *, namespace: str) -> dict[str, Any]:
    """The job of ``scale_job`` as the mutating webhook would store it in ``namespace``: the
    defaults, and what its pods report progress with (the webhook's default settings)."""
    job = apply_defaults(scale_job(name))
    inject_progress(
        job, operator_namespace=WebhookSettings().operator_namespace, namespace=namespace
    )
    return job


def create_jobs(
    client: KubeClient,
    namespace: str,
    names: Sequence[str],
    *,
    threads: int,
    build: Callable[[str], dict[str, Any]] = scale_job,
) -> float:
    """Create one job per name from ``threads`` threads; return the wall time in seconds.

    The bodies are built before the clock starts: the client's own work is not measured.
    """
    path = mxjobs_path(namespace)
    bodies = [build(name) for name in names]

    def create(body: dict[str, Any]) -> None:
        client.request("POST", path, body=body)

    started = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        list(pool.map(create, bodies))
    return time.perf_counter() - started


def webhook_reviews(operator: LocalOperator, port: int) -> int:
    """``mxjob_webhook_reviews_total`` summed over mutate and validate."""
    context = ssl.create_default_context(cafile=str(operator.dir / "ca.crt"))
    with urllib.request.urlopen(
        f"https://127.0.0.1:{port}/metrics", context=context, timeout=10
    ) as response:
        text = response.read().decode()
    total = 0.0
    for line in text.splitlines():
        if line.startswith("mxjob_webhook_reviews_total{") and 'endpoint="convert"' not in line:
            total += float(line.rsplit(" ", 1)[1])
    return int(total)


def wait_registered(
    client: KubeClient, operator: LocalOperator, port: int, namespace: str, registered: bool
) -> None:
    """Create probe jobs until the API server's view of the webhooks is the wanted one.

    The API server learns of (un)registration through its own informer, a moment after kubectl
    returns; a segment started before then would measure the other configuration.
    """
    deadline = time.monotonic() + 30
    attempt = 0
    while True:
        before = webhook_reviews(operator, port)
        name = f"probe-{'on' if registered else 'off'}-{attempt}"
        client.request("POST", mxjobs_path(namespace), body=scale_job(name))
        client.request("DELETE", mxjobs_path(namespace, name))
        reviewed = webhook_reviews(operator, port) > before
        if reviewed == registered:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"webhooks still {'off' if registered else 'on'} after 30 s")
        attempt += 1
        time.sleep(0.2)


def run(*, plane: ControlPlane, jobs: int = 500, threads: int = 4) -> dict[str, Any]:
    """Measure on ``plane`` (which must have no webhooks of ours registered yet)."""
    client = KubeClient.from_kubeconfig(plane.kubeconfig, pool_size=threads + 2)
    operator = LocalOperator(plane)
    webhook_pid, port = operator.start_webhook()
    segments: list[dict[str, Any]] = []
    try:
        operator.install_crd(webhook_port=port)
        namespace = f"admission-{int(time.time())}"
        ensure_namespace(client, namespace)
        half = max(1, jobs // 2)
        for number, configuration in enumerate(ORDER):
            registered = configuration == "registered"
            if registered:
                operator.register_webhooks(webhook_port=port)
            else:
                operator.unregister_webhooks()
            wait_registered(client, operator, port, namespace, registered)
            names = [f"j{number}-{configuration}-{i}" for i in range(half)]
            build = (
                functools.partial(defaulted_scale_job, namespace=namespace)
                if configuration == "defaulted"
                else scale_job
            )
            before = webhook_reviews(operator, port)
            seconds = create_jobs(client, namespace, names, threads=threads, build=build)
            reviews = webhook_reviews(operator, port) - before
            expected = half if registered else 0  # one call per creation: the mutating one
            if reviews != expected:
                raise RuntimeError(
                    f"segment {number} (webhooks {configuration}) saw {reviews} reviews, "
                    f"expected {expected}"
                )
            segments.append(
                {"configuration": configuration, "jobs": half, "seconds": round(seconds, 3)}
            )
    finally:
        operator.unregister_webhooks()
        stop_process(webhook_pid)
    seconds_of = {
        configuration: sum(s["seconds"] for s in segments if s["configuration"] == configuration)
        for configuration in ("registered", "removed", "defaulted")
    }
    count = sum(s["jobs"] for s in segments if s["configuration"] == "registered")
    value = ratio(seconds_of["registered"], seconds_of["removed"])
    return {
        "benchmark": "admission_overhead",
        "jobs_per_configuration": count,
        "threads": threads,
        "with_webhooks_s": round(seconds_of["registered"], 3),
        "without_webhooks_s": round(seconds_of["removed"], 3),
        "defaulted_without_webhooks_s": round(seconds_of["defaulted"], 3),
        "with_webhooks_jobs_per_s": round(count / seconds_of["registered"], 1),
        "without_webhooks_jobs_per_s": round(count / seconds_of["removed"], 1),
        "defaulted_without_webhooks_jobs_per_s": round(count / seconds_of["defaulted"], 1),
        "ratio": round(value, 3),
        "meets_target": value <= TARGET_RATIO,
        "defaults_ratio": round(ratio(seconds_of["defaulted"], seconds_of["removed"]), 3),
        "webhook_calls_ratio": round(ratio(seconds_of["registered"], seconds_of["defaulted"]), 3),
        "segments": segments,
    }


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    return jobs_main(
        argv,
        module="bench.admission_overhead",
        description="MXJob creation with and without admission.",
        plane_name="admission",
        run=run,
        default_threads=4,
        jobs_help="jobs per configuration",
    )


if __name__ == "__main__":
    main()
