"""shared/conditions.py: condition updates, the exclusivity invariant, the state column."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.conditions import (
    EXCLUSIVE_TYPES,
    ConditionType,
    Reason,
    current_state,
    get_condition,
    is_true,
    set_condition,
)
from tests.shared.shared_samples import property_settings, seed_listing

T0, T1, T2 = "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z", "2026-01-01T00:02:00Z"


def cond(ctype: str, status: str, *, reason: str = "R", when: str = T0) -> dict[str, Any]:
    return {
        "type": ctype,
        "status": status,
        "reason": reason,
        "message": "m",
        "lastUpdateTime": when,
        "lastTransitionTime": when,
    }


def test_reasons_are_spelled_as_in_the_api() -> None:
    assert [r.value for r in Reason] == [
        "MXJobCreated",
        "MXJobRunning",
        "MXJobRestarting",
        "MXJobSucceeded",
        "MXJobFailed",
        "MXJobSuspended",
        "MXJobResumed",
        "MXJobPending",
        "BackoffLimitExceeded",
        "DeadlineExceeded",
        "ProgressDeadlineExceeded",
        "ProgressReported",
    ]
    assert [t.value for t in ConditionType] == [
        "Created",
        "Running",
        "Restarting",
        "Succeeded",
        "Failed",
        "Suspended",
        "Pending",
        "Progressing",
    ]


def test_a_new_condition_is_appended_with_both_times_now() -> None:
    result = set_condition(
        [cond("Created", "True")],
        type=ConditionType.RUNNING,
        status=True,
        reason=Reason.RUNNING,
        message="MXJob j is running.",
        now=T1,
    )
    assert result == [
        cond("Created", "True"),
        {
            "type": "Running",
            "status": "True",
            "reason": "MXJobRunning",
            "message": "MXJob j is running.",
            "lastUpdateTime": T1,
            "lastTransitionTime": T1,
        },
    ]


def test_same_status_keeps_the_transition_time_and_updates_the_rest() -> None:
    result = set_condition(
        [cond("Running", "True")], type="Running", status=True, reason="New", message="n", now=T1
    )
    assert result == [
        {
            "type": "Running",
            "status": "True",
            "reason": "New",
            "message": "n",
            "lastUpdateTime": T1,
            "lastTransitionTime": T0,
        }
    ]


def test_a_status_flip_moves_the_transition_time() -> None:
    result = set_condition(
        [cond("Suspended", "True")], type="Suspended", status=False, reason="X", message="", now=T1
    )
    assert result[0]["status"] == "False"
    assert result[0]["lastTransitionTime"] == T1


def test_set_condition_does_not_modify_its_input() -> None:
    conditions = [cond("Running", "True"), cond("Created", "True")]
    before = copy.deepcopy(conditions)
    set_condition(conditions, type="Succeeded", status=True, reason="S", message="", now=T1)
    assert conditions == before


@pytest.mark.parametrize("winner", ["Running", "Restarting", "Succeeded", "Failed"])
def test_setting_one_exclusive_condition_true_sets_the_others_false(winner: str) -> None:
    conditions = [cond(t, "True") for t in ("Running", "Restarting", "Succeeded", "Failed")]
    result = set_condition(conditions, type=winner, status=True, reason="W", message="", now=T1)
    for condition in result:
        if condition["type"] == winner:
            assert condition["status"] == "True"
        else:
            assert condition["status"] == "False"
            assert condition["reason"] == "R"  # the cleared condition keeps its own reason
            assert condition["lastTransitionTime"] == T1


def test_succeeded_clears_running_as_in_the_seed_status() -> None:
    conditions = [cond("Created", "True"), cond("Running", "True")]
    result = set_condition(
        conditions, type="Succeeded", status=True, reason=Reason.SUCCEEDED, message="", now=T2
    )
    assert [(c["type"], c["status"]) for c in result] == [
        ("Created", "True"),
        ("Running", "False"),
        ("Succeeded", "True"),
    ]


def test_setting_a_condition_false_leaves_the_others_alone() -> None:
    conditions = [cond("Running", "True"), cond("Failed", "False")]
    result = set_condition(conditions, type="Failed", status=False, reason="F", message="", now=T1)
    assert result[0] == cond("Running", "True")


def test_suspended_and_created_are_not_exclusive() -> None:
    conditions = [cond("Created", "True"), cond("Running", "True")]
    result = set_condition(
        conditions, type="Suspended", status=True, reason="S", message="", now=T1
    )
    assert [c["status"] for c in result] == ["True", "True", "True"]


def test_entries_that_are_not_objects_are_dropped() -> None:
    result = set_condition(
        ["junk", cond("Created", "True")],  # type: ignore[list-item]
        type="Running",
        status=True,
        reason="r",
        message="",
        now=T1,
    )
    assert [c["type"] for c in result] == ["Created", "Running"]


_types = st.sampled_from([t.value for t in ConditionType])


@property_settings()
@given(st.lists(st.tuples(_types, st.booleans()), max_size=20))
def test_at_most_one_exclusive_condition_is_ever_true(steps: list[tuple[str, bool]]) -> None:
    conditions: list[dict[str, Any]] = []
    for ctype, status in steps:
        conditions = set_condition(
            conditions, type=ctype, status=status, reason="r", message="", now=T1
        )
        true_exclusive = [
            c for c in conditions if c["type"] in EXCLUSIVE_TYPES and c["status"] == "True"
        ]
        assert len(true_exclusive) <= 1
        assert len({c["type"] for c in conditions}) == len(conditions)


def test_get_condition_and_is_true() -> None:
    conditions = [cond("Created", "True"), cond("Running", "False")]
    assert get_condition(conditions, "Running") == cond("Running", "False")
    assert get_condition(conditions, "Failed") is None
    assert is_true(conditions, "Created")
    assert not is_true(conditions, "Running")
    assert not is_true(conditions, "Failed")


@pytest.mark.parametrize(
    ("true_types", "state"),
    [
        ([], ""),
        (["Created"], "Created"),
        (["Created", "Running"], "Running"),
        (["Created", "Restarting"], "Restarting"),
        (["Created", "Running", "Suspended"], "Suspended"),
        (["Created", "Suspended", "Succeeded"], "Succeeded"),
        (["Created", "Failed", "Suspended"], "Failed"),
    ],
)
def test_current_state_is_the_most_telling_true_condition(
    true_types: list[str], state: str
) -> None:
    false_ones = [cond(t, "False") for t in ("Running", "Failed") if t not in true_types]
    conditions = [cond(t, "True") for t in true_types] + false_ones
    assert current_state(conditions) == state


def test_current_state_of_the_seed_job_is_succeeded() -> None:
    assert current_state(seed_listing()["status"]["conditions"]) == "Succeeded"
