"""The chaos run's invariants and report, on what a run could have seen: one sound run, and one
broken in every way the checks look for. The expected reports in ``chaos_reports/`` were written
by the chaos run as one module, before it was split: the text must not change (but the first
line, which now names the run by its seed and no longer by its date)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from localkube.scenarios.chaos.checks import Evidence, check
from localkube.scenarios.chaos.plan import ChaosConfig, JobPlan
from localkube.scenarios.chaos.report import ChaosReport, Fault
from localkube.scenarios.chaos.watch import History

REPORTS = Path(__file__).parent / "chaos_reports"


def created(name: str, code: int = 201, **ref: str) -> dict[str, Any]:
    ref = {"namespace": "chaos", "name": name, **ref}
    return {"verb": "create", "objectRef": ref, "responseStatus": {"code": code}}


BROKEN_AUDIT = [
    created("job-00-scheduler-0"),
    created("job-00-worker-0"),
    created("job-00-worker-0"),  # a duplicate
    created("job-01-scheduler-0"),
    created("job-01-worker-0"),
    created("job-01-worker-0"),
    created("job-01-worker-0", 409),
    created("job-01-worker-1"),
    created("job-02-scheduler-0"),
    created("job-02-worker-0", namespace="other"),
    created("job-02-worker-0", subresource="binding"),
    {**created("job-02-worker-0", 200), "verb": "update"},
    created("probe-00-worker-0"),
    *(created(f"ghost-{i}") for i in range(22)),  # more problems than the report lists
]


def write_logs(logs: Path, *, broken: bool) -> Path:
    logs.mkdir(parents=True)
    events = BROKEN_AUDIT if broken else BROKEN_AUDIT[:2]
    lines = [json.dumps(event) for event in events] + ["not json", "{}"]
    (logs / "audit.log").write_text("\n".join(lines) + "\n")
    if broken:
        (logs / "controller-01.log").write_text("watch ended (410) x\nagain (410)\n")
        (logs / "controller-02.log").write_text("(410)\n")
        (logs / "controller-03.log").write_bytes(b"\xff(410) binary\n")
    return logs / "audit.log"


def broken_history() -> History:
    history = History()
    history.job_states["job-00"] += [(5, "Created", 0), (9, "Running", 0), (20, "Succeeded", 0)]
    history.job_states["job-01"] += [
        (6, "Running", 0),
        (12, "Restarting", 1),
        (11, "Running", 1),
        (25, "Succeeded", 1),
    ]
    history.job_states["job-02"] += [(7, "Failed", 0), (30, "Running", 0)]
    history.job_states["job-03"] += [(8, "Running", 2), (15, "Running", 1)]
    history.job_states["probe-00"] += [(40, "Succeeded", 0)]
    history.pod_seen["job-01-worker-0"]["a"] = [(10, "Running", 0), (13, "Failed", 0)]
    history.pod_seen["job-01-worker-0"]["b"] = [(16, "Running", 0), (14, "Pending", 0)]
    history.pod_seen["job-00-worker-0"]["c"] = [(3, "Running", 0), (8, "Failed", 0)]
    history.pod_seen["job-00-worker-0"]["d"] = [(5, "Running", 1), (6, "Running", 0)]
    history.pod_seen["job-02-worker-0"]["e"] = [(4, "Running", 0)]
    history.pod_seen["job-02-worker-0"]["f"] = [(2, "Pending", 0)]
    history.pod_created_rv.update({"a": 10, "b": 14, "c": 3, "d": 5})
    history.relists.update({"mxjobs": 2})
    return history


def broken_run(tmp_path: Path) -> tuple[ChaosReport, Evidence]:
    plans = [
        JobPlan("job-00", "succeed", 1, (1.0, 1.0)),
        JobPlan("job-01", "retry", 2, (1.0, 1.0)),
        JobPlan("job-02", "fail", 1, (1.0, 1.0)),
        JobPlan("job-03", "succeed", 2, (1.0, 1.0)),
        JobPlan("probe-00", "succeed", 1, (0.2, 0.2), probe=True),
    ]
    final: dict[str, dict[str, Any]] = {
        "job-00": {"state": "Succeeded", "restartCount": 0},
        "job-01": {"state": "Succeeded", "restartCount": 1},
        "job-02": {"state": "Running"},
        "job-03": {},
        "probe-00": {"state": "Succeeded"},
        "stray": {"state": "Failed"},
    }
    faults = [
        Fault("controller", 1.234, "SIGKILL, new process 2", 0.0, 1.234),
        Fault(
            "apiserver", 10.05, "SIGTERM, then started again; etcd compacted at 55 first", 2.5, 3.4
        ),
        Fault("compaction", 20.0, "compacted at revision 77", 0.0, None),
        Fault("webhook", 30.96, "SIGKILL worker 123 of 2", 0.0, 12.0),
        Fault("etcd", 31.0, "SIGTERM, then started again on the same data dir", 1.04, 0.5),
    ]
    evidence = Evidence(
        jobs={plan.name: plan for plan in plans},
        final=final,
        history=broken_history(),
        audit_log=write_logs(tmp_path / "logs", broken=True),
        logs=tmp_path / "logs",
        faults=faults,
        controller_processes=4,
        controller_kills=2,
        controller_crashes=1,
        create_retries=7,
        failpoints=("restart-status-written", "restart-pods-deleted"),
        failpoint_kills=("restart-status-written",),
    )
    report = ChaosReport(ChaosConfig(seed=42), seed=42, duration=123.456, faults=faults)
    return report, evidence


def sound_run(tmp_path: Path) -> tuple[ChaosReport, Evidence]:
    history = History()
    history.job_states["job-00"] += [(3, "Running", 0), (5, "Succeeded", 0)]
    history.pod_seen["job-00-worker-0"]["u0"] = [(2, "Running", 0)]
    history.pod_created_rv["u0"] = 2
    faults = [Fault("controller", 2.0, "SIGKILL, new process 2", 0.0, 0.8)]
    evidence = Evidence(
        jobs={"job-00": JobPlan("job-00", "succeed", 1, (1.0, 1.0))},
        final={"job-00": {"state": "Succeeded"}},
        history=history,
        audit_log=write_logs(tmp_path / "logs", broken=False),
        logs=tmp_path / "logs",
        faults=faults,
        controller_processes=1,
        controller_kills=0,
        controller_crashes=0,
        create_retries=0,
        failpoints=("restart-status-written",),
        failpoint_kills=("restart-status-written",),
    )
    config = ChaosConfig(jobs=1, controller_kills=0, seed=7)
    return ChaosReport(config, seed=7, duration=0.04, faults=faults), evidence


def checked(report: ChaosReport, evidence: Evidence) -> ChaosReport:
    invariants, figures = check(evidence)
    report.invariants.extend(invariants)
    report.figures.update(figures)
    return report


def test_a_sound_run_holds_every_invariant(tmp_path: Path) -> None:
    report = checked(*sound_run(tmp_path))
    assert report.ok
    assert report.markdown() == (REPORTS / "sound-run.md").read_text()


def test_a_broken_run_breaks_every_invariant_and_says_where(tmp_path: Path) -> None:
    report = checked(*broken_run(tmp_path))
    assert [inv.ok for inv in report.invariants] == [False] * 7
    problems = {p for inv in report.invariants for p in inv.problems}
    assert "job-00-worker-0: d created before c failed" in problems
    assert "job-00-worker-0: created 2 times, scripted 1" in problems
    assert "pod job-00-worker-0 d: restartCount [1, 0]" in problems
    assert "job job-02: Failed then finally Running" in problems
    assert "compaction at 20.0 s: never" in problems
    # the report lists 20 problems per invariant: here the ghost pods' 22 hide the rest
    assert report.markdown() == (REPORTS / "broken-run.md").read_text()


def test_a_new_attempts_pod_made_while_an_old_one_lived_is_premature(tmp_path: Path) -> None:
    report, evidence = sound_run(tmp_path)
    evidence.jobs["job-00"] = JobPlan("job-00", "retry", 1, (1.0, 1.0))
    history = evidence.history
    history.pod_seen["job-00-scheduler-0"]["s0"] = [(1, "Running", 0), (9, "Running", 0)]
    history.pod_created_rv["s0"] = 1
    history.pod_seen["job-00-scheduler-0"]["s1"] = [(12, "Running", 0)]
    history.pod_created_rv["s1"] = 12
    history.pod_seen["job-00-worker-0"]["u0"].append((4, "Failed", 0))
    history.pod_seen["job-00-worker-0"]["u1"] = [(8, "Running", 0)]
    history.pod_created_rv["u1"] = 8  # before the old scheduler's last event (9)
    checked(report, evidence)
    assert "job job-00: a new attempt's pod made while an old one lived" in (
        report.invariants[1].problems
    )


def test_a_replacement_created_before_its_predecessor_failed_is_premature(
    tmp_path: Path,
) -> None:
    report, evidence = sound_run(tmp_path)
    history = evidence.history
    history.pod_seen["job-00-worker-0"]["u1"] = [(3, "Running", 0)]
    history.pod_seen["job-00-worker-0"]["u0"].append((4, "Failed", 0))
    history.pod_created_rv["u1"] = 3
    checked(report, evidence)
    pods = report.invariants[1]
    assert not pods.ok
    assert "job-00-worker-0: u1 created before u0 failed" in pods.problems


def test_a_failpoint_never_reached_breaks_the_kill_point_invariant(tmp_path: Path) -> None:
    report = checked(*broken_run(tmp_path))
    found = next(i for i in report.invariants if "each point of a restart" in i.name)
    assert not found.ok and found.problems == ["never reached: restart-pods-deleted"]
    sound = checked(*sound_run(tmp_path / "sound"))
    assert next(i for i in sound.invariants if "each point of a restart" in i.name).ok


def test_a_pod_the_watch_saw_counts_as_created_when_its_audit_entry_was_cut(
    tmp_path: Path,
) -> None:
    """kube-apiserver stopped between a create's write and its ResponseComplete audit entry:
    the audit log says one creation fewer than the pods the watch saw."""
    report, evidence = sound_run(tmp_path)
    evidence.jobs["job-00"] = JobPlan("job-00", "succeed", 1, (1.0, 1.0))
    history = evidence.history
    history.pod_seen["job-00-scheduler-0"]["s0"] = [(1, "Running", 0)]
    history.pod_created_rv["s0"] = 1
    checked(report, evidence)
    pods = report.invariants[1]
    assert pods.ok, pods.problems  # job-00-scheduler-0 has no audit entry, but was seen
    report, evidence = sound_run(tmp_path / "twice")
    evidence.history.pod_seen["job-00-worker-0"]["u1"] = [(9, "Running", 0)]
    evidence.history.pod_created_rv["u1"] = 9
    checked(report, evidence)
    assert "job-00-worker-0: created 2 times, scripted 1" in report.invariants[1].problems
