"""The job's PodDisruptionBudget as a child of the job, over the budgets' cache
(controller/integrations/budget/pdb_writes.py; the path itself:
tests/controller/integrations/children/test_ensure.py)."""

from __future__ import annotations

from controller.integrations.budget.pdb import build_budget
from controller.integrations.budget.pdb_writes import BUDGETS, ensure_budget
from controller.integrations.children.ensure import OwnedChildren
from controller.integrations.children.kind import child_object
from controller.runtime.store import Store
from tests.controller.fakes import FakeApi, catch_up
from tests.controller.samples import job, view_of

ASKED = view_of(job(run_policy={"schedulingPolicy": {"minAvailable": 2}}))
PATH = "/apis/policy/v1/namespaces/ns/poddisruptionbudgets/mnist"


def budgets(api: FakeApi) -> OwnedChildren:
    return OwnedChildren(api, kind=BUDGETS, store=Store(transform=child_object))


def seen(budget: OwnedChildren, api: FakeApi) -> None:
    catch_up(budget.store, api, BUDGETS.path("ns"), transform=child_object)


def methods(api: FakeApi) -> list[str]:
    return [w.method for w in api.writes()]


def test_the_kind_is_policy_v1_and_the_pods_do_not_need_it() -> None:
    assert BUDGETS.path("ns", "mnist") == PATH
    assert not BUDGETS.pods_need_it and BUDGETS.always_served


def test_a_missing_budget_is_created() -> None:
    api = FakeApi()
    ensure_budget(budgets(api), ASKED, labels={})
    assert methods(api) == ["POST"]
    assert api.objects[PATH]["spec"]["minAvailable"] == 2


def test_the_jobs_own_budget_with_the_right_size_is_left_alone() -> None:
    api = FakeApi()
    budget = budgets(api)
    ensure_budget(budget, ASKED, labels={})
    seen(budget, api)
    ensure_budget(budget, ASKED, labels={})
    assert methods(api) == ["POST"]
    assert [r.method for r in api.requests] == ["POST"], "read from the cache"


def test_a_changed_gang_size_is_written_with_the_version_read() -> None:
    api = FakeApi()
    budget = budgets(api)
    ensure_budget(budget, ASKED, labels={})
    seen(budget, api)
    read = api.objects[PATH]["metadata"]["resourceVersion"]
    bigger = view_of(job(run_policy={"schedulingPolicy": {"minAvailable": 3}}))
    ensure_budget(budget, bigger, labels={})
    assert methods(api) == ["POST", "PUT"]
    assert api.writes()[-1].body["metadata"]["resourceVersion"] == read
    assert api.objects[PATH]["spec"]["minAvailable"] == 3


def test_an_earlier_jobs_budget_is_left_for_garbage_collection() -> None:
    api = FakeApi()
    budget = budgets(api)
    earlier = api.put_object(PATH, build_budget(view_of(job(uid="earlier-uid")), labels={}))
    seen(budget, api)
    assert ensure_budget(budget, ASKED, labels={}).foreign
    assert api.writes() == [] and api.objects[PATH] == earlier
    del api.objects[PATH]  # garbage collection, seen by the cache
    seen(budget, api)
    ensure_budget(budget, ASKED, labels={})
    assert api.objects[PATH]["metadata"]["ownerReferences"][0]["uid"] == "job-uid"
