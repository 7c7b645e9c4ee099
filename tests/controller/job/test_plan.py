"""plan: which pods and Services reconcile creates and deletes (pure)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from controller.job.plan import plan_actions
from controller.job.pods import JobPods
from controller.job.status import compute_status
from tests.controller.samples import NOW, job, later, pod, pods_all, view_of, with_running_sidecar

Obj = dict[str, Any]


def names(objects: list[Obj]) -> list[str]:
    return sorted(o["metadata"]["name"] for o in objects)


def test_plan_creates_every_missing_pod_and_service() -> None:
    j = job()
    none = JobPods()
    plan = plan_actions(view_of(j), compute_status(view_of(j), none, now=NOW), none, [])
    assert [s.name for s in plan.create_pods] == [
        "mnist-scheduler-0",
        "mnist-server-0",
        "mnist-worker-0",
        "mnist-worker-1",
    ]
    assert [s.name for s in plan.create_services] == [s.name for s in plan.create_pods]
    assert not plan.delete_pods and not plan.delete_services


def test_plan_scales_down_by_deleting_the_highest_indices() -> None:
    big = job(replicas={"Scheduler": 1, "Worker": 3})
    existing = JobPods.read(pods_all(big))
    small = job(replicas={"Scheduler": 1, "Worker": 1})
    plan = plan_actions(
        view_of(small), compute_status(view_of(small), existing, now=NOW), existing, []
    )
    assert names(plan.delete_pods) == ["mnist-worker-1", "mnist-worker-2"]
    assert not plan.create_pods


def test_plan_waits_for_a_terminating_pod_to_go_before_recreating_it() -> None:
    j = job()
    existing = JobPods.read([*pods_all(j)[:3], pod(j, "worker-1", terminating=True)])
    plan = plan_actions(view_of(j), compute_status(view_of(j), existing, now=NOW), existing, [])
    assert not plan.create_pods and not plan.delete_pods


def test_plan_deletes_everything_while_suspended() -> None:
    j = job(run_policy={"suspend": True})
    existing = pods_all(j)
    pods = JobPods.read(existing)
    plan = plan_actions(view_of(j), compute_status(view_of(j), pods, now=NOW), pods, existing)
    assert len(plan.delete_pods) == 4 and len(plan.delete_services) == 4
    assert not plan.create_pods


ACTIVE = ["mnist-server-0", "mnist-worker-0", "mnist-worker-1"]


@pytest.mark.parametrize(
    ("policy", "seconds", "deleted", "services_deleted"),
    [
        ("All", 0, ["mnist-scheduler-0"], 0),
        ("All", 30, ["mnist-scheduler-0", *ACTIVE], 4),
        ("Running", 0, [], 0),
        ("Running", 29, [], 0),
        ("Running", 30, ACTIVE, 0),
        ("None", 30, [], 0),
    ],
)
def test_plan_applies_the_clean_pod_policy_to_running_pods_once_their_grace_period_is_over(
    policy: str, seconds: int, deleted: list[str], services_deleted: int
) -> None:
    j = job(run_policy={"cleanPodPolicy": policy})
    existing = [pod(j, "scheduler-0", phase="Succeeded", exit_code=0), *pods_all(j)[1:]]
    pods = JobPods.read(existing)
    finished = compute_status(view_of(j), pods, now=NOW)
    assert finished.finished
    outcome = compute_status(view_of({**j, "status": finished.status}), pods, now=later(seconds))
    plan = plan_actions(view_of(j), outcome, pods, existing)
    assert names(plan.delete_pods) == deleted
    assert len(plan.delete_services) == services_deleted


@pytest.mark.parametrize(
    ("policy", "seconds", "deleted"),
    [("All", 0, []), ("All", 30, ["mnist-worker-0"]), ("Running", 29, []),
     ("Running", 30, ["mnist-worker-0"]), ("None", 600, [])],
)  # fmt: skip
def test_a_pod_whose_sidecar_outlives_mxnet_is_cleaned_like_a_running_one_after_its_grace(
    policy: str, seconds: int, deleted: list[str]
) -> None:
    j = job(replicas={"Worker": 1}, run_policy={"cleanPodPolicy": policy})
    lingering = JobPods.read(
        [with_running_sidecar(pod(j, "worker-0", exit_code=0), restart_policy="Never")]
    )
    finished = compute_status(view_of(j), lingering, now=NOW)
    assert finished.finished and finished.status["state"] == "Succeeded"
    outcome = compute_status(
        view_of({**j, "status": finished.status}), lingering, now=later(seconds)
    )
    counts = outcome.status["replicaStatuses"]["Worker"]
    assert (counts["active"], counts["succeeded"]) == (0, 1)
    assert names(plan_actions(view_of(j), outcome, lingering, []).delete_pods) == deleted


def test_plan_stops_active_pods_after_the_deadline_even_with_clean_policy_none() -> None:
    j = job(run_policy={"cleanPodPolicy": "None", "activeDeadlineSeconds": 1})
    existing = JobPods.read(pods_all(j))
    started = compute_status(view_of(j), JobPods(), now=NOW).status
    outcome = compute_status(view_of({**j, "status": started}), existing, now=later(2))
    assert outcome.stop_active
    assert len(plan_actions(view_of(j), outcome, existing, []).delete_pods) == 4


def test_plan_releases_counted_pods_except_those_it_deletes() -> None:
    j = job(run_policy={"cleanPodPolicy": "All"})
    existing = [pod(j, "scheduler-0", phase="Succeeded", exit_code=0), *pods_all(j)[1:]]
    pods = JobPods.read(existing)
    outcome = compute_status(view_of(j), pods, now=NOW)
    plan = plan_actions(view_of(j), outcome, pods, existing)
    # cleanPodPolicy All deletes the finished scheduler now: the DELETE releases it.
    assert names(plan.delete_pods) == ["mnist-scheduler-0"] and not plan.release_pods
    kept = job(run_policy={"cleanPodPolicy": "Running"})
    outcome = compute_status(view_of(kept), pods, now=NOW)
    plan = plan_actions(view_of(kept), outcome, pods, existing)
    assert names(plan.release_pods) == ["mnist-scheduler-0"] and not plan.delete_pods


def test_plan_creates_against_the_slots_status_matched_not_slots_of_its_own() -> None:
    j = job()
    outcome = compute_status(view_of(j), JobPods(), now=NOW)
    assert [s.key for s in outcome.slots] == ["scheduler-0", "server-0", "worker-0", "worker-1"]
    fewer = dataclasses.replace(outcome, slots=outcome.slots[:2])
    plan = plan_actions(view_of(j), fewer, JobPods(), [])
    assert [s.name for s in plan.create_pods] == ["mnist-scheduler-0", "mnist-server-0"]
