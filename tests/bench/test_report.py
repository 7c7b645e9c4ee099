"""``bench.report``: the whole page from hand-made reports, without a control plane.

The smoke tests render the page from tiny real runs (``e2e``); these run with the unit tests,
so a section that stops reading its report shows at once. They pin a few computed figures, and
that the page stays a summary: under :data:`bench.report.MAX_LINES` lines with every benchmark
at full size, the per-size detail left to the JSON.
"""

from __future__ import annotations

from typing import Any

from bench import admission_cost, creation_compare, scheduler_scale
from bench.report import MAX_LINES, render

MACHINE = {"cores": 2, "cpu": "cpu", "memory_gib": 8.0, "kernel": "6.1", "versions": {"py": "3"}}


def _side(*, created: float, writes: float, dropped: int) -> dict[str, Any]:
    """One controller's phases A and B as ``controller_scale_phases.measure`` reports them."""
    requests = {"POST pods": 4}
    return {
        "phase_a": {
            "seconds": created,
            "submit_seconds": 0.5,
            "ratio_to_baseline": 2.0,
            "meets_target": False,
            "ratio_to_raw": 1.5,
            "controller_cpu_s": 1.0,
            "controller_cpu_ms_per_job": 10.0,
            "controller_writes_per_job": 9.0,
            "meets_write_target": True,
            "controller_lists": 0,
            "controller_peak_rss_mib": 50.0,
            "meets_rss_target": True,
            "controller_requests": requests,
            "control_plane_cpu_s": {"kube-apiserver": 2.0, "etcd": 0.5},
        },
        "phase_b": {
            "all_running_s": 3.0,
            "succeeded_and_cleaned_s": 4.0,
            "controller_requests": requests,
            "kubelet_requests": {"POST pods/binding": 4},
        },
        "whole_run": {
            "controller_writes_per_job": writes,
            "controller_cpu_s": 2.0,
            "controller_peak_rss_mib": 60.0,
            "controller_requests": requests,
            "events_dropped": dropped,
        },
    }


def _scale_run(jobs: int) -> dict[str, Any]:
    return {
        "jobs": jobs,
        **_side(created=2.0, writes=22.0, dropped=0),
        "baseline": {"objects": 8 * jobs, "seconds": 1.0, "control_plane_cpu_s": {"etcd": 0.2}},
        "raw_baseline": {
            "objects": 9 * jobs,
            "runs": [{"seconds": 1.2}, {"seconds": 1.4}],
            "seconds": 1.3,
            "posted_seconds": 1.1,
            "control_plane_cpu_s": {"kube-apiserver": 1.5, "etcd": 0.25},
        },
        "peers": {
            "training-operator": _side(created=30.0, writes=34.0, dropped=0),
            "training-operator-best": _side(created=1.5, writes=37.0, dropped=2),
        },
    }


def _scale_report(*sizes: int) -> dict[str, Any]:
    runs = [_scale_run(jobs) for jobs in sizes]
    return {"runs": runs, "command": "scale-command", "machine": MACHINE}


def _scheduler_run(jobs: int) -> dict[str, Any]:
    return {
        "jobs": jobs,
        "pods": jobs * 4,
        "nodes": 2,
        "all_created_s": 1.0,
        "all_bound_s": 2.0,
        "all_running_s": 3.0,
        "succeeded_and_cleaned_s": 4.0,
        "ms_per_job": {"created": 10.0, "running": 30.0, "succeeded_and_cleaned": 40.0},
        "controller_writes": {"CREATE pods": jobs * 4, "POST events": jobs * 2},
        "controller_writes_per_job": 6.0,
        "controller_cpu_s": 1.0,
        "controller_cpu_ms_per_job": 10.0,
        "controller_rss_every_pod_cached_mib": 70.0,
        "rss_growth_kib_per_pod": 5.0,
        "controller_peak_rss_mib": 80.0,
        "control_plane_cpu_s": {"kube-apiserver": 3.0},
        "kwok_cpu_s": 0.5,
    }


