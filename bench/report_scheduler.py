"""The growth section of ``docs/benchmarks.md``: cost per job on kube-scheduler and kwok nodes
(``bench.scheduler_scale``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench.report_tables import request_counts, table, verdict


def _intro() -> list[str]:
    """How each size runs: the scheduler's settings, kwok's nodes, the jobs, the clocks."""
    return [
        "## Growth on a real scheduler: cost per job from 100 to 5,000 jobs",
        "",
        "A fresh control plane per size running kube-scheduler (client raised to 500 requests/s, "
        "burst 1,000: its default 50/s would make it the clock; PodTopologySpread's cluster-wide "
        "default constraints off: with them, placing a pod costs more the more Services and pods "
        "the namespace holds, and binding fell to 6 pods/s at 13,000 pods, see docs/operations.md) "
        "and kwok (`localkube.thirdparty.kwok`: simulated nodes of 110 pods, enough for every pod; "
        "its stages make a bound pod Running and end a pod the driver annotates with its exit "
        "code), the webhook registered and `mxjob-controller` watching the run's namespace. Jobs "
        "of 1 scheduler, 1 server and 2 workers (`cleanPodPolicy: Running`, no grace period) are "
        "submitted at once from 8 threads; once every job is Running every scheduler pod exits 0, "
        "and the run ends when every job is Succeeded and only the schedulers are left. Times from "
        "the driver's watches; the controller's writes are its own count plus the Events the API "
        "server counted; CPU and RSS from `/proc`.",
        "",
    ]


def _size_rows(run: Mapping[str, Any]) -> list[list[Any]]:
    """One size's figures, each with its share per job where one is meaningful."""
    return [
        [
            "every pod and Service exists",
            f"{run['all_created_s']} s",
            f"{run['ms_per_job']['created']} ms",
        ],
        ["every pod bound", f"{run['all_bound_s']} s", "-"],
        [
            "every job Running",
            f"{run['all_running_s']} s",
            f"{run['ms_per_job']['running']} ms",
        ],
        [
            "every job Succeeded and cleaned",
            f"{run['succeeded_and_cleaned_s']} s",
            f"{run['ms_per_job']['succeeded_and_cleaned']} ms",
        ],
        [
            "controller writes",
            sum(run["controller_writes"].values()),
            run["controller_writes_per_job"],
        ],
        [
            "controller CPU",
            f"{run['controller_cpu_s']} s",
            f"{run['controller_cpu_ms_per_job']} ms",
        ],
        [
            "controller reconciles (changes seen, and every job each resync period)",
            f"{run.get('controller_cpu_ms_per_reconcile', '-')} ms CPU each",
            run.get("controller_reconciles_per_job", "-"),
        ],
        [
            "controller RSS, every pod cached",
            f"{run['controller_rss_every_pod_cached_mib']} MiB",
            f"{run['rss_growth_kib_per_pod']} KiB per pod over its start",
        ],
        ["controller peak RSS", f"{run['controller_peak_rss_mib']} MiB", "-"],
        [
            "kube-apiserver / etcd / kube-scheduler / kwok CPU",
            " / ".join(
                f"{run['control_plane_cpu_s'].get(name, 0)} s"
                for name in ("kube-apiserver", "etcd", "kube-scheduler")
            )
            + f" / {run['kwok_cpu_s']} s",
            "-",
        ],
    ]


def _size(run: Mapping[str, Any]) -> list[str]:
    """One size under its own heading: the machine's load, its figures, the controller's writes."""
    load = ", ".join(str(x) for x in run.get("machine", {}).get("load_average", []))
    dropped = run.get("controller_events_dropped", "not measured")
    return [
        f"### {run['jobs']:,} jobs ({run['pods']:,} pods, {run['nodes']} nodes)",
        "",
        f"Load average (1, 5, 15 min) at the end: {load or 'not measured'}.",
        "",
        *table(["figure", "value", "per job"], _size_rows(run)),
        "",
        f"Controller writes: {request_counts(run['controller_writes'])}; "
        f"Events dropped: {dropped}.",
        "",
    ]


def _flatness(flat: Mapping[str, Any]) -> list[str]:
    """The largest size's per-job figures over the smallest's (none with a single size)."""
    if not flat:
        return []
    return [
        f"Flat from {flat['from_jobs']:,} to {flat['to_jobs']:,} jobs (largest size's "
        "per-job figure over the smallest's; flat within 1.25; times are shown, not "
        "judged: the API server, etcd, kube-scheduler and kwok share the two cores):",
        "",
        *table(
            ["per job", "ratio", "flat"],
            [
                [name, value["ratio"], (verdict(value["flat"]) if value["judged"] else "(shown)")]
                for name, value in flat.items()
                if isinstance(value, Mapping)
            ],
        ),
        "",
    ]


def scheduler_section(report: Mapping[str, Any]) -> list[str]:
    """Growth on kube-scheduler and kwok nodes: a table per size, then what stayed flat."""
    return [
        *_intro(),
        *(line for run in report["runs"] for line in _size(run)),
        *_flatness(report.get("flatness") or {}),
        f"RSS predicted at {report['target_pods']:,} pods from the largest size's growth per "
        f"pod: {report['predicted_rss_at_target_mib']} MiB (target ≤ "
        f"{report['target_rss_mib']:.0f} MiB: {verdict(report['meets_rss_target'])}).",
        "",
        f"Reproduce: `{report['command']}` ({report.get('duration_s', '?')} s).",
        "",
    ]
