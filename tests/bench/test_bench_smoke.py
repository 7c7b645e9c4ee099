"""Every benchmark at a tiny size, so the scripts behind ``make bench`` cannot rot.

These check that each benchmark measures what it says (the right requests attributed to the
controller, reviews answered without errors, both admission configurations really exercised)
and that the page renders; they set no timing targets. The controller economy runs without
training-operator: comparing with it is ``make bench``'s work, not the suite's (its section of
the page is rendered from a report of every peer in tests/bench/test_report.py). The control
plane is the benchmarks' own (``.local/bench/smoke-<pid>``), never the test session's: the
admission benchmark registers and removes the operator's webhook configurations, which would
pull the rug from under the end-to-end tests sharing the session's plane.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench import (
    admission_cost,
    admission_overhead,
    controller_scale,
    creation_compare,
    webhook_load,
    webhook_path,
)
from bench.__main__ import main as bench_main
from bench.apiserver_profile import AREAS
from bench.common import BENCH_DIR
from bench.report import MAX_LINES, render
from localkube.plane.controlplane import ControlPlane
from localkube.plane.settings import ControlPlaneSettings

# The creation comparison runs training-operator as its peer.
pytestmark = [pytest.mark.e2e, pytest.mark.late_builds("build-training-operator")]

SMOKE_JOBS = 3


@pytest.fixture(scope="module")
def bench_plane() -> Iterator[ControlPlane]:
    state_dir = BENCH_DIR / f"smoke-{os.getpid()}"
    # The profiler on, for the creation comparison's kube-apiserver profile.
    plane = ControlPlane(
        ControlPlaneSettings(state_dir=state_dir, extra_apiserver_args=("--profiling=true",))
    )
    try:
        plane.up()
        yield plane
    finally:
        plane.down()
        shutil.rmtree(state_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def webhook_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    output = tmp_path_factory.mktemp("bench") / "webhook.json"
    argv = ["--duration", "0.3", "--warmup", "0.1", "--processes", "2", "--output", str(output)]
    report = webhook_load.main(argv)
    assert json.loads(output.read_text()) == report
    return report


@pytest.fixture(scope="module")
def admission_report(bench_plane: ControlPlane) -> dict[str, Any]:
    return admission_overhead.run(plane=bench_plane, jobs=4, threads=2)


SMOKE_CANDIDATES = (
    "today",
    "match-conditions",
    "mutate-only",
    "no-webhooks",
    "no-webhooks-defaulted",
)
"""Not the two that stop serving v1beta1 (each may wait up to a minute for the API server to let
go of the previous CRD storage), nor the one with a second webhook: ``make test`` stays short."""


@pytest.fixture(scope="module")
def cost_report(bench_plane: ControlPlane) -> dict[str, Any]:
    candidates = [c for c in admission_cost.CANDIDATES if c.name in SMOKE_CANDIDATES]
    report = admission_cost.run(plane=bench_plane, jobs=4, threads=2, candidates=candidates)
    return {**report, "command": "cost-command"}


@pytest.fixture(scope="module")
def scale_report(bench_plane: ControlPlane) -> dict[str, Any]:
    # Without training-operator: the comparison is make bench's (bench/controller_scale.py);
    # its tables are rendered from a report of every peer in tests/bench/test_report.py.
    run = controller_scale.run(
        plane=bench_plane, jobs=SMOKE_JOBS, baseline_threads=2, submit_threads=2, peers=()
    )
    return {"benchmark": "controller_scale", "runs": [run], "machine": {}, "command": "smoke"}


def test_webhook_load_measures_the_ceiling_and_every_endpoint_without_errors(
    webhook_report: dict[str, Any],
) -> None:
    targets = webhook_report["targets"]
    assert set(targets) == {"ceiling", "mutate-3", "validate-3", "mutate-12", "validate-12"}
    for name, target in targets.items():
        assert target["errors"] == 0, name
        assert target["saturation_rps"] > 0, name
        assert [p["fraction"] for p in target["points"]] == [0.25, 0.5, 0.75]
        for point in target["points"]:
            assert point["reviews"] > 0, (name, point)
            assert 0 < point["p50_ms"] <= point["p99_ms"], (name, point)
        assert target["ratio_to_ceiling"] == pytest.approx(
            target["saturation_rps"] / targets["ceiling"]["saturation_rps"], rel=0.01
        )
    # The 12-template job is the bigger review, on both endpoints.
    assert targets["mutate-12"]["request_bytes"] > 2 * targets["mutate-3"]["request_bytes"]
    assert targets["validate-12"]["request_bytes"] > targets["mutate-12"]["request_bytes"]
    assert webhook_report["machine"]["cores"] >= 1


def test_webhook_load_measures_the_ceiling_under_both_gunicorn_workers_in_abba_order(
    webhook_report: dict[str, Any],
) -> None:
    ab = webhook_report["worker_ab"]
    assert [s["worker"] for s in ab["segments"]] == ["webhook", "gthread", "gthread", "webhook"]
    assert all(s["errors"] == 0 and s["saturation_rps"] > 0 for s in ab["segments"])
    gthread = [s["saturation_rps"] for s in ab["segments"] if s["worker"] == "gthread"]
    assert ab["workers"]["gthread"]["saturation_rps"] == pytest.approx(sum(gthread) / 2, abs=0.01)
    assert ab["webhook_over_gthread"]["saturation_rps"] == pytest.approx(
        ab["workers"]["webhook"]["saturation_rps"] / ab["workers"]["gthread"]["saturation_rps"],
        rel=0.01,
    )
    # Each server says which worker it runs: gunicorn logs the class at start.
    log = (BENCH_DIR / "webhook-load" / "constant-info.log").read_text()
    assert log.count("Using worker: gthread") == 2
    assert log.count("Using worker: WebhookWorker") == 3  # the ceiling, then its two segments


def test_admission_overhead_runs_the_three_configurations_in_abccba_order(
    admission_report: dict[str, Any],
) -> None:
    segments = admission_report["segments"]
    assert [s["configuration"] for s in segments] == [
        "registered",
        "removed",
        "defaulted",
        "defaulted",
        "removed",
        "registered",
    ]
    assert admission_report["jobs_per_configuration"] == 4
    with_hooks = admission_report["with_webhooks_s"]
    without = admission_report["without_webhooks_s"]
    defaulted = admission_report["defaulted_without_webhooks_s"]
    assert with_hooks > 0 and without > 0 and defaulted > 0
    assert admission_report["ratio"] == pytest.approx(with_hooks / without, rel=0.01)
    assert admission_report["defaults_ratio"] == pytest.approx(defaulted / without, rel=0.01)
    assert admission_report["webhook_calls_ratio"] == pytest.approx(
        with_hooks / defaulted, rel=0.01
    )


def test_admission_cost_counts_each_candidates_calls_and_the_bytes_etcd_stores(
    cost_report: dict[str, Any],
) -> None:
    candidates = cost_report["candidates"]
    names = list(SMOKE_CANDIDATES)
    assert list(candidates) == names
    # A warm-up, then A B ... B A.
    assert [s["candidate"] for s in cost_report["segments"]] == [*names, *reversed(names)]
    today, matched = candidates["today"], candidates["match-conditions"]
    assert today["create"]["calls_per_job"]["mutate CREATE"] == 1
    assert today["create"]["calls_per_job"]["validate CREATE"] == 1
    # A label and a foreground deletion's finalizer removal: one UPDATE to each webhook each.
    assert today["label"]["calls_per_job"]["validate UPDATE"] == 1
    assert today["delete"]["calls_per_job"]["mutate UPDATE"] == 1
    # matchConditions skip both metadata-only UPDATEs; creations are still reviewed.
    assert matched["create"]["calls_per_job"]["mutate CREATE"] == 1
    for phase in ("label", "delete"):
        assert not any("UPDATE" in k for k in matched[phase]["calls_per_job"]), phase
    assert "validate CREATE" not in candidates["mutate-only"]["create"]["calls_per_job"]
    # v1beta1 served: its watch cache converts stored objects through the webhook.
    assert today["create"]["calls_per_job"]["convert"] > 0
    # The injected env is stored: a defaulted job is several times the one as written.
    assert today["stored_bytes_per_job"] > 2 * candidates["no-webhooks"]["stored_bytes_per_job"]
    # Sent defaulted without webhooks, a job is stored as with them (managed fields aside).
    defaulted = candidates["no-webhooks-defaulted"]["stored_bytes_per_job"]
    assert defaulted == pytest.approx(today["stored_bytes_per_job"], rel=0.1)
    for candidate in candidates.values():
        assert candidate["life"]["kube-apiserver_cpu_ms_per_job"] > 0


def test_controller_scale_attributes_creations_to_the_controller_and_finds_no_list(
    scale_report: dict[str, Any],
) -> None:
    run = scale_report["runs"][0]
    assert run["baseline"]["objects"] == SMOKE_JOBS * 8
    # The raw baseline: every job as well as its pods and Services, without webhooks.
    raw = run["raw_baseline"]
    assert raw["objects"] == SMOKE_JOBS * 9
    assert raw["seconds"] > 0
    # Measured twice around phase A, after a warm-up of a fifth of the jobs (at least one).
    assert [r["objects"] for r in raw["runs"]] == [SMOKE_JOBS * 9] * 2
    assert raw["warmup"]["objects"] == max(1, SMOKE_JOBS // 5) * 9
    assert raw["seconds"] == pytest.approx(sum(r["seconds"] for r in raw["runs"]) / 2, abs=0.01)
    assert raw["control_plane_cpu_s"]["kube-apiserver"] > 0
    assert run["phase_a"]["ratio_to_raw"] == pytest.approx(
        run["phase_a"]["seconds"] / raw["seconds"], rel=0.01
    )
    phase_a = run["phase_a"]
    requests = phase_a["controller_requests"]
    assert requests["POST pods"] == SMOKE_JOBS * 4
    assert requests["POST services"] == SMOKE_JOBS * 4
    # The driver's own MXJob POSTs were subtracted: only the controller's writes remain.
    assert "POST mxjobs" not in requests
    assert phase_a["controller_lists"] == 0
    assert phase_a["controller_writes_per_job"] >= 8
    assert 0 < phase_a["controller_peak_rss_mib"] < 1024
    assert phase_a["controller_cpu_s"] >= 0
    phase_b = run["phase_b"]
    # cleanPodPolicy Running: the server and both workers of every job are deleted.
    assert phase_b["controller_requests"]["DELETE pods"] == SMOKE_JOBS * 3
    # The tracking finalizer: one PATCH per pod, never two (the finished scheduler once its
    # success is counted, the three others just before cleanPodPolicy Running deletes them).
    assert phase_b["controller_requests"]["PATCH pods"] == SMOKE_JOBS * 4
    assert "PATCH pods" not in phase_a["controller_requests"]
    assert phase_b["kubelet_requests"]["POST pods/binding"] == SMOKE_JOBS * 4
    assert phase_b["all_running_s"] > 0
    assert phase_b["succeeded_and_cleaned_s"] > 0
    assert run["whole_run"]["controller_lists_after_start"] == 0
    # Read from the controller's own mxjob_controller_events_dropped_total.
    assert run["whole_run"]["events_dropped"] == 0


@pytest.fixture(scope="module")
def compare_report(
    bench_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    profiling = creation_compare.Profiling(seconds=5, directory=tmp_path_factory.mktemp("pprof"))
    run = creation_compare.run(
        plane=bench_plane, jobs=SMOKE_JOBS, submit_threads=2, profiling=profiling
    )
    return {"benchmark": "creation_compare", "runs": [run], "machine": {}, "command": "compare"}


def test_creation_compare_runs_before_after_and_the_peer_in_a_b_c_b_a_order(
    compare_report: dict[str, Any],
) -> None:
    (run,) = compare_report["runs"]
    segments = run["segments"]
    assert [s["candidate"] for s in segments] == list(creation_compare.ORDER)
    assert [s["controller"] for s in segments] == [
        "mxjob-operator", "mxjob-operator", creation_compare.PEER,
        "mxjob-operator", "mxjob-operator",
    ]  # fmt: skip
    for segment in segments:
        requests = segment["phase_a"]["controller_requests"]
        assert requests["POST pods"] == SMOKE_JOBS * 4, segment["candidate"]
        assert requests["POST services"] == SMOKE_JOBS * 4, segment["candidate"]
        assert segment["phase_b"]["succeeded_and_cleaned_s"] > 0, segment["candidate"]
        assert len(segment["load_average"]["start"]) == 3
        assert segment["settled_s"] >= creation_compare.SETTLED_FOR, segment["candidate"]
        if segment["candidate"] != creation_compare.PEER:
            # The probe saw exactly the candidate's calls from its own webhook process.
            assert segment["probes_to_configure"] >= 1
        # kube-apiserver's own profile of the segment, read by go tool pprof into every area.
        profile = segment["apiserver_profile"]
        assert Path(profile["path"]).stat().st_size > 0, segment["candidate"]
        assert set(profile["cpu_s"]) == {"total", *AREAS}, segment["candidate"]
        assert profile["cpu_s"]["total"] > 0, segment["candidate"]
        # Every request the API server served in phase A, the controller's among them.
        assert segment["phase_a"]["apiserver_requests"] > sum(requests.values())
    candidates = run["candidates"]
    assert {name: c["segments"] for name, c in candidates.items()} == {
        "before": 2, "after": 2, creation_compare.PEER: 1,
    }  # fmt: skip
    before = candidates["before"]["mean"]["pods_and_services_s"]
    low, high = candidates["before"]["range"]["pods_and_services_s"]
    assert low <= before <= high
    ratio = creation_compare.ratios(candidates, "after", "before")["pods_and_services_s"]
    assert ratio == pytest.approx(
        candidates["after"]["mean"]["pods_and_services_s"] / before, rel=0.01
    )


def test_webhook_path_measures_each_log_level_twice_and_only_debug_logs_reviews(
    tmp_path: Path,
) -> None:
    report = webhook_path.run(duration=0.5, warmup=0.2, processes=1, work_dir=tmp_path)
    assert [s["log_level"] for s in report["segments"]] == list(webhook_path.ORDER)
    for segment in report["segments"]:
        assert segment["errors"] == 0 and segment["saturation_rps"] > 0, segment
    # What is measured is what is compared: the debug server wrote a line per review, the
    # info one (the default) none.
    assert "review answered" in (tmp_path / "webhook-debug.log").read_text()
    assert "review answered" not in (tmp_path / "webhook-info.log").read_text()
    page = render({"webhook_path": {**report, "command": "path-command"}})
    assert "## Webhook under load" in page and "**The log line per review.**" in page
    assert "Measured by `path-command`" in page


def test_page_renders_the_creation_comparison_with_its_ratios_and_load(
    compare_report: dict[str, Any],
) -> None:
    page = render({"creation_compare": compare_report})
    assert "## Creation side by side: before, after, and training-operator at its best" in page
    assert "| after / training-operator-best: every pod and Service |" in page
    assert "Measured by `compare`" in page
    # A row per candidate at the size, and a row of its ratios.
    for label in ("before (v1beta1 served", "**after**", "training-operator v1.8.1 at its best"):
        assert f"| {SMOKE_JOBS} | {label}" in page, label


def test_page_renders_every_item_with_its_baseline_and_command(
    webhook_report: dict[str, Any],
    admission_report: dict[str, Any],
    cost_report: dict[str, Any],
    scale_report: dict[str, Any],
    tmp_path: Path,
) -> None:
    results = {
        "webhook_load": webhook_report,
        "admission_overhead": {**admission_report, "command": "admission-command"},
        "admission_cost": cost_report,
        "controller_scale": scale_report,
    }
    page = render(results)
    headings = [line for line in page.splitlines() if line.startswith("## ")]
    assert headings == [
        "## How to run",
        "## Machine",
        "## Webhook under load",
        "## Admission end to end",
        "## What admission costs, per job",
        "## Controller economy",
    ]
    assert len(page.splitlines()) < MAX_LINES
    assert f"Measured by `{webhook_report['command']}`" in page
    assert "Measured by `admission-command`" in page
    assert "Measured by `cost-command`" in page
    assert "| ceiling |" in page and "| validate-12 |" in page
    # The economy's row of the run: its jobs, and the objects of their baseline.
    assert f"| {SMOKE_JOBS} | {SMOKE_JOBS * 8} |" in page

    saved = tmp_path / "results.json"
    saved.write_text(json.dumps(results))
    output = tmp_path / "performance.md"
    assert bench_main(["--render-only", "--results", str(saved), "--output", str(output)]) == 0
    assert output.read_text() == page
