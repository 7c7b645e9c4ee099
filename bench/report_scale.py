"""Sections 3, 4 and 5 of ``docs/benchmarks.md``: the controller at scale, its economy, and its
cost per job as the jobs grow (``bench.controller_scale``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bench.report_tables import request_counts, table, verdict


def _times(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """What the phases measure, then each size's clocks against the baseline's."""
    lines = [
        "## 3. Controller at scale",
        "",
        "Jobs of 1 scheduler, 1 server and 2 workers, submitted at once from 8 threads with the "
        "webhooks registered; phase A ends when every pod and Service exists (driver's watches). "
        "Baseline: a client POSTing the same pods and Services (built by `controller.job.desired`, "
        "no owner references) from 8 threads as fast as the API server accepts them, its clock "
        "stopped the same way (when the driver's watches have seen every object). Phase B: "
        "the test kubelet binds and starts every pod; when every job is Running, every "
        "scheduler exits 0; it ends when every job is Succeeded and its running pods are "
        "deleted (`cleanPodPolicy: Running`).",
        "",
    ]
    rows = []
    for run in runs:
        a = run["phase_a"]
        b = run.get("phase_b", {})
        rows.append(
            [
                run["jobs"],
                run["baseline"]["objects"],
                run["baseline"]["seconds"],
                a["seconds"],
                f"{a['ratio_to_baseline']:.2f} ({verdict(a['meets_target'])})",
                b.get("all_running_s", "-"),
                b.get("succeeded_and_cleaned_s", "-"),
            ]
        )
    lines += table(
        [
            "jobs",
            "objects",
            "baseline s",
            "controller s (phase A)",
            "ratio (≤ 1.5)",
            "all Running s",
            "Succeeded + cleaned s",
        ],
        rows,
    )
    return lines


def _cpu(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """The control plane's CPU during the baseline and phase A: what phase A is bound by."""
    cpu_rows = []
    for run in runs:
        base_cpu = run["baseline"].get("control_plane_cpu_s", {})
        a_cpu = run["phase_a"].get("control_plane_cpu_s", {})
        cpu_rows.append(
            [
                run["jobs"],
                base_cpu.get("kube-apiserver", "-"),
                base_cpu.get("etcd", "-"),
                a_cpu.get("kube-apiserver", "-"),
                a_cpu.get("etcd", "-"),
                run["phase_a"]["controller_cpu_s"],
                run["phase_a"]["submit_seconds"],
            ]
        )
    return table(
        [
            "jobs",
            "baseline: kube-apiserver CPU s",
            "baseline: etcd CPU s",
            "phase A: kube-apiserver CPU s",
            "phase A: etcd CPU s",
            "phase A: controller CPU s",
            "phase A: submitting the jobs s",
        ],
        cpu_rows,
    )


def _economy(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """The controller's writes, LISTs, CPU and memory per size, against their targets."""
    rows = []
    for run in runs:
        a = run["phase_a"]
        whole = run.get("whole_run", {})
        rows.append(
            [
                run["jobs"],
                f"{a['controller_writes_per_job']} ({verdict(a['meets_write_target'])})",
                whole.get("controller_writes_per_job", "-"),
                whole.get("controller_lists_after_start", a["controller_lists"]),
                a["controller_cpu_s"],
                whole.get("controller_cpu_s", "-"),
                f"{a['controller_peak_rss_mib']} ({verdict(a['meets_rss_target'])})",
                whole.get("controller_peak_rss_mib", "-"),
            ]
        )
    return table(
        [
            "jobs",
            "writes/job, creation (≤ 8 + 3)",
            "writes/job, whole life",
            "LISTs after start-up",
            "CPU s, creation",
            "CPU s, whole run",
            "peak RSS MiB with every pod cached (≤ 200)",
            "peak RSS MiB, end",
        ],
        rows,
    )


def _requests_by_size(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """The controller's requests by verb and resource in each phase: what the writes are."""
    lines = []
    for run in runs:
        a = run["phase_a"]
        lines.append(f"- {run['jobs']} jobs, creation: {request_counts(a['controller_requests'])}")
        if "phase_b" in run:
            b = run["phase_b"]
            lines.append(
                f"- {run['jobs']} jobs, run to Succeeded and clean-up: "
                f"{request_counts(b['controller_requests'])} (the test kubelet meanwhile: "
                f"{request_counts(b['kubelet_requests'])})"
            )
    return lines


def _growth(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """Each size's figures divided by its jobs, so growth shows as a change per job."""
    rows = []
    for run in runs:
        a = run["phase_a"]
        jobs = run["jobs"]
        rows.append(
            [
                jobs,
                round(run["baseline"]["seconds"] / jobs * 1000, 2),
                round(a["seconds"] / jobs * 1000, 2),
                a["controller_cpu_ms_per_job"],
                a["controller_writes_per_job"],
                round(a["controller_peak_rss_mib"] / jobs * 1024, 1),
            ]
        )
    return table(
        [
            "jobs",
            "baseline ms/job",
            "controller ms/job (phase A)",
            "controller CPU ms/job",
            "writes/job",
            "peak RSS KiB/job",
        ],
        rows,
    )


def scale_section(report: Mapping[str, Any]) -> list[str]:
    """Sections 3 to 5: the controller's clocks, its economy, and its cost per job by size."""
    runs = report["runs"]
    return [
        *_times(runs),
        "",
        "Where the time goes (CPU seconds of the control plane during the baseline and during "
        "phase A; the machine has 2 cores, so phase A is bound by the CPU everything shares):",
        "",
        *_cpu(runs),
        "",
        "## 4. Economy",
        "",
        *_economy(runs),
        "",
        *_requests_by_size(runs),
        "",
        "Requests are `apiserver_request_total` deltas minus what the benchmark's driver and "
        "the test kubelet counted on their side; the rest is the controller's, except `GET "
        "mxjobs`: the controller reads jobs from its informer cache and GETs one only to "
        "confirm it is gone before letting go of its pods' tracking finalizers (no job is "
        "deleted here), so those are kube-controller-manager's garbage collector verifying the "
        "owners of new or deleted pods. Writes and LISTs are counted over pods, services, "
        "events and mxjobs.",
        "",
        "## 5. Growth: cost per job",
        "",
        *_growth(runs),
        "",
        f"Reproduce: `{report['command']}`",
        "",
    ]
