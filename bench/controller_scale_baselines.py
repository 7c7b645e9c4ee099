"""The baselines of ``bench.controller_scale``: the API server alone creating what the controller
creates (its pods and Services), and the raw baseline creating everything a user and the
operator create (the MXJobs too, as stored with the webhooks), without a controller.

Both stop their clock as phase A does, when the driver's watches have seen every object, so the
two sides of each ratio pay for the same observer.
"""

from __future__ import annotations

import collections
import concurrent.futures
import copy
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from bench.common import CountingClient, component_cpu, watching
from bench.controller_scale_phases import delete_namespace, lifecycle_job
from controller.job.desired import build_pod, build_service, desired_slots
from controller.job.view import read_job
from controller.runtime.client import KubeClient, mxjobs_path, pods_path, services_path
from localkube.base.api import ensure_namespace
from localkube.plane.controlplane import ControlPlane
from shared.defaults import apply_defaults


def baseline_objects(namespace: str, jobs: int) -> list[tuple[str, dict[str, Any]]]:
    """The pods and Services the controller makes for ``jobs`` jobs, minus owner references.

    And minus the pods' tracking finalizer: no controller runs to remove it, and the namespace
    is deleted after the baseline.
    """
    objects: list[tuple[str, dict[str, Any]]] = []
    for number in range(jobs):
        defaulted = apply_defaults(lifecycle_job(f"job-{number}"))
        defaulted["metadata"].update(namespace=namespace, uid=str(uuid.uuid4()))
        job = read_job(defaulted)
        for slot in desired_slots(job):
            for path, built in (
                (pods_path(namespace), build_pod(job, slot)),
                (services_path(namespace), build_service(job, slot)),
            ):
                body = copy.deepcopy(built)
                body["metadata"].pop("ownerReferences", None)
                body["metadata"].pop("finalizers", None)  # nothing would remove them
                objects.append((path, body))
    return objects


def create_all(client: KubeClient, requests: Sequence[tuple[str, Any]], *, threads: int) -> float:
    """POST every ``(path, body)`` from ``threads`` threads; return the wall time."""

    def post(item: tuple[str, Any]) -> None:
        client.request("POST", item[0], body=item[1])

    started = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        list(pool.map(post, requests))
    return time.perf_counter() - started


def measure_baseline(
    *,
    plane: ControlPlane,
    client: KubeClient,
    namespace: str,
    objects: Sequence[tuple[str, Any]],
    paths: Sequence[str],
    threads: int,
    timeout: float,
) -> dict[str, Any]:
    """POST ``objects`` from ``threads`` threads; the clock stops when watches on ``paths`` saw all.

    Observed exactly as phase A is: the clock stops when the driver's watches have seen every
    object, so both sides pay for the same watch streams on the same two cores.
    """
    wanted = collections.Counter(path for path, _ in objects)
    with watching(CountingClient(client), *paths) as counters:
        time.sleep(0.5)  # the watches are open before the first object
        cpu_0 = component_cpu(plane)
        started = time.monotonic()
        posted_s = create_all(client, objects, threads=threads)
        for path, counter in zip(paths, counters, strict=True):
            count = wanted[path]
            counter.wait(lambda o, n=count: len(o) >= n, timeout=timeout, what=f"{count} objects")
        seconds = max(t for counter in counters for t in counter.first_seen.values()) - started
        cpu = component_cpu(plane)
    return {
        "objects": len(objects),
        "threads": threads,
        "seconds": round(seconds, 3),
        "posted_seconds": round(posted_s, 3),
        "objects_per_s": round(len(objects) / seconds, 1),
        "control_plane_cpu_s": {k: round(v - cpu_0.get(k, 0.0), 2) for k, v in cpu.items()},
    }


def raw_baseline(
    *, plane: ControlPlane, client: KubeClient, jobs: int, threads: int, timeout: float
) -> dict[str, Any]:
    """Every object a user and the operator create for ``jobs`` jobs, POSTed without webhooks.

    The MXJobs (defaulted, as stored with the webhooks), then their pods and Services, from
    ``threads`` threads, in a namespace of its own that is deleted afterwards.
    """
    namespace = f"raw-{uuid.uuid4().hex[:6]}"
    ensure_namespace(client, namespace)
    objects = [
        (mxjobs_path(namespace), apply_defaults(lifecycle_job(f"job-{number}")))
        for number in range(jobs)
    ] + baseline_objects(namespace, jobs)
    try:
        return measure_baseline(
            plane=plane,
            client=client,
            namespace=namespace,
            objects=objects,
            paths=(mxjobs_path(namespace), pods_path(namespace), services_path(namespace)),
            threads=threads,
            timeout=timeout,
        )
    finally:
        delete_namespace(client, namespace, timeout=timeout)


def combine_raw(runs: Sequence[Mapping[str, Any]], *, warmup: Mapping[str, Any]) -> dict[str, Any]:
    """The raw baseline's figures: the mean of ``runs`` (each kept under ``runs``)."""
    count = len(runs)
    seconds = sum(r["seconds"] for r in runs) / count
    components = sorted({k for r in runs for k in r["control_plane_cpu_s"]})
    return {
        "objects": runs[0]["objects"],
        "threads": runs[0]["threads"],
        "seconds": round(seconds, 3),
        "posted_seconds": round(sum(r["posted_seconds"] for r in runs) / count, 3),
        "objects_per_s": round(runs[0]["objects"] / seconds, 1),
        "control_plane_cpu_s": {
            k: round(sum(r["control_plane_cpu_s"].get(k, 0.0) for r in runs) / count, 2)
            for k in components
        },
        "runs": list(runs),
        "warmup": dict(warmup),
    }