def _scheduler_report(*sizes: int) -> dict[str, Any]:
    return {
        "runs": [_scheduler_run(jobs) for jobs in sizes],
        "flatness": {
            "from_jobs": sizes[0],
            "to_jobs": sizes[-1],
            "controller_writes_per_job": {"ratio": 1.0, "flat": True, "judged": True},
            "ms_per_job.running": {"ratio": 2.0, "flat": False, "judged": False},
        },
        "target_pods": 20_000,
        "predicted_rss_at_target_mib": 150.0,
        "target_rss_mib": 400.0,
        "meets_rss_target": True,
        "command": "scheduler-command",
    }


def _webhook_report() -> dict[str, Any]:
    def target(rps: float) -> dict[str, Any]:
        return {
            "request_bytes": 4000,
            "saturation_rps": rps,
            "ratio_to_ceiling": rps / 1000,
            "points": [{"fraction": f, "p50_ms": 2.0, "p99_ms": 4.0} for f in (0.25, 0.5, 0.75)],
            "meets_throughput_target": rps >= 700,
            "meets_latency_target": True,
        }

    names = ("ceiling", "mutate-3", "validate-3", "mutate-12", "validate-12")
    return {
        "config": {"server": "gunicorn", "load_processes": 4, "duration_s": 5, "warmup_s": 1},
        "targets": {name: target(1000 - 100 * i) for i, name in enumerate(names)},
        "worker_ab": {
            "offered_rps": 500.0,
            "segments": [
                {"worker": w, "saturation_rps": 1000, "p50_ms": 2, "p99_ms": 4, "errors": 0}
                for w in ("webhook", "gthread", "gthread", "webhook")
            ],
            "webhook_over_gthread": {"saturation_rps": 0.96, "p50_ms": 0.97, "p99_ms": 0.87},
        },
        "command": "webhook-command",
    }


def _path_report() -> dict[str, Any]:
    return {
        "levels": {
            "debug": {"saturation_rps": 550.0, "p50_ms": 7.0, "cpu_ms_per_review": 1.8},
            "info": {"saturation_rps": 660.0, "p50_ms": 5.7, "cpu_ms_per_review": 1.44},
        },
        "segments": [{"log_level": level} for level in ("debug", "info", "info", "debug")],
        "info_over_debug": {"saturation_rps": 1.2, "cpu_ms_per_review": 0.8},
        "command": "path-command",
    }


def _admission_report() -> dict[str, Any]:
    return {
        "jobs_per_configuration": 500,
        "threads": 4,
        "with_webhooks_s": 3.0,
        "with_webhooks_jobs_per_s": 166.7,
        "without_webhooks_s": 1.5,
        "without_webhooks_jobs_per_s": 333.3,
        "defaulted_without_webhooks_s": 2.0,
        "defaulted_without_webhooks_jobs_per_s": 250.0,
        "ratio": 2.0,
        "meets_target": False,
        "defaults_ratio": 1.33,
        "webhook_calls_ratio": 1.5,
        "command": "admission-command",
    }


def _cost_report() -> dict[str, Any]:
    def candidate(cpu: float) -> dict[str, Any]:
        calls = {"mutate CREATE": 1}
        return {
            "create": {
                "seconds": 3.0,
                "kube-apiserver_cpu_ms_per_job": cpu,
                "calls_per_job": calls,
            },
            "life": {
                "kube-apiserver_cpu_ms_per_job": 5 * cpu,
                "etcd_cpu_ms_per_job": 11.0,
                "webhook_cpu_ms_per_job": 2.0,
                "calls_per_job": 1.0,
            },
            "ratios_to_today": {
                "create_seconds": 1.0,
                "create_kube-apiserver_cpu": cpu / 10,
                "life_kube-apiserver_cpu": cpu / 10,
            },
            "stored_bytes_per_job": 4040,
        }

    return {
        "jobs_per_candidate": 400,
        "threads": 8,
        "candidates": {
            c.name: candidate(10.0 - i) for i, c in enumerate(admission_cost.CANDIDATES)
        },
        "command": "cost-command",
    }


