"""The controller at 100 to 5,000 jobs on a real scheduler: does its cost per job stay flat?

On a fresh control plane per size that also runs kube-scheduler (as released, with its client
rate raised and the cluster-wide default topology spreading off: see :data:`SCHEDULER_CONFIG`)
and kwok (``localkube.thirdparty.kwok``: simulated nodes of 110 pods,
enough for every pod, whose pods kwok moves through their phases), with this operator's webhook
registered as installed and ``mxjob-controller`` watching the run's namespace:

1. ``jobs`` MXJobs of controller_scale's ``lifecycle_job`` (1 scheduler, 1 server, 2 workers)
   are submitted at once from several threads; clocks stop when the driver's watches (never a
   LIST) have seen every pod and Service, every pod bound by kube-scheduler, every job Running
   (kwok's pod-ready stage makes a bound pod Running with running containers);
2. then the driver annotates every scheduler pod with an exit code of 0 (kwok's exit stage,
   ``localkube.thirdparty.kwok.EXIT_STAGE``, ends its container with it) and the clock stops when
   every job is Succeeded and only the finished schedulers are left (``cleanPodPolicy: Running``).

Per job: seconds, the controller's writes and CPU milliseconds. The controller's writes are its
own count (``mxjob_controller_api_writes_total``) plus the core group's Event writes from
``apiserver_request_total`` (kube-scheduler's Events are ``events.k8s.io``): the API server's
counters alone cannot tell the controller's pod deletions from kwok's, which confirms a deleted
pod as a kubelet would. The API server's view is reported beside it.

Memory: the controller's RSS once every job is Running (every pod cached, with its status) and
its peak (``VmHWM``); the growth per pod over the RSS it started with predicts the RSS at
:data:`TARGET_PODS` pods.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import re
import time
import urllib.request
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from bench.common import (
    WRITE_VERBS,
    CountingClient,
    RequestKey,
    WatchCounter,
    apiserver_requests,
    bench_plane,
    component_cpu,
    delta,
    emit,
    keyed,
    machine,
    sample_process,
    subtract,
    watching,
)
from bench.controller_scale import RESOURCES, _condition, submit_jobs
from controller.kube import KubeClient, mxjobs_path, pods_path, services_path
from localkube.base.api import ensure_namespace
from localkube.plane.controlplane import ControlPlane
from localkube.plane.operator import LocalOperator, stop_process
from localkube.thirdparty.kwok import EXIT_CODE_ANNOTATION, LocalKwok, nodes_for

SIZES: Final = (100, 1000, 5000)
PODS_PER_JOB: Final = 4
TARGET_PODS: Final = 20_000
TARGET_RSS_MIB: Final = 400.0
FLAT_TOLERANCE: Final = 1.25
"""A per-job figure is flat when the largest size's is within 25 % of the smallest size's."""
SCHEDULER_CONFIG: Final[Mapping[str, Any]] = {
    "clientConnection": {"qps": 500, "burst": 1000},
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "pluginConfig": [
                {
                    "name": "PodTopologySpread",
                    "args": {"defaultingType": "List", "defaultConstraints": []},
                }
            ],
        }
    ],
}
"""kube-scheduler's settings for this benchmark; two differ from its defaults, so that the
scheduler is not the clock of a 20,000-pod run:

- its client is limited to 50 requests/s by default (one binding per pod); large clusters raise
  it the same way;
