"""Phases A and B of ``bench.controller_scale``: one controller on the jobs both controllers
run (``lifecycle_job``), in a namespace of its own, with the clocks and the costs of each phase.

Every cost is a difference of two readings (the controller's ``/proc``, the API server's request
counts, the driver's and the test kubelet's own counts), so the readings are taken at the same
points whichever controller runs: phase A's start, its end, and phase B's end.
"""

from __future__ import annotations

import collections
import concurrent.futures
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bench.admission_overhead import scale_job
from bench.common import (
    WRITE_VERBS,
    CountingClient,
    ProcessSample,
    RequestKey,
    WatchCounter,
    apiserver_requests,
    component_cpu,
    delta,
    keyed,
    sample_process,
    subtract,
    watching,
)
from controller.runtime.client import ApiError, KubeClient, mxjobs_path, pods_path, services_path
from localkube.base.api import ensure_namespace
from localkube.kubelet.core import TestKubelet
from localkube.plane.controlplane import ControlPlane

TARGET_EXTRA_WRITES = 3
TARGET_RSS_MIB = 200.0
OBJECTS_PER_JOB = 8  # 4 pods + 4 Services
RESOURCES = ("pods", "services", "events", "mxjobs", "configmaps")
"""What the controller reads and writes; configmaps: each job's CA for its progress reports
(controller/integrations/statusca/)."""


def lifecycle_job(name: str) -> dict[str, Any]:
    """``scale_job`` with what both controllers must be told to act alike.

    ``cleanPodPolicy: Running`` is this operator's default but not training-operator's (None);
    ``terminationGracePeriodSeconds: 0`` because this operator gives a finished job's running
    pods their grace period to end by themselves before deleting them (training-operator deletes
    them at once): with 0 both clean up as soon as they can, so "Succeeded and cleaned" measures
    the controllers, not a grace period.
    """
    job = scale_job(name)
    job["spec"]["runPolicy"] = {"cleanPodPolicy": "Running"}
    for spec in job["spec"]["mxReplicaSpecs"].values():
        spec["template"]["spec"]["terminationGracePeriodSeconds"] = 0
    return job


def submit_jobs(client: KubeClient, namespace: str, names: Sequence[str], *, threads: int) -> None:
    """POST a ``lifecycle_job`` of each name from ``threads`` threads at once, as users would."""
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        list(
            pool.map(
                lambda name: client.request(
                    "POST", mxjobs_path(namespace), body=lifecycle_job(name)
                ),
                names,
            )
        )


def _condition(job: Mapping[str, Any], kind: str) -> bool:
    """Whether the job has condition ``kind`` True (both operators write the same conditions)."""
    conditions = (job.get("status") or {}).get("conditions") or []
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions)


def delete_namespace(client: KubeClient, namespace: str, *, timeout: float) -> None:
    """Delete ``namespace`` and wait until it is gone (its objects with it)."""
    client.request("DELETE", f"/api/v1/namespaces/{namespace}")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            client.request("GET", f"/api/v1/namespaces/{namespace}")
        except ApiError as error:
            if error.status == 404:
                return
            raise
        time.sleep(0.5)
    raise TimeoutError(f"namespace {namespace} still there after {timeout:.0f} s")


def _attributed(
    total: Mapping[RequestKey, int], *clients: Mapping[RequestKey, int]
) -> collections.Counter[RequestKey]:
    """The API server's count minus what our own clients asked for."""
    return subtract(total, *clients)


def _writes(counts: Mapping[RequestKey, int]) -> int:
    return sum(
        n
        for (verb, res), n in counts.items()
        if verb in WRITE_VERBS and res.split("/")[0] in RESOURCES
    )


def _lists(counts: Mapping[RequestKey, int]) -> int:
    return sum(n for (verb, res), n in counts.items() if verb == "LIST" and res in RESOURCES)


@dataclass(frozen=True)
class Side:
    """One controller measured on the same jobs: a name, and how to start and stop it."""

    name: str
    start: Callable[[str], int]
    """Given the namespace to watch, start the controller (ready) and return its pid."""
    stop: Callable[[int], None]
    events_dropped: Callable[[], int]
    """Events the running controller gave up on so far, by its own account."""


@dataclass(frozen=True)
class Reading:
    """The counters a phase's costs are differences of, read at one moment."""

    process: ProcessSample
    """The controller's CPU seconds and memory so far."""
    cpu: dict[str, float]
    """CPU seconds of each control-plane component so far."""
    requests: collections.Counter[RequestKey]
    """The API server's count of every request so far (``apiserver_request_total``)."""
    driver: collections.Counter[RequestKey]
    """The driver's count of its own requests so far, to be subtracted from the API server's."""


