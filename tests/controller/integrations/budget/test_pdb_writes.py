"""The job's PodDisruptionBudget written to the API
(controller/integrations/budget/pdb_writes.py)."""

from __future__ import annotations

from controller.integrations.budget.pdb import build_budget
from controller.integrations.budget.pdb_writes import budget_path, ensure_budget
from tests.controller.fakes import FakeApi
from tests.controller.samples import job, view_of

ASKED = view_of(job(run_policy={"schedulingPolicy": {"minAvailable": 2}}))


def methods(api: FakeApi) -> list[str]:
    return [w.method for w in api.writes()]


def test_a_missing_budget_is_created() -> None:
    api = FakeApi()
    ensure_budget(api, ASKED, labels={})
    assert methods(api) == ["POST"]
    assert api.objects[budget_path("ns", "mnist")]["spec"]["minAvailable"] == 2


def test_the_jobs_own_budget_with_the_right_size_is_left_alone() -> None:
    api = FakeApi()
    ensure_budget(api, ASKED, labels={})
    ensure_budget(api, ASKED, labels={})
    assert methods(api) == ["POST"]


def test_a_changed_gang_size_is_written_with_the_version_read() -> None:
    api = FakeApi()
    ensure_budget(api, ASKED, labels={})
    read = api.objects[budget_path("ns", "mnist")]["metadata"]["resourceVersion"]
    bigger = view_of(job(run_policy={"schedulingPolicy": {"minAvailable": 3}}))
    ensure_budget(api, bigger, labels={})
    assert methods(api) == ["POST", "PUT"]
    assert api.writes()[-1].body["metadata"]["resourceVersion"] == read
    assert api.objects[budget_path("ns", "mnist")]["spec"]["minAvailable"] == 3


def test_an_earlier_jobs_budget_is_deleted_by_uid_and_made_again_next_time() -> None:
    api = FakeApi()
    earlier = api.put_object(
        budget_path("ns", "mnist"), build_budget(view_of(job(uid="earlier-uid")), labels={})
    )
    ensure_budget(api, ASKED, labels={})
    delete = api.writes()[-1]
    assert delete.method == "DELETE"
    assert delete.body == {"preconditions": {"uid": earlier["metadata"]["uid"]}}
    ensure_budget(api, ASKED, labels={})
    assert methods(api) == ["DELETE", "POST"]
    stored = api.objects[budget_path("ns", "mnist")]
    assert stored["metadata"]["ownerReferences"][0]["uid"] == "job-uid"
