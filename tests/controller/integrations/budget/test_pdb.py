"""A job's PodDisruptionBudget: which jobs get one and what it holds
(controller/integrations/budget/pdb.py)."""

from __future__ import annotations

from controller.integrations.budget.pdb import budget_update, build_budget, wants_budget
from controller.job.desired import job_labels
from controller.job.ownership import owned_by
from controller.job.view import read_job
from shared.constants import LABEL_JOB_NAME, LABEL_OPERATOR_NAME
from tests.controller.samples import job, view_of


def test_a_job_that_sets_min_available_asks_for_a_budget_without_a_gang_scheduler() -> None:
    asked = view_of(job(run_policy={"schedulingPolicy": {"minAvailable": 3}}))
    assert wants_budget(asked, "none")


def test_a_job_without_min_available_gets_none_unless_jobs_run_as_gangs() -> None:
    plain = view_of(job())
    assert not wants_budget(plain, "none")
    for gang in ("native", "volcano", "scheduler-plugins"):
        assert wants_budget(plain, gang)


def test_a_zero_min_available_is_no_ask() -> None:
    zero = view_of(job(run_policy={"schedulingPolicy": {"minAvailable": 0}}))
    assert not wants_budget(zero, "none")


def test_min_available_under_the_legacy_top_level_scheduling_policy_asks_too() -> None:
    legacy = job()
    legacy["spec"].pop("runPolicy", None)
    legacy["spec"]["schedulingPolicy"] = {"minAvailable": 2}  # training-operator's old place
    assert wants_budget(read_job(legacy), "none")
    assert build_budget(read_job(legacy), labels={})["spec"]["minAvailable"] == 2


def test_the_budget_keeps_the_gangs_size_up_and_selects_the_jobs_pods_of_either_operator() -> None:
    asked = view_of(job(run_policy={"schedulingPolicy": {"minAvailable": 3}}))
    budget = build_budget(asked, labels=job_labels(asked))
    assert budget["apiVersion"] == "policy/v1" and budget["kind"] == "PodDisruptionBudget"
    assert budget["metadata"]["name"] == "mnist" and budget["metadata"]["namespace"] == "ns"
    assert budget["metadata"]["ownerReferences"][0]["uid"] == "job-uid"
    assert budget["spec"]["minAvailable"] == 3
    selector = budget["spec"]["selector"]
    assert selector["matchLabels"] == {LABEL_JOB_NAME: "mnist"}
    assert selector["matchExpressions"] == [{
        "key": LABEL_OPERATOR_NAME, "operator": "In",
        "values": ["mxjob-operator", "mxjob-controller"]}]  # fmt: skip


def test_without_min_available_the_gang_is_every_replica() -> None:
    plain = view_of(job())  # Scheduler 1, Server 1, Worker 2
    assert build_budget(plain, labels=job_labels(plain))["spec"]["minAvailable"] == 4


def test_a_budget_with_the_wanted_spec_needs_no_update() -> None:
    asked = view_of(job(run_policy={"schedulingPolicy": {"minAvailable": 2}}))
    stored = {**build_budget(asked, labels={}), "status": {"currentHealthy": 2}}
    assert budget_update(stored, build_budget(asked, labels={})) is None


def test_a_changed_gang_size_updates_the_spec_and_keeps_the_rest() -> None:
    before = view_of(job(run_policy={"schedulingPolicy": {"minAvailable": 2}}))
    stored = build_budget(before, labels={})
    stored["metadata"]["resourceVersion"] = "7"
    grown = view_of(job(replicas={"Scheduler": 1, "Server": 1, "Worker": 4}))
    update = budget_update(stored, build_budget(grown, labels={}))
    assert update is not None
    assert update["spec"]["minAvailable"] == 6
    assert update["metadata"]["resourceVersion"] == "7"


def test_a_budget_of_an_earlier_job_of_the_same_name_is_not_owned() -> None:
    earlier = build_budget(view_of(job(uid="earlier-uid")), labels={})
    assert not owned_by(earlier, view_of(job()))
    assert owned_by(build_budget(view_of(job()), labels={}), view_of(job()))
