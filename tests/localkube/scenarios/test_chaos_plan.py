"""What a chaos run plans: its jobs and their pods, the order of its faults, where figures go."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

from localkube.scenarios.chaos.faults import fault_schedule
from localkube.scenarios.chaos.plan import ChaosConfig, JobPlan, plan_jobs, probe_plan
from localkube.scenarios.chaos.report import REPORT_BEGIN, REPORT_END, ChaosReport, write_report


def test_the_jobs_start_with_one_of_each_script_and_follow_the_seed() -> None:
    config = ChaosConfig(jobs=12, spread=6.0)
    plans = plan_jobs(config, random.Random(3))
    assert [p.script for p in plans[:3]] == ["succeed", "retry", "fail"]
    assert [p.name for p in plans] == [f"job-{i:02d}" for i in range(12)]
    assert all(p.workers in (1, 2) for p in plans)
    assert all(0.5 <= p.delays[0] <= 6.0 and 0.5 <= p.delays[1] <= 2.0 for p in plans)
    again = plan_jobs(config, random.Random(3))
    assert [(p.script, p.workers, p.delays) for p in again] == [
        (p.script, p.workers, p.delays) for p in plans
    ]


def test_a_retry_script_calls_for_a_second_pod_in_every_slot() -> None:
    plan = JobPlan("job-07", "retry", 2, (1.0, 1.0))
    assert plan.slots == ["job-07-scheduler-0", "job-07-worker-0", "job-07-worker-1"]
    assert plan.expected_creations() == {  # the whole job restarts
        "job-07-scheduler-0": 2,
        "job-07-worker-0": 2,
        "job-07-worker-1": 2,
    }
    specs = plan.manifest()["spec"]["mxReplicaSpecs"]
    assert (specs["Scheduler"]["replicas"], specs["Worker"]["replicas"]) == (1, 2)
    assert plan.manifest()["metadata"]["labels"] == {"chaos-script": "retry"}


def test_a_probe_is_one_worker() -> None:
    probe = probe_plan(4)
    assert (probe.name, probe.probe, probe.slots) == ("probe-04", True, ["probe-04-worker-0"])
    assert list(probe.manifest()["spec"]["mxReplicaSpecs"]) == ["Worker"]


def test_the_fault_schedule_has_each_fault_as_often_as_configured() -> None:
    config = ChaosConfig(controller_kills=3, webhook_kills=1, etcd_restarts=0, compactions=2)
    kinds = fault_schedule(config, random.Random(1))
    assert Counter(kinds) == {"controller": 3, "webhook": 1, "apiserver": 1, "compaction": 2}


def test_the_figures_replace_only_what_is_between_the_markers(tmp_path: Path) -> None:
    page = tmp_path / "recovery.md"
    page.write_text(f"# Recovery\n\nprose\n{REPORT_BEGIN}\nold figures\n{REPORT_END}\nmore\n")
    report = ChaosReport(ChaosConfig(), seed=1)
    write_report(report, page)
    text = page.read_text()
    assert text.startswith(f"# Recovery\n\nprose\n{REPORT_BEGIN}\nA run with seed 1: ")
    assert text.endswith(f"| figure | value |\n| --- | --- |\n{REPORT_END}\nmore\n")
    assert "old figures" not in text
    missing = tmp_path / "new.md"
    write_report(report, missing)
    assert missing.read_text().startswith(f"{REPORT_BEGIN}\nA run with seed 1: ")
