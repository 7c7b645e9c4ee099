"""MXJob status conditions: types, reasons, and a pure `set_condition`.

Conditions are kept as the plain dicts the API stores (status "True"/"False", RFC 3339
times supplied by the caller), so the controller can compare and patch them directly. The
invariant the state column relies on, at most one of Running/Restarting/Succeeded/Failed True,
is enforced here rather than in every caller.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Any


class ConditionType(StrEnum):
    CREATED = "Created"
    RUNNING = "Running"
    RESTARTING = "Restarting"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    SUSPENDED = "Suspended"
    PENDING = "Pending"
    """True while something outside the job holds it back (Kueue, its gang, an object of the
    name its pods need that is not its own, the scheduler), with that reason and message;
    absent otherwise (controller/job/status/waiting.py)."""
    PROGRESSING = "Progressing"
    """With ``runPolicy.progressDeadlineSeconds``: False once the job sent no progress report
    for that long (it is restarted), True again at its next report
    (controller/job/status/progress_deadline.py); absent otherwise."""


class Reason(StrEnum):
    CREATED = "MXJobCreated"
    RUNNING = "MXJobRunning"
    RESTARTING = "MXJobRestarting"
    SUCCEEDED = "MXJobSucceeded"
    FAILED = "MXJobFailed"
    SUSPENDED = "MXJobSuspended"
    RESUMED = "MXJobResumed"
    PENDING = "MXJobPending"
    BACKOFF_LIMIT_EXCEEDED = "BackoffLimitExceeded"
    DEADLINE_EXCEEDED = "DeadlineExceeded"
    PROGRESS_DEADLINE_EXCEEDED = "ProgressDeadlineExceeded"
    PROGRESS_REPORTED = "ProgressReported"


TRUE = "True"
FALSE = "False"

# At most one of these is True: the job is running, restarting pods, or finished one way.
EXCLUSIVE_TYPES: frozenset[str] = frozenset(
    {
        ConditionType.RUNNING,
        ConditionType.RESTARTING,
        ConditionType.SUCCEEDED,
        ConditionType.FAILED,
    }
)

# Precedence of the `state` column when several conditions are True.
_STATE_ORDER: tuple[ConditionType, ...] = (
    ConditionType.FAILED,
    ConditionType.SUCCEEDED,
    ConditionType.SUSPENDED,
    ConditionType.RESTARTING,
    ConditionType.RUNNING,
    ConditionType.CREATED,
)


def _is_exclusive(ctype: object) -> bool:
    return isinstance(ctype, str) and ctype in EXCLUSIVE_TYPES


def _status_string(status: bool) -> str:
    return TRUE if status else FALSE


def set_condition(
    conditions: Sequence[Mapping[str, Any]],
    *,
    type: str,
    status: bool,
    reason: str,
    message: str,
    now: str,
) -> list[dict[str, Any]]:
    """A new condition list with `type` set; the input is not modified.

    `lastUpdateTime` becomes `now`; `lastTransitionTime` only when the status flips (or the
    condition is new). Setting Running, Restarting, Succeeded or Failed to True sets whichever
    other of those four is True to False, keeping its reason and message. A new condition is
    appended; existing ones keep their order.
    """
    wanted = _status_string(status)
    result: list[dict[str, Any]] = []
    found = False
    for existing in conditions:
        if not isinstance(existing, Mapping):
            continue
        condition = dict(existing)
        if condition.get("type") == type:
            found = True
            if condition.get("status") != wanted:
                condition["lastTransitionTime"] = now
            condition.update(
                {"status": wanted, "reason": reason, "message": message, "lastUpdateTime": now}
            )
            condition.setdefault("lastTransitionTime", now)
        elif (
            status
            and type in EXCLUSIVE_TYPES
            and _is_exclusive(condition.get("type"))
            and condition.get("status") == TRUE
        ):
            condition.update({"status": FALSE, "lastTransitionTime": now, "lastUpdateTime": now})
        result.append(condition)
    if not found:
        result.append(
            {
                "type": type,
                "status": wanted,
                "reason": reason,
                "message": message,
                "lastUpdateTime": now,
                "lastTransitionTime": now,
            }
        )
    return result


def get_condition(conditions: Sequence[Mapping[str, Any]], type: str) -> dict[str, Any] | None:
    """The condition of this type (a copy), or None."""
    for condition in conditions:
        if isinstance(condition, Mapping) and condition.get("type") == type:
            return dict(condition)
    return None


def is_true(conditions: Sequence[Mapping[str, Any]], type: str) -> bool:
    """True when the condition of this type exists with status "True"."""
    condition = get_condition(conditions, type)
    return condition is not None and condition.get("status") == TRUE


def current_state(conditions: Sequence[Mapping[str, Any]]) -> str:
    """The `status.state` column: Failed/Succeeded when finished, else Suspended, Restarting,
    Running or Created, whichever is True first in that order; "" with no True condition."""
    for ctype in _STATE_ORDER:
        if is_true(conditions, ctype):
            return ctype.value
    return ""
