"""``bench.report``: the whole page from a small hand-made set of reports, without a control plane.

The smoke tests render the page from tiny real runs (``e2e``); this one runs with the unit tests,
so a section that stops reading its report shows at once, and pins a few computed figures.
"""

from __future__ import annotations

from typing import Any

from bench.report import render

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


def _scale_report() -> dict[str, Any]:
    run = {
        "jobs": 100,
        **_side(created=2.0, writes=22.0, dropped=0),
        "baseline": {"objects": 800, "seconds": 1.0, "control_plane_cpu_s": {"etcd": 0.2}},
        "raw_baseline": {
            "objects": 900,
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
    return {"runs": [run], "command": "scale-command", "machine": MACHINE}


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


def _scheduler_report() -> dict[str, Any]:
    return {
        "runs": [_scheduler_run(100), _scheduler_run(1000)],
        "flatness": {
            "from_jobs": 100,
            "to_jobs": 1000,
            "controller_writes_per_job": {"ratio": 1.0, "flat": True, "judged": True},
            "ms_per_job.running": {"ratio": 2.0, "flat": False, "judged": False},
        },
        "target_pods": 20_000,
        "predicted_rss_at_target_mib": 150.0,
        "target_rss_mib": 400.0,
        "meets_rss_target": True,
        "command": "scheduler-command",
    }


def test_the_page_puts_the_sections_in_order_with_their_computed_figures() -> None:
    page = render(
        {
            "controller_scale": _scale_report(),
            "scheduler_scale": _scheduler_report(),
            "run": {"seconds": 600, "argv": []},
        },
        notes="## Findings\n",
    )
    headings = [line for line in page.splitlines() if line.startswith("## ")]
    assert headings == [
        "## Machine",
        "## Against training-operator",
        "## The physical limit: the raw API server",
        "## Growth on a real scheduler: cost per job from 100 to 5,000 jobs",
        "## 3. Controller at scale",
        "## 4. Economy",
        "## 5. Growth: cost per job",
        "## Findings",
    ]
    assert "The whole run took 10 min (`python -m bench` with no arguments" in page
    # 30 s against 2 s to every pod and Service: 15x, and fewer writes; the best peer is faster.
    assert "against training-operator v1.8.1, defaults: ≥ 10x faster to every pod and " in page
    assert "(15.0x): **met**; fewer writes per job (22.0 vs 34.0): **met**" in page
    assert "at its best: faster at every step: **missed**" in page
    assert "| 100 | training-operator v1.8.1, defaults | 0.07 | 1.00 | 1.00 | 0.65 |" in page
    # Raw: 1.5 + 0.25 s of CPU measured against 2 cores x 1.3 s.
    assert "| 100 | raw (mean) | 1.5 | 0.25 | - | - | 1.75 | 2.6 |" in page
    assert "### 1,000 jobs (4,000 pods, 2 nodes)" in page
    assert "| ms_per_job.running | 2.0 | (shown) |" in page
    assert "Reproduce: `scheduler-command` (? s)." in page
    assert page.endswith("## Findings\n")
