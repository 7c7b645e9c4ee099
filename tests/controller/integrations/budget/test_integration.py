"""controller.integrations.budget.integration: a gang's PodDisruptionBudget made before its pods,
never holding them back, not even for a foreign object of its name (in-memory fake API)."""

from __future__ import annotations

from controller.integrations.budget.integration import BudgetIntegration
from controller.integrations.budget.pdb_writes import BUDGETS
from controller.integrations.children.kind import child_object
from controller.integrations.gang.podgroups import GangScheduler
from controller.job.desired import job_labels
from controller.job.hooks import Integration
from controller.job.pods import JobPods
from controller.job.view import MXJobView
from controller.runtime.client import ApiError, error_for
from controller.runtime.events import FOREIGN_OBJECT_EXISTS
from controller.runtime.store import Store
from tests.controller.fakes import FakeApi, catch_up
from tests.controller.samples import job, view_of

PLAIN = view_of(job())
ASKED = view_of(job(run_policy={"schedulingPolicy": {"minAvailable": 2}}))


def budget_path(namespace: str, name: str | None = None) -> str:
    return BUDGETS.path(namespace, name)


def prepare(budget: BudgetIntegration, view: MXJobView) -> tuple[bool, list[Exception]]:
    prepared = budget.prepare_pods(view, labels=job_labels(view))
    return prepared.ready, list(prepared.errors)


def budget_for(api: FakeApi, scheduler: GangScheduler = "none") -> BudgetIntegration:
    return BudgetIntegration(api, scheduler=scheduler)


def test_it_is_an_integration_named_budget() -> None:
    integration: Integration = budget_for(FakeApi())
    assert integration.name == "budget"


def test_a_job_that_asks_for_a_gang_gets_its_budget_before_its_pods() -> None:
    api = FakeApi()
    assert prepare(budget_for(api), ASKED) == (True, [])
    stored = api.objects[budget_path("ns", "mnist")]
    assert stored["spec"]["minAvailable"] == 2
    assert stored["metadata"]["labels"] == job_labels(ASKED)


def test_a_job_that_is_no_gang_gets_no_budget() -> None:
    api = FakeApi()
    assert prepare(budget_for(api), PLAIN) == (True, [])
    assert api.requests == []


def test_under_a_gang_scheduler_every_job_gets_one() -> None:
    api = FakeApi()
    assert prepare(budget_for(api, "volcano"), PLAIN) == (True, [])
    assert api.objects[budget_path("ns", "mnist")]["spec"]["minAvailable"] == 4


def test_it_declares_the_budgets_cache_whatever_the_scheduler_and_the_rule_to_update_them() -> None:
    for scheduler in ("none", "native"):
        declared = budget_for(FakeApi(), scheduler).declaration()
        assert declared.watches == (BUDGETS.watch,)
        assert ("policy", "poddisruptionbudgets", "update") in declared.grants()


def test_the_bound_store_is_the_one_read() -> None:
    api = FakeApi()
    budget = budget_for(api)
    users = {"metadata": {"name": "mnist", "namespace": "ns"}, "spec": {"minAvailable": 1}}
    api.put_object(budget_path("ns", "mnist"), users)
    bound = catch_up(Store(transform=child_object), api, budget_path("ns"), transform=child_object)
    budget.bind({BUDGETS.watch.name: bound})
    assert prepare(budget, ASKED) == (True, []) and api.writes() == []
    assert budget.notices(ASKED, JobPods())[0].reason == FOREIGN_OBJECT_EXISTS


def test_a_budget_that_cannot_be_written_is_an_error_but_holds_no_pod_back() -> None:
    api = FakeApi()
    refused = error_for(403, "Forbidden", {"kind": "Status", "reason": "Forbidden", "code": 403})
    api.fail_next[("POST", budget_path("ns"))] = refused
    ready, errors = prepare(budget_for(api), ASKED)
    assert ready is True
    assert errors == [refused] and isinstance(errors[0], ApiError)
    assert budget_path("ns", "mnist") not in api.objects


def test_a_foreign_budget_is_left_told_once_and_holds_no_pod_back_nor_makes_the_job_wait() -> None:
    api = FakeApi()
    budget = budget_for(api)
    users = {"metadata": {"name": "mnist", "namespace": "ns"}, "spec": {"minAvailable": 1}}
    stored = api.put_object(budget_path("ns", "mnist"), users)
    catch_up(budget.children(BUDGETS), api, budget_path("ns"), transform=child_object)
    assert prepare(budget, ASKED) == (True, [])
    assert api.writes() == [] and api.objects[budget_path("ns", "mnist")] == stored
    assert budget.waits(ASKED, JobPods()) is None
    (notice,) = budget.notices(ASKED, JobPods())
    assert (notice.type, notice.reason) == ("Warning", FOREIGN_OBJECT_EXISTS)
    assert "the job runs without a PodDisruptionBudget of its own" in notice.message
    assert budget.notices(ASKED, JobPods()) == ()
    assert budget.notices(PLAIN, JobPods()) == (), "a job that wants no budget is told nothing"
    budget.job_gone("ns", "mnist", uid="job-uid")
    assert len(budget.notices(ASKED, JobPods())) == 1, "a new job of the name is told again"
