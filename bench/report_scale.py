"""The controller economy section of ``docs/explanation/performance.md``: its time to create
every pod and Service against a client doing the same, its writes, LISTs, CPU and memory, each
against its target (``bench.controller_scale``). The requests by verb and the control plane's
CPU in each phase stay in the JSON."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench.report_tables import table, verdict

HEADER = (
    "jobs",
    "objects",
    "baseline s",
    "phase A s",
    "phase A / baseline (≤ 1.5)",
    "writes/job, creation (≤ 8 + 3)",
    "writes/job, whole life",
    "LISTs after start-up",
    "controller CPU ms/job, creation",
    "controller CPU s, whole run",
    "peak RSS MiB with every pod cached (≤ 200)",
)


def _row(run: Mapping[str, Any]) -> list[Any]:
    a = run["phase_a"]
    whole = run.get("whole_run", {})
    return [
        run["jobs"],
        run["baseline"]["objects"],
        run["baseline"]["seconds"],
        a["seconds"],
        f"{a['ratio_to_baseline']:.2f} ({verdict(a['meets_target'])})",
        f"{a['controller_writes_per_job']} ({verdict(a['meets_write_target'])})",
        whole.get("controller_writes_per_job", "-"),
        whole.get("controller_lists_after_start", a["controller_lists"]),
        a["controller_cpu_ms_per_job"],
        whole.get("controller_cpu_s", "-"),
        f"{a['controller_peak_rss_mib']} ({verdict(a['meets_rss_target'])})",
    ]


def scale_section(report: Mapping[str, Any]) -> list[str]:
    """The controller's clocks and economy by size, each against its target."""
    return [
        "## Controller economy",
        "",
        "The run of the first section, from this operator's side. Phase A: jobs submitted at "
        "once from 8 threads with the webhooks registered, until every pod and Service exists "
        "(driver's watches). Baseline: a client POSTing the same pods and Services (built by "
        "`controller.job.desired`) from 8 threads as fast as the API server accepts them, its "
        "clock stopped the same way; on 2 shared cores phase A is bound by the API server's "
        "CPU. Writes and LISTs are `apiserver_request_total` deltas over pods, Services, events "
        "and MXJobs, minus what the driver and the test kubelet counted on their side. "
        f"Measured by `{report['command']}`.",
        "",
        *table(HEADER, [_row(run) for run in report["runs"]]),
        "",
    ]
