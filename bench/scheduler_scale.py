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
own count (``mxjob_controller_api_writes_total``: its client counts every write, Events
included): the API server's counters alone cannot tell the controller's pod deletions from
kwok's, which confirms a deleted pod as a kubelet would. The API server's view is reported
beside it.

One size's measurement is ``bench.scheduler_scale_measure``; this module starts its plane and
components, and judges the sizes together.

Memory: the controller's RSS once every job is Running (every pod cached, with its status) and
its peak (``VmHWM``); the growth per pod over the RSS it started with predicts the RSS at
:data:`TARGET_PODS` pods.
"""

from __future__ import annotations

import argparse
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from bench.common import bench_plane, emit, machine, sample_process
from bench.scheduler_scale_measure import (
    PODS_PER_JOB,
    TARGET_PODS,
    events_dropped,
    every_job,
    every_pod_bound,
    measure,
    only_schedulers_left,
    own_writes,
    reconciles,
)
from controller.runtime.client import KubeClient
from localkube.base.api import ensure_namespace
from localkube.base.processes import stop_process
from localkube.plane.operator import LocalOperator
from localkube.thirdparty.kwok import LocalKwok, nodes_for

__all__ = [  # what ``python -m bench`` and tests/bench use
    "SIZES",
    "events_dropped",
    "every_job",
    "every_pod_bound",
    "flatness",
    "main",
    "only_schedulers_left",
    "own_writes",
    "reconciles",
    "run",
]

SIZES: Final = (100, 1000, 5000)
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
  jobs in one namespace can turn it off the same way (docs/how-to/troubleshoot.md)."""


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
