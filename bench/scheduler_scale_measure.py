"""One size of ``bench.scheduler_scale``: submit the jobs, wait for each step through the driver's
watches, end the schedulers through kwok, and read the clocks and the costs.

The controller's writes are its own count (``mxjob_controller_api_writes_total``: its client
counts every write it sends, Events included); its reconciles and dropped Events come from its
``/metrics`` too. Every cost is a difference of the counters read before the first job and
after the last clean-up, and the controller's memory is read once more when every pod is cached.
"""

from __future__ import annotations

import collections
import concurrent.futures
import re
import time
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from bench.common import (
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
from bench.controller_scale_phases import RESOURCES, _condition, submit_jobs
from controller.runtime.client import KubeClient, mxjobs_path, pods_path, services_path
from localkube.plane.controlplane import ControlPlane
from localkube.thirdparty.kwok import EXIT_CODE_ANNOTATION

PODS_PER_JOB: Final = 4
TARGET_PODS: Final = 20_000
CONTROLLER_GROUPS: Final = ("", "kubeflow.org")


_WRITES_SERIES: Final = re.compile(
    r'^mxjob_controller_api_writes_total\{resource="(?P<resource>[^"]*)",verb="(?P<verb>[^"]*)"\}'
    r" (?P<value>\S+)$"
)


def own_writes(metrics_text: str) -> collections.Counter[RequestKey]:
    """``mxjob_controller_api_writes_total`` (every write the controller sent) by verb and
    resource."""
    counts: collections.Counter[RequestKey] = collections.Counter()
    for line in metrics_text.splitlines():
        match = _WRITES_SERIES.match(line)
        if match is not None:
            counts[(match["verb"].upper(), match["resource"])] += int(float(match["value"]))
    return counts


_RECONCILE_SERIES: Final = re.compile(
    r"^controller_runtime_reconcile_total\{[^}]*\} (?P<value>\S+)$"
)
_DROPPED_SERIES: Final = re.compile(
    r'^mxjob_controller_events_dropped_total\{reason="[^"]*"\} (?P<value>\S+)$'
)


def events_dropped(metrics_text: str) -> int:
    """``mxjob_controller_events_dropped_total``, every reason together."""
    return sum(
        int(float(match["value"]))
        for line in metrics_text.splitlines()
        if (match := _DROPPED_SERIES.match(line)) is not None
    )


def reconciles(metrics_text: str) -> int:
    """``controller_runtime_reconcile_total``, every result together.

    A job is reconciled once per change seen and once per resync period (every cached job is
    queued again then), so a long run reconciles each job more often: CPU per reconcile tells a
    cost that grows with the run's length from one that grows with its size.
    """
    return sum(
        int(float(match["value"]))
        for line in metrics_text.splitlines()
        if (match := _RECONCILE_SERIES.match(line)) is not None
    )


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        return str(response.read().decode())


def poll(
    counter: WatchCounter,
    predicate: Callable[[Mapping[str, Any]], bool],
    *,
    timeout: float,
    what: str,
    interval: float = 0.25,
) -> float:
    """Wait until ``predicate(objects)`` holds, checked every ``interval``; return when it did.

    Not on every watch event (as ``WatchCounter.wait`` does): a predicate over 20,000 pods,
    tested on each of their events, would cost the driver minutes of the CPU being measured.
    """
    deadline = time.monotonic() + timeout
    while True:
        with counter.changed:
            if predicate(counter.objects):
                return time.monotonic()
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


def every_pod_bound(pods: Mapping[str, Any], wanted: int) -> bool:
    return len(pods) >= wanted and all((p.get("spec") or {}).get("nodeName") for p in pods.values())


def every_job(jobs: Mapping[str, Any], wanted: int, condition: str) -> bool:
    return len(jobs) == wanted and all(_condition(job, condition) for job in jobs.values())


def only_schedulers_left(pods: Mapping[str, Any], wanted: int) -> bool:
    return len(pods) == wanted and all(name.endswith("-scheduler-0") for name in pods)


def end_pod(client: KubeClient, namespace: str, name: str, *, exit_code: int) -> None:
    """Tell kwok how the pod's containers end (``localkube.thirdparty.kwok.EXIT_STAGE``)."""
    client.request(
        "PATCH",
        f"{pods_path(namespace)}/{name}",
        body={"metadata": {"annotations": {EXIT_CODE_ANNOTATION: str(exit_code)}}},
        content_type="application/merge-patch+json",
    )


def _per_job(value: float, jobs: int, *, scale: float = 1.0, digits: int = 2) -> float:
    return round(value / jobs * scale, digits)


@dataclass(frozen=True)
class Workload:
    """One size's jobs: who submits them, into which namespace, from how many threads, and how
    long each wait may take."""

    driver: CountingClient
    namespace: str
    names: list[str]
    submit_threads: int
    timeout: float


@dataclass(frozen=True)
class Clocks:
    """The run's moments (``time.monotonic``): every time reported is a difference of two."""

    started: float
    submitted: float
    created: float
    """The driver's watches have seen every pod and Service."""
    bound: float
    running: float
    ending: float
    """The schedulers are told to exit 0."""
    finished: float
    """Every job Succeeded and only the schedulers left."""


@dataclass(frozen=True)
class Before:
    """The counters before the first job: the run's costs are differences from these."""

    process: ProcessSample
    cpu: dict[str, float]
    requests: collections.Counter[RequestKey]
    own_writes: collections.Counter[RequestKey]
    events_dropped: int
    reconciles: int


@dataclass(frozen=True)
class Costs:
    """What the run cost: the controller's process at the end, and differences of the counters."""

    end: ProcessSample
    seen: collections.Counter[RequestKey]
    """What the API server saw on the controller's resources, less the driver's requests."""
    ours: collections.Counter[RequestKey]
    """The controller's writes: its own count plus the core group's Events."""
    reconciles: int
    events_dropped: int
    control_plane_cpu_s: dict[str, float]


def _read_before(plane: ControlPlane, *, controller_pid: int, metrics_port: int) -> Before:
    """The controller's ``/proc`` and ``/metrics``, the control plane's CPU and request counts."""
    process = sample_process(controller_pid)
    cpu = component_cpu(plane)
    requests = apiserver_requests(plane, groups=CONTROLLER_GROUPS)
    metrics = scrape(metrics_port)
    return Before(
        process, cpu, requests, own_writes(metrics), events_dropped(metrics), reconciles(metrics)
    )


def _drive(
    work: Workload,
    *,
    controller_pid: int,
    pods: WatchCounter,
    services: WatchCounter,
    mxjobs: WatchCounter,
) -> tuple[Clocks, ProcessSample]:
    """Submit every job and wait for each step, then end the schedulers and wait for the clean-up.

    Returns the clocks, and the controller's process once every job is Running: every pod is
    cached then, with its status, which is what its memory is judged on.
    """
    jobs, timeout = len(work.names), work.timeout
    wanted = jobs * PODS_PER_JOB
    started = time.monotonic()
    submit_jobs(work.driver, work.namespace, work.names, threads=work.submit_threads)
    submitted = time.monotonic()
    poll(pods, lambda o: len(o) >= wanted, timeout=timeout, what=f"{wanted} pods")
    poll(services, lambda o: len(o) >= wanted, timeout=timeout, what=f"{wanted} Services")
    created = max(*pods.first_seen.values(), *services.first_seen.values())
    bound = poll(
        pods, lambda o: every_pod_bound(o, wanted), timeout=timeout, what="every pod bound"
    )
    running = poll(
        mxjobs,
        lambda o: every_job(o, jobs, "Running"),
        timeout=timeout,
        what="every job Running",
    )
    time.sleep(1.0)  # the status writes of the last jobs land; every pod is cached
    cached = sample_process(controller_pid)
    ending = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(work.submit_threads) as pool:
        list(
            pool.map(
                lambda name: end_pod(
                    work.driver, work.namespace, f"{name}-scheduler-0", exit_code=0
                ),
                work.names,
            )
        )
    poll(
        mxjobs,
        lambda o: every_job(o, jobs, "Succeeded"),
        timeout=timeout,
        what="every job Succeeded",
    )
    finished = poll(
        pods,
        lambda o: only_schedulers_left(o, jobs),
        timeout=timeout,
        what="only the schedulers left",
    )
    return Clocks(started, submitted, created, bound, running, ending, finished), cached


def _read_after(
    plane: ControlPlane,
    before: Before,
    *,
    controller_pid: int,
    metrics_port: int,
    driver: CountingClient,
    driver_0: Mapping[RequestKey, int],
) -> Costs:
    """The same counters again, as differences from ``before`` (the driver's from ``driver_0``)."""
    end = sample_process(controller_pid)
    requests = delta(apiserver_requests(plane, groups=CONTROLLER_GROUPS), before.requests)
    # What the API server saw on the controller's resources, less the driver's requests:
    # it still holds kube-scheduler's bindings and kwok's pod status writes and deletes.
    seen = subtract(requests, delta(driver.snapshot(), driver_0))
    metrics_text = scrape(metrics_port)
    done = reconciles(metrics_text) - before.reconciles
    ours = delta(own_writes(metrics_text), before.own_writes)
    cpu = component_cpu(plane)
    return Costs(
        end=end,
        seen=seen,
        ours=ours,
        reconciles=done,
        events_dropped=events_dropped(metrics_text) - before.events_dropped,
        control_plane_cpu_s={k: round(v - before.cpu.get(k, 0.0), 2) for k, v in cpu.items()},
    )


def _figures(
    jobs: int, clocks: Clocks, *, before: Before, cached: ProcessSample, costs: Costs
) -> dict[str, Any]:
    """One size's report: its clocks, and its costs in total and per job."""
    wanted = jobs * PODS_PER_JOB
    started, ending, finished = clocks.started, clocks.ending, clocks.finished
    start, end, done, ours = before.process, costs.end, costs.reconciles, costs.ours
    controller_cpu = end.cpu_seconds - start.cpu_seconds
    growth_kib_per_pod = (cached.rss_mib - start.rss_mib) * 1024 / wanted
    return {
        "jobs": jobs,
        "pods": wanted,
        "services": wanted,
        "submit_seconds": round(clocks.submitted - started, 3),
        "all_created_s": round(clocks.created - started, 3),
        "all_bound_s": round(clocks.bound - started, 3),
        "all_running_s": round(clocks.running - started, 3),
        "succeeded_and_cleaned_s": round(finished - ending, 3),
        "total_s": round(finished - started, 3),
        "ms_per_job": {
            "created": _per_job(clocks.created - started, jobs, scale=1000),
            "running": _per_job(clocks.running - started, jobs, scale=1000),
            "succeeded_and_cleaned": _per_job(finished - ending, jobs, scale=1000),
        },
        "api_server_requests": keyed(costs.seen, (*RESOURCES, "nodes")),
        "controller_writes": keyed(ours, RESOURCES),
        "controller_writes_per_job": _per_job(sum(ours.values()), jobs),
        "controller_events_dropped": costs.events_dropped,
        "controller_cpu_s": round(controller_cpu, 2),
        "controller_cpu_ms_per_job": _per_job(controller_cpu, jobs, scale=1000),
        "controller_reconciles_per_job": _per_job(done, jobs),
        "controller_cpu_ms_per_reconcile": round(controller_cpu / done * 1000, 3) if done else 0.0,
        "controller_start_rss_mib": round(start.rss_mib, 1),
        "controller_rss_every_pod_cached_mib": round(cached.rss_mib, 1),
        "controller_peak_rss_mib": round(end.peak_rss_mib, 1),
        "rss_growth_kib_per_pod": round(growth_kib_per_pod, 2),
        "predicted_rss_at_target_mib": round(
            start.rss_mib + growth_kib_per_pod * TARGET_PODS / 1024, 1
        ),
        "control_plane_cpu_s": costs.control_plane_cpu_s,
    }


def measure(
    *,
    plane: ControlPlane,
    client: KubeClient,
    controller_pid: int,
    metrics_port: int,
    namespace: str,
    jobs: int,
    submit_threads: int,
    timeout: float,
) -> dict[str, Any]:
    """Submit ``jobs`` jobs, run them to Succeeded and cleaned; the clocks and the costs."""
    driver = CountingClient(client)
    names = [f"job-{number}" for number in range(jobs)]
    work = Workload(driver, namespace, names, submit_threads=submit_threads, timeout=timeout)
    before = _read_before(plane, controller_pid=controller_pid, metrics_port=metrics_port)
    paths = (pods_path(namespace), services_path(namespace), mxjobs_path(namespace))
    with watching(driver, *paths) as (pods, services, mxjobs):
        time.sleep(0.5)  # the watches are open before the first job
        driver_0 = driver.snapshot()
        clocks, cached = _drive(
            work, controller_pid=controller_pid, pods=pods, services=services, mxjobs=mxjobs
        )
        time.sleep(1.0)
        costs = _read_after(
            plane,
            before,
            controller_pid=controller_pid,
            metrics_port=metrics_port,
            driver=driver,
            driver_0=driver_0,
        )
    return _figures(jobs, clocks, before=before, cached=cached, costs=costs)
