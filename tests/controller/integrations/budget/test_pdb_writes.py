"""The job's PodDisruptionBudget written to the API
(controller/integrations/budget/pdb_writes.py)."""

from __future__ import annotations

from controller.integrations.budget.pdb import build_budget
from controller.integrations.budget.pdb_writes import budget_path, ensure_budget
from tests.controller.fakes import FakeApi
from tests.controller.samples import job

ASKED = {"schedulingPolicy": {"minAvailable": 2}}


def test_a_missing_budget_is_created() -> None:
    api = FakeApi()
    assert ensure_budget(api, job(run_policy=ASKED), labels={}) == ["poddisruptionbudgets"]
    assert api.objects[budget_path("ns", "mnist")]["spec"]["minAvailable"] == 2


def test_the_jobs_own_budget_with_the_right_size_is_left_alone() -> None:
    api = FakeApi()
    ensure_budget(api, job(run_policy=ASKED), labels={})
    before = len(api.writes())
    assert ensure_budget(api, job(run_policy=ASKED), labels={}) == []
    assert len(api.writes()) == before


def test_a_changed_gang_size_is_written_with_the_version_read() -> None:
    api = FakeApi()
    ensure_budget(api, job(run_policy=ASKED), labels={})
    bigger = job(run_policy={"schedulingPolicy": {"minAvailable": 3}})
    assert ensure_budget(api, bigger, labels={}) == ["poddisruptionbudgets:update"]
    assert api.objects[budget_path("ns", "mnist")]["spec"]["minAvailable"] == 3
    assert api.writes()[-1].method == "PUT"


def test_an_earlier_jobs_budget_is_deleted_by_uid_and_made_again_next_time() -> None:
    api = FakeApi()
    earlier = api.put_object(
        budget_path("ns", "mnist"), build_budget(job(uid="earlier-uid"), labels={})
    )
    assert ensure_budget(api, job(run_policy=ASKED), labels={}) == ["poddisruptionbudgets:delete"]
    delete = api.writes()[-1]
    assert delete.method == "DELETE"
    assert delete.body == {"preconditions": {"uid": earlier["metadata"]["uid"]}}
    assert ensure_budget(api, job(run_policy=ASKED), labels={}) == ["poddisruptionbudgets"]
    stored = api.objects[budget_path("ns", "mnist")]
    assert stored["metadata"]["ownerReferences"][0]["uid"] == "job-uid"
