"""controller/job/status/value.py: the status as a typed value, read once and serialised once."""

from __future__ import annotations

from typing import Any

from controller.job.pods import JobPods
from controller.job.status import compute_status
from controller.job.status.value import JobStatus
from shared.conditions import ConditionType
from tests.controller.job.status.status_samples import step
from tests.controller.samples import NOW, job, pods_all, view_of

STAMP = "2026-01-01T00:00:00Z"


def test_a_status_read_and_serialised_unchanged_is_the_stored_one() -> None:
    """What lets an unchanged job make no write: reconcile compares the two."""
    stored, _ = step(job(), pods_all(job()))
    assert JobStatus.read(stored["status"]).to_json(view_of(stored)) == stored["status"]
    assert stored["status"]["state"] == "Running"
    _, outcome = step(stored, pods_all(stored))
    assert outcome.status == stored["status"]


def test_fields_the_controller_does_not_own_pass_through_as_stored() -> None:
    trainer = {"progressPercentage": 40, "lastUpdatedTime": STAMP}
    found = JobStatus.read({"trainerStatus": trainer, "somethingNew": [1]})
    serialised = found.to_json(view_of(job()))
    assert serialised["trainerStatus"] == trainer
    assert serialised["somethingNew"] == [1]


def test_a_field_never_written_stays_unwritten() -> None:
    serialised = JobStatus.read({}).to_json(view_of(job()))
    assert set(serialised) == {"conditions", "state", "replicaStatuses"}
    assert serialised["state"] == ""


def test_malformed_owned_fields_read_as_unwritten() -> None:
    stored: dict[str, Any] = {
        "startTime": 5,
        "restartCount": -1,
        "attempt": "two",
        "restarts": "none",
        "conditions": ["Running", {"type": "Created", "status": "True"}],
        "lastReconcileTime": STAMP,
    }
    found = JobStatus.read(stored)
    assert (found.start_time, found.restart_count, found.attempt, found.restarts) == (
        None, None, 0, []
    )  # fmt: skip
    assert found.conditions == [{"type": "Created", "status": "True"}]
    assert "lastReconcileTime" not in found.to_json(view_of(job()))


def test_a_condition_is_written_only_when_something_about_it_changes() -> None:
    found = JobStatus.read({})
    assert not found.update_condition(
        ConditionType.RUNNING, status=False, reason="X", message="m", now=STAMP
    )  # never set, not written False
    assert found.update_condition(
        ConditionType.RUNNING, status=True, reason="R", message="m", now=STAMP
    )
    assert not found.update_condition(
        ConditionType.RUNNING, status=True, reason="R", message="m", now=STAMP
    )
    found.force_condition(
        ConditionType.PROGRESSING, status=False, reason="P", message="m", now=STAMP
    )
    assert [c["type"] for c in found.conditions] == ["Running", "Progressing"]
    found.drop_condition(ConditionType.RUNNING)
    assert [c["type"] for c in found.conditions] == ["Progressing"]


def test_compute_status_serialises_the_restart_records_only_once_there_are_any() -> None:
    outcome = compute_status(view_of(job()), JobPods.read([]), now=NOW)
    assert not {"attempt", "disruptionRestarts", "restarts"} & set(outcome.status)
    assert outcome.status["restartCount"] == 0
