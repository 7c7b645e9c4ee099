"""The status being built, as a typed value: read once from the stored status, changed by the
rules (controller/job/status/__init__.py), serialised once into the ``status`` the writer sends.

Each field the controller owns is a typed attribute, so a rule says ``status.restart_count =
n`` and never a key of a dict; the fields it does not own (``trainerStatus``, which the progress
endpoint writes, controller/progress/) pass through as they were stored. A field the controller
has never written stays unwritten: ``None`` (or 0, or empty, for the restart records) is not
serialised, so a status read and written back unchanged is equal to the stored one, and an
unchanged job makes no write (controller/job/reconciler.py compares the two).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from controller.job.recovery import (
    persisted_attempt,
    persisted_disruptions,
    persisted_history,
)
from controller.job.status.counts import COUNT_KEYS, Counts, recorded, replica_statuses
from controller.job.status.in_place import IN_PLACE_RESTARTS
from controller.job.view import MXJobView
from shared.conditions import ConditionType, current_state, get_condition, set_condition
from shared.constants import ReplicaType
from shared.spec import as_mapping, is_count

OWNED: Final = frozenset(
    {
        "conditions",
        "state",
        "startTime",
        "completionTime",
        "restartCount",
        "replicaStatuses",
        "attempt",
        "disruptionRestarts",
        "restarts",
        IN_PLACE_RESTARTS,
        "lastReconcileTime",
    }
)
"""The ``status`` fields the status computation writes (``lastReconcileTime``: the writer)."""


def _time(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _counts(stored: object) -> Counts:
    """``replicaStatuses`` as stored, its counts only (the selectors are the job's)."""
    return {
        rtype: {key: recorded(as_mapping(stored), rtype, key) for key in COUNT_KEYS}
        for rtype in ReplicaType
        if rtype.value in as_mapping(stored)
    }


@dataclass
class JobStatus:
    """One job's status while it is computed (see the module docstring)."""

    conditions: list[dict[str, Any]]
    start_time: str | None
    """``startTime``: when the job (or its resume) started; the deadline counts from it."""
    completion_time: str | None
    restart_count: int | None
    """``restartCount``; None: never written (a finished job keeps what it had)."""
    replica_counts: Counts
    """Per replica type, its active, succeeded and failed pods (``replicaStatuses``)."""
    attempt: int
    """``attempt``: whole-job restarts so far; written once above 0."""
    disruption_restarts: int
    """``disruptionRestarts``: restarts a disruption caused; written once above 0."""
    restarts: list[dict[str, Any]]
    """``restarts``: the newest restarts (controller/job/recovery.py); written once any."""
    in_place: dict[str, dict[str, Any]] | None
    """``inPlaceRestarts`` (controller/job/status/in_place.py); None: not kept."""
    passed_through: Mapping[str, Any]
    """The stored fields the controller does not own, as stored."""

    @classmethod
    def read(cls, stored: Mapping[str, Any]) -> JobStatus:
        """The stored status, its owned fields typed (a malformed one reads as unwritten)."""
        conditions = stored.get("conditions")
        restart_count = stored.get("restartCount")
        return cls(
            conditions=[dict(c) for c in conditions if isinstance(c, Mapping)]
            if isinstance(conditions, list)
            else [],
            start_time=_time(stored.get("startTime")),
            completion_time=_time(stored.get("completionTime")),
            restart_count=restart_count if is_count(restart_count) else None,
            replica_counts=_counts(stored.get("replicaStatuses")),
            attempt=persisted_attempt(stored),
            disruption_restarts=persisted_disruptions(stored),
            restarts=persisted_history(stored),
            in_place=None,
            passed_through={k: v for k, v in stored.items() if k not in OWNED},
        )

    def update_condition(
        self, ctype: ConditionType, *, status: bool, reason: str, message: str, now: str
    ) -> bool:
        """Set a condition when something about it changes; True when it did.

        A condition never set is not written False either, and an unchanged one not again, so
        an unchanged job writes nothing (:meth:`force_condition` writes one False from the
        start)."""
        existing = get_condition(self.conditions, ctype)
        wanted = "True" if status else "False"
        if existing is not None and (
            existing.get("status"),
            existing.get("reason"),
            existing.get("message"),
        ) == (wanted, reason, message):
            return False
        if existing is None and not status:
            return False
        self.force_condition(ctype, status=status, reason=reason, message=message, now=now)
        return True

    def force_condition(
        self, ctype: ConditionType, *, status: bool, reason: str, message: str, now: str
    ) -> None:
        """Set a condition even if it was never set before: a condition False from the start
        says what a Deployment's ``Progressing`` says (progress_deadline.py)."""
        self.conditions = set_condition(
            self.conditions, type=ctype, status=status, reason=reason, message=message, now=now
        )

    def drop_condition(self, ctype: ConditionType) -> None:
        self.conditions = [c for c in self.conditions if c.get("type") != ctype]

    def to_json(self, job: MXJobView) -> dict[str, Any]:
        """The ``status`` object, once: what the writer sends (without ``lastReconcileTime``)."""
        found: dict[str, Any] = dict(self.passed_through)
        found["conditions"] = self.conditions
        found["state"] = current_state(self.conditions)
        optional = {
            "startTime": self.start_time,
            "completionTime": self.completion_time,
            "restartCount": self.restart_count,
        }
        found.update((k, v) for k, v in optional.items() if v is not None)
        found["replicaStatuses"] = replica_statuses(job, self.replica_counts)
        if self.attempt > 0:
            found["attempt"] = self.attempt
        if self.disruption_restarts > 0:
            found["disruptionRestarts"] = self.disruption_restarts
        if self.restarts:
            found["restarts"] = self.restarts
        if self.in_place is not None:
            found[IN_PLACE_RESTARTS] = self.in_place
        return found
