"""What a retryable end restarts, and the restart history kept in status (pure).

A retryable end (a signal, an eviction, a disruption) of a replica restarts what its
``restartScope`` says (defaulted per replica type by shared.defaults.DEFAULT_RESTART_SCOPES; why
each default, docs/explanation/recovery.md):

- ``Replica``: its pod alone is recreated and joins the running ones (TVM's tracker takes a new
  server under its key, and the servers register again with a new tracker);
- ``Job``: the job restarts as a whole, as one new *attempt*: every pod of the current attempt
  is deleted (within its grace period), and only once all of them are gone are all pods made
  again, annotated with the new attempt (ps-lite's ports and node ids are per process: never two
  live pods for one slot). The new attempt is counted once, however many pods ended with the
  first one.

Idempotent across controller restarts, because status is written before any pod is deleted:

- ``status.attempt`` says which attempt runs; a pod of an earlier one (:data:`ATTEMPT_ANNOTATION`)
  is stale, and its end is never counted again;
- each history entry names the pod (and its uid) whose end it records, so a lone replacement
  written to status but whose failed pod was not yet deleted is not recorded twice.

Within an attempt, the first end decides: a permanent failure that came with or after a
``Job``-scoped retryable end (a worker exiting 1 once its scheduler was killed) is its
consequence, not the program's verdict, and restarts the job with it.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from typing import Any, Final

from controller.job.observed import PodView
from shared.apitime import parse_time
from shared.constants import RestartScope
from shared.spec import is_int

PROGRESS_DEADLINE_EXCEEDED: Final = "ProgressDeadlineExceeded"
"""The reason of a restart for a lack of progress (shared.conditions.Reason's, as data here)."""
HISTORY_LIMIT: Final = 10
"""Restarts kept in ``status.restarts`` (the newest; ``restartCount`` counts them all)."""


def _count(status: Mapping[str, Any], key: str) -> int:
    value = status.get(key)
    return value if is_int(value) and value > 0 else 0


def persisted_restart_count(status: Mapping[str, Any]) -> int:
    """``status.restartCount``: every restart so far, in place, replica and whole-job ones."""
    return _count(status, "restartCount")


def persisted_attempt(status: Mapping[str, Any]) -> int:
    """``status.attempt``: whole-job restarts so far (0: the first attempt runs)."""
    return _count(status, "attempt")


def persisted_disruptions(status: Mapping[str, Any]) -> int:
    """``status.disruptionRestarts``: restarts, of ``restartCount``, caused by a disruption."""
    return _count(status, "disruptionRestarts")


def persisted_history(status: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``status.restarts`` as written (entries that are not objects are dropped)."""
    history = status.get("restarts")
    if not isinstance(history, list):
        return []
    return [dict(entry) for entry in history if isinstance(entry, Mapping)]


def recorded_pods(history: Sequence[Mapping[str, Any]]) -> frozenset[str]:
    """The uids of the pods whose end the history already records."""
    return frozenset(str(entry["podUID"]) for entry in history if entry.get("podUID"))


def split_attempts(views: Sequence[PodView], attempt: int) -> tuple[list[PodView], list[PodView]]:
    """The pods of the running attempt, and the stale ones of an earlier attempt."""
    current = [v for v in views if v.attempt >= attempt]
    stale = [v for v in views if v.attempt < attempt]
    return current, stale


def _moment(view: PodView) -> datetime.datetime | None:
    return parse_time(view.ended_at)


def first_ended(views: Sequence[PodView]) -> PodView:
    """The view that ended first (unknown times last, then by name): the restart's cause."""
    far = datetime.datetime.max.replace(tzinfo=datetime.UTC)
    return min(views, key=lambda v: (_moment(v) or far, v.name))


def consequences(permanent: Sequence[PodView], causes: Sequence[PodView]) -> list[PodView]:
    """The permanent failures that followed a ``Job``-scoped retryable end of the attempt.

    They ended no earlier than the first cause (the API's times have whole seconds, so an end
    in the same second counts as following): the job restarts, and they go with it. One whose
    end time is unknown is the program's verdict.
    """
    if not causes:
        return []
    first = _moment(first_ended(causes))
    if first is None:
        return []
    return [v for v in permanent if (moment := _moment(v)) is not None and moment >= first]


def scope_of(scopes: Mapping[str, RestartScope], view: PodView) -> RestartScope:
    """The restart scope of the view's replica type (``Job`` for an unknown type)."""
    if view.replica_type is None:
        return RestartScope.JOB
    return scopes.get(view.replica_type.value, RestartScope.JOB)


def history_entry(
    view: PodView, *, scope: RestartScope, attempt: int, counted: bool, stamp: str
) -> dict[str, Any]:
    """One ``status.restarts`` entry: when, which replica, how it ended, what restarted."""
    entry: dict[str, Any] = {
        "time": stamp,
        "scope": scope.value,
        "attempt": attempt,
        "replicaType": view.replica_type.value if view.replica_type else "",
        "index": view.index if view.index is not None else 0,
        "pod": view.name,
        "podUID": view.uid,
        "countedAgainstBackoff": counted,
    }
    if view.exit_code is not None:
        entry["exitCode"] = view.exit_code
    if view.reason:
        entry["reason"] = view.reason
    if view.disruption:
        entry["disruption"] = view.disruption
    return entry


def stall_entry(*, attempt: int, counted: bool, stamp: str) -> dict[str, Any]:
    """The ``status.restarts`` entry of a whole-job restart for a lack of progress: no pod
    ended, so it names none (controller/job/status/progress_deadline.py)."""
    return {
        "time": stamp,
        "scope": RestartScope.JOB.value,
        "attempt": attempt,
        "reason": PROGRESS_DEADLINE_EXCEEDED,
        "countedAgainstBackoff": counted,
    }


def with_entries(
    history: Sequence[Mapping[str, Any]], entries: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The history with ``entries`` appended, the oldest dropped beyond :data:`HISTORY_LIMIT`
    (never one of ``entries``: each names a pod about to be deleted, see the module doc)."""
    kept = max(HISTORY_LIMIT - len(entries), 0)
    older = list(history)[-kept:] if kept else []
    return [*(dict(e) for e in older), *(dict(e) for e in entries)]
