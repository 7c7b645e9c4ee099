"""shared/queueing.py: Kueue's labels, where the manager lives, and what the route refuses."""

from __future__ import annotations

from typing import Any

from shared.queueing import (
    MULTIKUEUE,
    PREBUILT_WORKLOAD_LABEL,
    QUEUE_NAME_LABEL,
    dispatched_by_multikueue,
    manager,
    prebuilt_workload,
    queue_name,
    queueing_problems,
    suspend_for_queue,
)
from tests.shared.shared_samples import train_job

Job = dict[str, Any]


def queued(queue: str = "team-a", **spec: Any) -> Job:
    made = train_job(**spec)
    made["metadata"]["labels"] = {QUEUE_NAME_LABEL: queue}
    return made


def test_the_queue_and_prebuilt_workload_come_from_their_labels() -> None:
    assert queue_name(queued("team-a")) == "team-a"
    assert queue_name(train_job()) == "" and prebuilt_workload(train_job()) == ""
    copy = train_job()
    copy["metadata"]["labels"] = {PREBUILT_WORKLOAD_LABEL: "wl-1", QUEUE_NAME_LABEL: 3}
    assert prebuilt_workload(copy) == "wl-1"
    assert queue_name(copy) == ""  # not a string: not a queue


def test_spec_managed_by_wins_over_the_run_policy_one() -> None:
    both = train_job(managedBy=MULTIKUEUE, runPolicy={"managedBy": "other"})
    assert manager(both) == MULTIKUEUE and dispatched_by_multikueue(both)
    assert manager(train_job(runPolicy={"managedBy": "other"})) == "other"
    assert manager(train_job()) == "" and not dispatched_by_multikueue(train_job())


def test_only_a_queued_job_not_yet_suspended_is_suspended_for_its_queue() -> None:
    assert suspend_for_queue(queued())
    assert not suspend_for_queue(queued(runPolicy={"suspend": True}))
    assert not suspend_for_queue(train_job())


def test_a_volcano_queue_beside_a_kueue_queue_is_refused_naming_the_field() -> None:
    both = queued(runPolicy={"schedulingPolicy": {"queue": "volcano-q"}})
    problems = queueing_problems(both, old=None)
    assert [path for path, _ in problems] == ["spec.runPolicy.schedulingPolicy.queue"]
    assert "volcano-q" in problems[0][1] and "team-a" in problems[0][1]
    volcano_only = train_job(runPolicy={"schedulingPolicy": {"queue": "volcano-q"}})
    assert queueing_problems(volcano_only, old=None) == []


def test_the_queue_may_change_only_while_the_job_is_suspended() -> None:
    running, moved = queued("team-a"), queued("team-b")
    problems = queueing_problems(moved, old=running)
    assert [path for path, _ in problems] == [f"metadata.labels[{QUEUE_NAME_LABEL}]"]
    suspended = queued("team-a", runPolicy={"suspend": True})
    assert queueing_problems(moved, old=suspended) == []
    assert queueing_problems(queued("team-a"), old=running) == []


def test_topology_annotations_kueue_would_refuse_are_refused_on_queued_jobs_only() -> None:
    bad = {"kueue.x-k8s.io/podset-required-topology": "not a label"}
    job = queued()
    job["spec"]["mxReplicaSpecs"]["Worker"]["template"].setdefault("metadata", {})[
        "annotations"
    ] = bad
    (problem,) = queueing_problems(job, old=None)
    assert problem[0] == (
        "spec.mxReplicaSpecs.Worker.template.metadata.annotations"
        "[kueue.x-k8s.io/podset-required-topology]"
    )
    assert "the node label of a topology level" in problem[1]
    del job["metadata"]["labels"]
    assert queueing_problems(job, old=None) == []