@dataclass(frozen=True)
class Scene:
    """Where one side runs: its plane, namespace and controller, the jobs, and the time allowed."""

    plane: ControlPlane
    driver: CountingClient
    namespace: str
    pid: int
    names: list[str]
    submit_threads: int
    timeout: float

    @property
    def jobs(self) -> int:
        return len(self.names)


def _phase_a(
    scene: Scene, start: Reading, *, pods: WatchCounter, services: WatchCounter
) -> tuple[dict[str, Any], Reading]:
    """Submit every job; the clock stops when the driver's watches have seen every pod and Service.

    Returns phase A's figures and the reading at its end, where phase B's costs start.
    """
    jobs = scene.jobs
    started = time.monotonic()
    submit_jobs(scene.driver, scene.namespace, scene.names, threads=scene.submit_threads)
    submitted = time.monotonic()
    wanted = jobs * 4
    pods.wait(lambda o: len(o) >= wanted, timeout=scene.timeout, what=f"{wanted} pods")
    services.wait(lambda o: len(o) >= wanted, timeout=scene.timeout, what=f"{wanted} services")
    last_seen = max(*pods.first_seen.values(), *services.first_seen.values())
    created_s = last_seen - started
    time.sleep(1.0)  # let status writes and events of the last jobs land
    end = Reading(
        process=sample_process(scene.pid),
        requests=apiserver_requests(scene.plane),
        driver=scene.driver.snapshot(),
        cpu=component_cpu(scene.plane),
    )
    every_request = delta(end.requests, start.requests)
    controller_a = _attributed(every_request, delta(end.driver, start.driver))
    cpu_s = end.process.cpu_seconds - start.process.cpu_seconds
    return {
        "submit_threads": scene.submit_threads,
        "submit_seconds": round(submitted - started, 3),
        "seconds": round(created_s, 3),
        "controller_requests": keyed(controller_a, RESOURCES),
        # Every client's, every resource: what a profile of the API server is divided by.
        "apiserver_requests": sum(every_request.values()),
        "apiserver_requests_by_kind": {
            f"{verb} {res}": n for (verb, res), n in sorted(every_request.items()) if n > 0
        },
        "controller_writes_per_job": round(_writes(controller_a) / jobs, 2),
        "objects_created_per_job": OBJECTS_PER_JOB,
        "meets_write_target": _writes(controller_a) / jobs <= OBJECTS_PER_JOB + TARGET_EXTRA_WRITES,
        "controller_lists": _lists(controller_a),
        "controller_cpu_s": round(cpu_s, 2),
        "controller_cpu_ms_per_job": round(cpu_s / jobs * 1000, 2),
        "controller_rss_mib": round(end.process.rss_mib, 1),
        "controller_peak_rss_mib": round(end.process.peak_rss_mib, 1),
        "meets_rss_target": end.process.peak_rss_mib <= TARGET_RSS_MIB,
        "pods_cached": wanted,
        "control_plane_cpu_s": {k: round(v - start.cpu.get(k, 0.0), 2) for k, v in end.cpu.items()},
    }, end


@dataclass(frozen=True)
class LifecycleClocks:
    """Phase B's moments (``time.monotonic``), from which its times are differences."""

    started: float
    """The test kubelet started."""
    running: float
    """Every job Running."""
    ending: float
    """The schedulers are told to exit 0."""
    finished: float
    """Every job Succeeded and only the schedulers left."""


def _run_to_succeeded(
    scene: Scene, kubelet: TestKubelet, *, pods: WatchCounter, mxjobs: WatchCounter
) -> LifecycleClocks:
    """Start the test kubelet, wait for every job Running, end every scheduler with exit code 0,
    and wait until every job is Succeeded and its running pods are gone."""
    started = time.monotonic()
    kubelet.start()
    mxjobs.wait(
        lambda o: len(o) == scene.jobs and all(_condition(j, "Running") for j in o.values()),
        timeout=scene.timeout,
        what="every job Running",
    )
    running = time.monotonic()
    ending = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(scene.submit_threads) as pool:
        list(
            pool.map(
                lambda name: kubelet.terminate(scene.namespace, f"{name}-scheduler-0", exit_code=0),
                scene.names,
            )
        )
    mxjobs.wait(
        lambda o: all(_condition(j, "Succeeded") for j in o.values()),
        timeout=scene.timeout,
        what="every job Succeeded",
    )
    pods.wait(
        lambda o: len(o) == scene.jobs and all(name.endswith("-scheduler-0") for name in o),
        timeout=scene.timeout,
        what="only the schedulers left",
    )
    return LifecycleClocks(started, running, ending, time.monotonic())


