"""controller.integrations.kueue.status_applies: the Workload status writes, as server-side apply
bodies under Kueue's own field managers."""

from __future__ import annotations

from typing import Any

import pytest

from controller.integrations.kueue.status_applies import (
    ADMISSION_CONDITIONS,
    admission_apply,
    unreserve_apply,
)
from tests.controller.kueue_samples import (
    admitted,
    cond,
    evicted,
    queued_job,
    status_condition,
)
from tests.controller.samples import NOW_TEXT

Obj = dict[str, Any]


def test_admission_apply_keeps_every_field_kueue_admission_owns() -> None:
    owned: dict[str, Any] = {
        "requeueState": {"count": 1}, "accumulatedPastExecutionTimeSeconds": 30,
        "clusterName": "worker-1", "unhealthyNodes": [{"name": "n1"}],
        "preemptionGates": [{"name": "g"}],
        "admissionChecks": [{"name": "mk", "state": "Ready", "message": "ok"}],
        "schedulingStats": {
            "evictions": [{"reason": "Preempted", "underlyingCause": "", "count": 1}]
        },
    }  # fmt: skip
    wl = admitted(queued_job(), **owned)
    wl["status"]["conditions"].append(cond("SomethingElse", True, "X"))
    new = cond("Finished", True, "Succeeded", when=NOW_TEXT)
    body = admission_apply(wl, conditions=[new])
    status = body["status"]
    for key, value in owned.items():
        assert status[key] == value, key
    assert status["admission"] == wl["status"]["admission"]
    assert [c["type"] for c in status["conditions"]] == ["QuotaReserved", "Admitted", "Finished"]
    assert all(c["type"] in ADMISSION_CONDITIONS for c in status["conditions"])
    assert body["metadata"]["resourceVersion"] == "50" and body["metadata"]["uid"] == "wl-uid"


def test_unreserving_clears_the_admission_and_requeues_after_preemption() -> None:
    body = unreserve_apply(evicted(queued_job(), "Preempted"), now=NOW_TEXT)
    assert "admission" not in body["status"]
    quota = status_condition(body, "QuotaReserved")
    assert (quota["status"], quota["reason"]) == ("False", "Pending")
    requeued = status_condition(body, "Requeued")
    assert (requeued["status"], requeued["reason"]) == ("True", "Preempted")
    admitted_cond = status_condition(body, "Admitted")
    assert (admitted_cond["status"], admitted_cond["reason"]) == ("False", "NoReservation")
    assert body["status"]["accumulatedPastExecutionTimeSeconds"] == 240


@pytest.mark.parametrize("reason", ["InactiveWorkload", "PodsReadyTimeout", "AdmissionCheck"])
def test_unreserving_after_other_evictions_is_not_requeued(reason: str) -> None:
    body = unreserve_apply(evicted(queued_job(), reason), now=NOW_TEXT)
    requeued = status_condition(body, "Requeued")
    assert (requeued["status"], requeued["reason"]) == ("False", reason)
