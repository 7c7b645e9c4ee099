"""The growth section of ``docs/explanation/performance.md``: cost per job on kube-scheduler and
kwok nodes (``bench.scheduler_scale``), one row per size. The writes by verb, the control
plane's CPU and the load averages of each size stay in the JSON."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench.report_tables import table, verdict

HEADER = (
    "jobs",
    "pods",
    "nodes",
    "every pod and Service s",
    "every job Running s",
    "Succeeded + cleaned s",
    "controller writes/job",
    "controller CPU ms/job",
    "controller RSS MiB, every pod cached",
    "RSS KiB per pod over its start",
    "Events dropped",
)


def _intro(report: Mapping[str, Any]) -> str:
    """How each size runs: the scheduler's settings, kwok's nodes, the jobs, the clocks."""
    return (
        "A fresh control plane per size running kube-scheduler (client raised to 500 "
        "requests/s, burst 1,000; PodTopologySpread's cluster-wide default constraints off: with "
        "them, placing a pod costs more the more Services and pods the namespace holds) and "
        "kwok (simulated nodes of 110 pods; its stages make a bound pod Running and end a pod "
        "the driver annotates with its exit code), the webhook registered and "
        "`mxjob-controller` watching the run's namespace. Jobs of 1 scheduler, 1 server and 2 "
        "workers (`cleanPodPolicy: Running`, no grace period) are submitted at once from 8 "
        "threads; once every job is Running every scheduler pod exits 0, and the run ends when "
        "every job is Succeeded and only the schedulers are left. Times from the driver's "
        "watches; the controller's writes are its own count plus the Events the API server "
        f"counted; CPU and RSS from `/proc`. Measured by `{report['command']}` "
        f"({report.get('duration_s', '?')} s)."
    )


def _row(run: Mapping[str, Any]) -> list[Any]:
    return [
        f"{run['jobs']:,}",
        f"{run['pods']:,}",
        run["nodes"],
        run["all_created_s"],
        run["all_running_s"],
        run["succeeded_and_cleaned_s"],
        run["controller_writes_per_job"],
        run["controller_cpu_ms_per_job"],
        run["controller_rss_every_pod_cached_mib"],
        run["rss_growth_kib_per_pod"],
        run.get("controller_events_dropped", "-"),
    ]


def _flatness(flat: Mapping[str, Any]) -> str:
    """The largest size's per-job figures over the smallest's (empty with a single size)."""
    if not flat:
        return ""
    judged = [(k, v) for k, v in flat.items() if isinstance(v, Mapping) and v["judged"]]
    shown = [(k, v) for k, v in flat.items() if isinstance(v, Mapping) and not v["judged"]]
    return (
        f"Per job, {flat['to_jobs']:,} jobs over {flat['from_jobs']:,} (flat within 1.25): "
        + ", ".join(f"{k} {v['ratio']} {verdict(v['flat'])}" for k, v in judged)
        + "; times shown, not judged (the API server, etcd, kube-scheduler and kwok share the "
        "two cores): " + ", ".join(f"{k} {v['ratio']}" for k, v in shown) + ". "
    )


def scheduler_section(report: Mapping[str, Any]) -> list[str]:
    """Growth on kube-scheduler and kwok nodes: a row per size, then what stayed flat."""
    return [
        "## Growth on a real scheduler",
        "",
        _intro(report),
        "",
        *table(HEADER, [_row(run) for run in report["runs"]]),
        "",
        _flatness(report.get("flatness") or {})
        + f"RSS predicted at {report['target_pods']:,} pods from the largest size's growth per "
        f"pod: {report['predicted_rss_at_target_mib']} MiB (target ≤ "
        f"{report['target_rss_mib']:.0f} MiB: {verdict(report['meets_rss_target'])}).",
        "",
    ]