def _phase_b(
    scene: Scene,
    clocks: LifecycleClocks,
    *,
    kubelet_client: CountingClient,
    start: Reading,
    after_a: Reading,
    events_dropped: Callable[[], int],
) -> dict[str, Any]:
    """Phase B's figures, and the whole run's (phase A's start to phase B's end).

    The test kubelet's own requests are subtracted too: it binds and runs every pod.
    """
    time.sleep(1.0)
    b_sample = sample_process(scene.pid)
    requests_b = apiserver_requests(scene.plane)
    driver_b = scene.driver.snapshot()
    kubelet_counts = kubelet_client.snapshot()
    controller_b = _attributed(
        delta(requests_b, after_a.requests), delta(driver_b, after_a.driver), kubelet_counts
    )
    controller_all = _attributed(
        delta(requests_b, start.requests), delta(driver_b, start.driver), kubelet_counts
    )
    jobs = scene.jobs
    return {
        "phase_b": {
            "all_running_s": round(clocks.running - clocks.started, 3),
            "succeeded_and_cleaned_s": round(clocks.finished - clocks.ending, 3),
            "total_s": round(clocks.finished - clocks.started, 3),
            "kubelet_requests": keyed(kubelet_counts, (*RESOURCES, "nodes")),
            "controller_requests": keyed(controller_b, RESOURCES),
            "controller_writes_per_job": round(_writes(controller_b) / jobs, 2),
            "controller_lists": _lists(controller_b),
            "controller_cpu_s": round(b_sample.cpu_seconds - after_a.process.cpu_seconds, 2),
            "controller_peak_rss_mib": round(b_sample.peak_rss_mib, 1),
        },
        "whole_run": {
            "controller_requests": keyed(controller_all, RESOURCES),
            "controller_writes_per_job": round(_writes(controller_all) / jobs, 2),
            "controller_lists_after_start": _lists(controller_all),
            "controller_cpu_s": round(b_sample.cpu_seconds - start.process.cpu_seconds, 2),
            "controller_peak_rss_mib": round(b_sample.peak_rss_mib, 1),
            "meets_rss_target": b_sample.peak_rss_mib <= TARGET_RSS_MIB,
            "events_dropped": events_dropped(),
        },
    }


def measure(
    side: Side,
    *,
    plane: ControlPlane,
    client: KubeClient,
    jobs: int,
    submit_threads: int,
    lifecycle: bool,
    timeout: float,
) -> dict[str, Any]:
    """Phase A and (with ``lifecycle``) phase B of ``side``, in a namespace of its own.

    The namespace is deleted afterwards (and its deletion awaited), so the next side starts on
    an API server and etcd holding what they held before this one.
    """
    driver = CountingClient(client)
    suffix = uuid.uuid4().hex[:6]
    namespace = f"scale-{suffix}"
    ensure_namespace(driver, namespace)
    kubelet: TestKubelet | None = None
    pid = side.start(namespace)
    scene = Scene(
        plane=plane,
        driver=driver,
        namespace=namespace,
        pid=pid,
        names=[f"job-{number}" for number in range(jobs)],
        submit_threads=submit_threads,
        timeout=timeout,
    )
    report: dict[str, Any] = {"controller": side.name}
    try:
        start = Reading(
            process=sample_process(pid),
            cpu=component_cpu(plane),
            requests=apiserver_requests(plane),
            driver=driver.snapshot(),
        )
        paths = (pods_path(namespace), services_path(namespace), mxjobs_path(namespace))
        with watching(driver, *paths) as (pods, services, mxjobs):
            time.sleep(0.5)  # the watches are open before the first job
            phase_a, after_a = _phase_a(scene, start, pods=pods, services=services)
            report["phase_a"] = phase_a
            if not lifecycle:
                return report
            # -- phase B: run to Succeeded and clean up -----------------------------------------
            kubelet_client = CountingClient(client)
            kubelet = TestKubelet(
                kubelet_client, node_name=f"bench-node-{suffix}", namespaces=(namespace,)
            )
            clocks = _run_to_succeeded(scene, kubelet, pods=pods, mxjobs=mxjobs)
            report.update(
                _phase_b(
                    scene,
                    clocks,
                    kubelet_client=kubelet_client,
                    start=start,
                    after_a=after_a,
                    events_dropped=side.events_dropped,
                )
            )
    finally:
        if kubelet is not None:
            kubelet.stop()
        try:
            # While the controller runs: this one lets go of its pods' tracking finalizers.
            delete_namespace(client, namespace, timeout=timeout)
        finally:
            side.stop(pid)
    return report