- PodTopologySpread's cluster-wide default constraints (spread by host and zone the pods that a
  Service, ReplicaSet or StatefulSet selects) are off. For every pod they look up the Services
  that select it and count its peers on every node, which grows with the Services and pods of
  the namespace: measured in one namespace of this benchmark, its pre-score step took 28 ms per
  pod with 12,000 pods placed, and binding fell to 15 pods/s. Each replica Service of an MXJob
  selects exactly one pod, so the spreading has nothing to spread for these pods. Users with many
  jobs in one namespace can turn it off the same way (docs/operations.md)."""
CONTROLLER_GROUPS: Final = ("", "kubeflow.org")


_WRITES_SERIES: Final = re.compile(
    r'^mxjob_controller_api_writes_total\{resource="(?P<resource>[^"]*)",verb="(?P<verb>[^"]*)"\}'
    r" (?P<value>\S+)$"
)


def own_writes(metrics_text: str) -> collections.Counter[RequestKey]:
    """``mxjob_controller_api_writes_total`` (every write but Events) by verb and resource."""
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


def event_writes(counts: Mapping[RequestKey, int]) -> collections.Counter[RequestKey]:
    """The core group's Event writes: the controller's alone on this plane (kube-scheduler
    writes ``events.k8s.io`` Events, kwok's stages write none)."""
    return collections.Counter(
        {
            (verb, res): n
            for (verb, res), n in counts.items()
            if res == "events" and verb in WRITE_VERBS
        }
    )


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
    wanted = jobs * PODS_PER_JOB
    names = [f"job-{number}" for number in range(jobs)]
    start = sample_process(controller_pid)
    cpu_0 = component_cpu(plane)
    requests_0 = apiserver_requests(plane, groups=CONTROLLER_GROUPS)
    metrics_0 = scrape(metrics_port)
    own_0, dropped_0 = own_writes(metrics_0), events_dropped(metrics_0)
    reconciles_0 = reconciles(metrics_0)
    paths = (pods_path(namespace), services_path(namespace), mxjobs_path(namespace))
    with watching(driver, *paths) as (pods, services, mxjobs):
        time.sleep(0.5)  # the watches are open before the first job
        driver_0 = driver.snapshot()
        started = time.monotonic()
        submit_jobs(driver, namespace, names, threads=submit_threads)
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
        with concurrent.futures.ThreadPoolExecutor(submit_threads) as pool:
            list(
                pool.map(
                    lambda name: end_pod(driver, namespace, f"{name}-scheduler-0", exit_code=0),
                    names,
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
        time.sleep(1.0)
        end = sample_process(controller_pid)
        requests = delta(apiserver_requests(plane, groups=CONTROLLER_GROUPS), requests_0)
        # What the API server saw on the controller's resources, less the driver's requests:
        # it still holds kube-scheduler's bindings and kwok's pod status writes and deletes.
        seen = subtract(requests, delta(driver.snapshot(), driver_0))
        metrics_text = scrape(metrics_port)
        done = reconciles(metrics_text) - reconciles_0
        ours = delta(own_writes(metrics_text), own_0) + event_writes(seen)
        cpu = component_cpu(plane)
    controller_cpu = end.cpu_seconds - start.cpu_seconds
    growth_kib_per_pod = (cached.rss_mib - start.rss_mib) * 1024 / wanted
    return {
        "jobs": jobs,
        "pods": wanted,
        "services": wanted,
        "submit_seconds": round(submitted - started, 3),
        "all_created_s": round(created - started, 3),
        "all_bound_s": round(bound - started, 3),
        "all_running_s": round(running - started, 3),
        "succeeded_and_cleaned_s": round(finished - ending, 3),
        "total_s": round(finished - started, 3),
        "ms_per_job": {
            "created": _per_job(created - started, jobs, scale=1000),
            "running": _per_job(running - started, jobs, scale=1000),
            "succeeded_and_cleaned": _per_job(finished - ending, jobs, scale=1000),
        },
        "api_server_requests": keyed(seen, (*RESOURCES, "nodes")),
        "controller_writes": keyed(ours, RESOURCES),
        "controller_writes_per_job": _per_job(sum(ours.values()), jobs),
        "controller_events_dropped": events_dropped(metrics_text) - dropped_0,
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
        "control_plane_cpu_s": {k: round(v - cpu_0.get(k, 0.0), 2) for k, v in cpu.items()},
    }


def run(*, jobs: int, submit_threads: int = 8) -> dict[str, Any]:
    """One size on a fresh plane: kube-scheduler, kwok nodes, the webhook and the controller."""
    timeout = 120 + jobs * 1.0
    plane = bench_plane(
        f"scheduler-scale-{jobs}", scheduler=True, scheduler_config=SCHEDULER_CONFIG
    )
    kwok = LocalKwok(plane)
    operator = LocalOperator(plane)
    webhook_pid = controller_pid = 0
    try:
        client = KubeClient.from_kubeconfig(plane.kubeconfig, pool_size=submit_threads + 4)
        kwok_pid = kwok.start().pid
        nodes = kwok.add_nodes(client, nodes_for(jobs * PODS_PER_JOB), timeout=timeout)
        webhook_pid, port = operator.start_webhook()
        operator.install_crd(webhook_port=port)
        operator.register_webhooks(webhook_port=port)
        namespace = f"sched-{uuid.uuid4().hex[:6]}"
        ensure_namespace(client, namespace)
        process, metrics_port, _ = operator.start_controller(
            f"--namespace={namespace}",
            "--log-format=json",
            log_name="controller.log",
            ready_path="/readyz",
            ready_timeout=60,
        )
        controller_pid = process.pid
        kwok_0 = sample_process(kwok_pid)
        report = measure(
            plane=plane,
            client=client,
            controller_pid=controller_pid,
            metrics_port=metrics_port,
            namespace=namespace,
            jobs=jobs,
            submit_threads=submit_threads,
            timeout=timeout,
        )
        kwok_1 = sample_process(kwok_pid)
        report["nodes"] = len(nodes)
        report["kwok_cpu_s"] = round(kwok_1.cpu_seconds - kwok_0.cpu_seconds, 2)
        report["machine"] = machine(plane)
        return report
    finally:
        for pid in (controller_pid, webhook_pid):
            if pid:
                stop_process(pid)
        kwok.stop()
        plane.down()


FLAT_FIGURES: Final = (
    "controller_writes_per_job",
    "controller_cpu_ms_per_job",
    "rss_growth_kib_per_pod",
)


def flatness(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Each per-job figure of the largest size over the smallest's, and whether it is flat.

    Times per job are reported but not judged: on two shared cores the API server, etcd,
    kube-scheduler and kwok set the pace, and their cost per object grows with what they hold.
    """
    if len(runs) < 2:
        return {}
    smallest, largest = min(runs, key=lambda r: r["jobs"]), max(runs, key=lambda r: r["jobs"])
    result: dict[str, Any] = {"from_jobs": smallest["jobs"], "to_jobs": largest["jobs"]}
    for figure in (*FLAT_FIGURES, "ms_per_job.running", "ms_per_job.succeeded_and_cleaned"):
        small, large = _figure(smallest, figure), _figure(largest, figure)
        growth = large / small if small > 0 else float("inf")
        result[figure] = {
            "ratio": round(growth, 2),
            "flat": growth <= FLAT_TOLERANCE,
            "judged": figure in FLAT_FIGURES,
        }
    return result


def _figure(run: Mapping[str, Any], path: str) -> float:
    value: Any = run
    for part in path.split("."):
        value = value[part]
    return float(value)


def command_line(sizes: Sequence[int]) -> str:
    return ".venv/bin/python -m bench.scheduler_scale --jobs " + " ".join(map(str, sizes))


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--jobs", type=int, nargs="+", default=list(SIZES), help="sizes (one fresh plane each)"
    )
    parser.add_argument("--submit-threads", type=int, default=8)
    parser.add_argument("--output", type=Path, help="write the report as JSON here")
    args = parser.parse_args(argv)
    started = time.monotonic()
    runs = [run(jobs=size, submit_threads=args.submit_threads) for size in args.jobs]
    largest = max(runs, key=lambda r: r["jobs"])
    report = {
        "benchmark": "scheduler_scale",
        "runs": runs,
        "flatness": flatness(runs),
        "target_rss_mib": TARGET_RSS_MIB,
        "target_pods": TARGET_PODS,
        "predicted_rss_at_target_mib": largest["predicted_rss_at_target_mib"],
        "meets_rss_target": largest["predicted_rss_at_target_mib"] <= TARGET_RSS_MIB
        and all(
            r["controller_peak_rss_mib"] <= TARGET_RSS_MIB for r in runs if r["pods"] >= TARGET_PODS
        ),
        "machine": runs[0]["machine"],
        "command": command_line(args.jobs),
        "duration_s": round(time.monotonic() - started),
    }
    return emit(report, args.output)


if __name__ == "__main__":
    main()