def _compare_report(*sizes: int) -> dict[str, Any]:
    def candidate(seconds: float) -> dict[str, Any]:
        keys = ("submit_s", "pods_and_services_s", "all_running_s", "succeeded_and_cleaned_s")
        return {"mean": dict.fromkeys(keys, seconds), "range": {}, "segments": 2}

    candidates = {
        "before": candidate(4.0),
        "after": candidate(3.0),
        creation_compare.PEER: candidate(2.0),
    }
    runs = [
        {"jobs": jobs, "order": list(creation_compare.ORDER), "candidates": candidates}
        for jobs in sizes
    ]
    return {"runs": runs, "command": "compare-command"}


def test_the_page_puts_the_sections_in_order_with_their_computed_figures() -> None:
    page = render(
        {
            "controller_scale": _scale_report(100),
            "scheduler_scale": _scheduler_report(100, 1000),
            "run": {"seconds": 600, "argv": []},
        }
    )
    headings = [line for line in page.splitlines() if line.startswith("## ")]
    assert headings == [
        "## How to run",
        "## Machine",
        "## Against training-operator",
        "## Growth on a real scheduler",
        "## Controller economy",
    ]
    assert "`make bench` (10 min on the machine below, with no arguments" in page
    # 30 s against 2 s to every pod and Service: 15x, and fewer writes; the best peer is faster.
    assert "against training-operator v1.8.1, defaults: ≥ 10x faster to every pod and " in page
    assert "(15.0x): **met**; fewer writes per job (22.0 vs 34.0): **met**" in page
    assert "at its best: faster at every step: **missed**" in page
    assert "| 100 | training-operator v1.8.1, defaults | 0.07 | 1.00 | 1.00 | 0.65 |" in page
    # The raw API server's mean time, and phase A over it.
    assert "took 1.3 s at 100 jobs; this operator took 1.50x that" in page
    assert "| 1,000 | 4,000 | 2 | 1.0 | 3.0 | 4.0 | 6.0 | 10.0 | 70.0 | 5.0 | - |" in page
    assert "controller_writes_per_job 1.0 **met**" in page
    assert "ms_per_job.running 2.0." in page
    assert "Measured by `scheduler-command` (? s)." in page
    assert "| 100 | 800 | 1.0 | 2.0 | 2.00 (**missed**) | 9.0 (**met**) | 22.0 | 0 |" in page
    # The requests by verb are the JSON's, not the page's; findings are not appended.
    assert "POST pods" not in page and "Findings" not in page
    assert page.endswith(" |\n")


def test_every_benchmark_at_full_size_fits_the_page_each_with_its_command() -> None:
    page = render(
        {
            "webhook_load": _webhook_report(),
            "webhook_path": _path_report(),
            "admission_overhead": _admission_report(),
            "admission_cost": _cost_report(),
            "controller_scale": _scale_report(100, 500),
            "creation_compare": _compare_report(100, 500, 2000),
            "scheduler_scale": _scheduler_report(*scheduler_scale.SIZES),
            "run": {"seconds": 2520, "argv": []},
        }
    )
    lines = page.splitlines()
    assert len(lines) < MAX_LINES, len(lines)
    for command in ("webhook", "path", "admission", "cost", "compare", "scheduler"):
        assert f"Measured by `{command}-command`" in page, command
    # Against the peer and the controller's own economy both come from controller_scale.
    assert page.count("Measured by `scale-command`") == 2
    # One row per size and candidate (a figure the report lacks shows 0), and one row of ratios
    # per size (after / the peer, then after / before; "-" where the report lacks the figure).
    assert "| 2000 | **after** (the default install now) | 3 | 3 | 3 | 3 | 0 | 0 | 0 | 0 |" in page
    assert "| 2000 | 1.50 | 1.50 | 1.50 | - | 0.75 | 0.75 | 0.75 | - |" in page
    assert "(**the install now**) | 3.0 | 1.00 | 2.0 | 0.20 | 10.0 | 0.20 |" in page
    assert "`webhook/worker.py` (the connection-age limit" in page
    assert "info / debug: reviews/s 1.20, CPU per review 0.80" in page
