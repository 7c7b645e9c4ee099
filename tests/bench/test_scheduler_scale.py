"""``bench.scheduler_scale``: its pure parts, and a tiny run on kube-scheduler and kwok nodes.

The tiny run is the proof that kwok drives the controller's jobs end to end: kube-scheduler
binds every pod to a kwok node, kwok makes them Running, ends the annotated schedulers with exit
code 0, and the controller counts that as success and cleans the rest up.
"""

from __future__ import annotations

from typing import Any

import pytest

from bench import scheduler_scale
from bench.report import render
from bench.scheduler_scale import (
    events_dropped,
    every_job,
    every_pod_bound,
    flatness,
    only_schedulers_left,
    own_writes,
    reconciles,
)

SMOKE_JOBS = 3


def test_own_writes_reads_the_controllers_counter_by_verb_and_resource() -> None:
    text = "\n".join(
        [
            "# HELP mxjob_controller_api_writes_total Writes the controller sent.",
            'mxjob_controller_api_writes_total{resource="pods",verb="create"} 12.0',
            'mxjob_controller_api_writes_total{resource="mxjobs/status",verb="update"} 9.0',
            'mxjob_controller_api_writes_created{resource="pods",verb="create"} 1.7e9',
        ]
    )
    assert own_writes(text) == {("CREATE", "pods"): 12, ("UPDATE", "mxjobs/status"): 9}


def test_events_dropped_adds_up_every_reason() -> None:
    text = "\n".join(
        [
            'mxjob_controller_events_dropped_total{reason="queue_full"} 2.0',
            'mxjob_controller_events_dropped_total{reason="refused"} 1.0',
            'mxjob_controller_events_dropped_created{reason="refused"} 1.7e9',
        ]
    )
    assert events_dropped(text) == 3


def test_reconciles_add_up_every_result() -> None:
    text = "\n".join(
        [
            'controller_runtime_reconcile_total{controller="mxjob",result="success"} 40.0',
            'controller_runtime_reconcile_total{controller="mxjob",result="requeue_after"} 2.0',
            'controller_runtime_reconcile_errors_total{controller="mxjob"} 5.0',
        ]
    )
    assert reconciles(text) == 42


def test_the_predicates_wait_for_every_object() -> None:
    late: dict[str, Any] = {"spec": {}}
    bound = {"a": {"spec": {"nodeName": "n"}}, "b": late}
    assert not every_pod_bound(bound, 2)
    late["spec"]["nodeName"] = "n"
    assert every_pod_bound(bound, 2)
    assert not every_pod_bound(bound, 3)
    running = {"status": {"conditions": [{"type": "Running", "status": "True"}]}}
    assert every_job({"j": running}, 1, "Running")
    assert not every_job({"j": running}, 1, "Succeeded")
    assert only_schedulers_left({"j-scheduler-0": {}}, 1)
    assert not only_schedulers_left({"j-scheduler-0": {}, "j-worker-0": {}}, 1)


def _run(jobs: int, *, writes: float, cpu: float, growth: float) -> dict[str, Any]:
    return {
        "jobs": jobs,
        "controller_writes_per_job": writes,
        "controller_cpu_ms_per_job": cpu,
        "rss_growth_kib_per_pod": growth,
        "ms_per_job": {"running": 100.0, "succeeded_and_cleaned": 300.0},
    }


def test_flatness_compares_the_largest_size_with_the_smallest() -> None:
    result = flatness(
        [
            _run(1000, writes=22, cpu=40, growth=10),
            _run(100, writes=22, cpu=30, growth=10),
        ]
    )
    assert (result["from_jobs"], result["to_jobs"]) == (100, 1000)
    assert result["controller_writes_per_job"] == {"ratio": 1.0, "flat": True, "judged": True}
    assert result["controller_cpu_ms_per_job"]["ratio"] == 1.33
    assert not result["controller_cpu_ms_per_job"]["flat"]
    assert result["ms_per_job.running"]["judged"] is False
    assert flatness([_run(100, writes=22, cpu=30, growth=10)]) == {}


@pytest.mark.e2e
@pytest.mark.late_builds("build-kwok")
def test_a_tiny_run_goes_running_succeeded_and_cleaned_on_kwok_nodes() -> None:
    report = scheduler_scale.main(["--jobs", str(SMOKE_JOBS), "--output", "/dev/null"])
    run = report["runs"][0]
    pods = SMOKE_JOBS * 4
    assert run["pods"] == pods and run["nodes"] >= 2
    seen = run["api_server_requests"]
    # kube-scheduler bound every pod; kwok wrote their status (Running, then the schedulers'
    # exit); the driver's MXJob POSTs and annotations were subtracted.
    assert seen["POST pods/binding"] == pods
    assert seen["PATCH pods/status"] >= pods + SMOKE_JOBS
    assert "POST mxjobs" not in seen
    writes = run["controller_writes"]
    assert writes["CREATE pods"] == pods
    assert writes["CREATE services"] == pods
    # cleanPodPolicy Running: the server and both workers of every job, deleted once.
    assert writes["DELETE pods"] == SMOKE_JOBS * 3
    assert writes["PATCH pods"] == pods  # the tracking finalizer, once per pod
    # Each job's CA ConfigMap for its progress reports (controller/integrations/statusca/).
    assert writes["CREATE configmaps"] == SMOKE_JOBS
    assert run["controller_writes_per_job"] == sum(writes.values()) / SMOKE_JOBS
    assert run["controller_events_dropped"] == 0
    # Each job at least once per change it went through: created, Running, Succeeded, cleaned.
    assert run["controller_reconciles_per_job"] >= 4
    assert run["controller_cpu_ms_per_reconcile"] > 0
    # Events too: the client counts every write it sends (controller/runtime/client.py).
    assert writes["CREATE events"] >= SMOKE_JOBS
    assert 0 < run["all_created_s"] <= run["all_bound_s"] <= run["all_running_s"]
    assert run["succeeded_and_cleaned_s"] > 0
    assert 0 < run["controller_start_rss_mib"] <= run["controller_peak_rss_mib"] < 1024
    assert run["controller_cpu_s"] > 0 and run["kwok_cpu_s"] > 0
    assert "kube-scheduler" in run["control_plane_cpu_s"]
    page = render({"scheduler_scale": report})
    assert "## Growth on a real scheduler" in page
    assert f"| {SMOKE_JOBS} | {pods} | {run['nodes']} |" in page
    assert report["command"] in page
