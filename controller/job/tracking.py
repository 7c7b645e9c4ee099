"""Pod tracking: which pods' ends are counted, and how the controller lets a pod go (pure).

Every pod the controller creates carries :data:`~shared.constants.TRACKING_FINALIZER` (kube's
Job controller does the same with ``batch.kubernetes.io/job-tracking``). Whoever deletes the
pod (a user, an eviction, the garbage collector), even while the controller is down, the API
server keeps it, terminating, with the final phase its kubelet wrote, until the controller
removes the entry. The controller removes it in exactly three situations:

- **accounted**: the pod has ended (Succeeded or Failed) and the status written by this
  reconcile counts it (a success in ``replicaStatuses``, a retryable failure in
  ``restartCount``, a permanent one in the job's Failed condition). Status is written first and
  the finalizer removed after, so a crash in between loses nothing: the next reconcile sees the
  pod again and counts it again, idempotently;
- **deleted by the controller** (recreation, cleanPodPolicy, suspend, scale-down): the entry is
  removed just before the DELETE, so the pod does not wait for anybody;
- **orphaned**: its MXJob is gone or being deleted, or the pod belongs to an older MXJob of the
  same name, or to one another controller manages: nobody will count it, so nobody may hold it.

A terminating pod whose kubelet never reports an end (its node is gone) cannot hold its replica
forever: :data:`UNREPORTED_END_SLACK` after its ``deletionTimestamp`` it counts as failed
without an exit code, as an evicted pod does (retryable).

The cost is one PATCH per pod in its life (measured in docs/explanation/performance.md).
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal, TypedDict, TypeVar

from controller.job.observed import FAILED, PodView
from shared.apitime import parse_time
from shared.constants import TRACKING_FINALIZER
from shared.spec import as_mapping

UNREPORTED_END_SLACK: Final = 60.0
"""Seconds after a tracked pod's ``deletionTimestamp`` (the end of its grace period) after which
a pod still not reporting an end is taken as failed without an exit code (node lost)."""

UNREPORTED_END_REASON: Final = "TerminationNotReported"

P = TypeVar("P", bound=Mapping[str, Any])


class PatchOp(TypedDict, total=False):
    """One JSON-Patch (RFC 6902) operation."""

    op: Literal["test", "remove"]
    path: str
    value: Any


def release_patch(pod: Mapping[str, Any]) -> list[PatchOp] | None:
    """The JSON patch that removes our finalizer from ``pod`` as cached; None if it has none.

    Guarded twice: ``test`` the uid (a newer pod of the same name is never touched) and ``test``
    the entry at its cached index (other finalizers, added or removed meanwhile, are never
    removed by mistake). A failed test is a 422 and means the cache is stale: the next event
    brings the pod as it is.
    """
    meta = as_mapping(pod.get("metadata"))
    finalizers = meta.get("finalizers")
    if not isinstance(finalizers, list) or TRACKING_FINALIZER not in finalizers:
        return None
    index = finalizers.index(TRACKING_FINALIZER)
    return [
        {"op": "test", "path": "/metadata/uid", "value": meta.get("uid")},
        {"op": "test", "path": f"/metadata/finalizers/{index}", "value": TRACKING_FINALIZER},
        {"op": "remove", "path": f"/metadata/finalizers/{index}"},
    ]


def _deletion_time(view: PodView) -> datetime.datetime | None:
    return parse_time(view.deletion_timestamp)


def unreported_end_due(view: PodView, now: datetime.datetime) -> float | None:
    """Seconds until a tracked, terminating, not yet ended pod counts as failed; else None.

    0 or less: it counts as failed now.
    """
    if not (view.tracked and view.terminating) or view.ended:
        return None
    deleted_by = _deletion_time(view)
    if deleted_by is None:
        return 0.0
    due = deleted_by + datetime.timedelta(seconds=UNREPORTED_END_SLACK)
    return (due - now).total_seconds()


def settle_views(
    views: Sequence[PodView], now: datetime.datetime
) -> tuple[list[PodView], float | None]:
    """The views with long-unreported ends read as failures, and when the next one is due."""
    settled: list[PodView] = []
    waits: list[float] = []
    for view in views:
        remaining = unreported_end_due(view, now)
        if remaining is not None and remaining <= 0:
            settled.append(
                dataclasses.replace(
                    view, phase=FAILED, exit_code=None, reason=UNREPORTED_END_REASON
                )
            )
            continue
        if remaining is not None:
            waits.append(remaining)
        settled.append(view)
    return settled, (min(waits) if waits else None)


def accounted(views: Sequence[PodView]) -> frozenset[str]:
    """Names of tracked pods that have ended: the status computed from ``views`` counts them."""
    return frozenset(view.name for view in views if view.tracked and view.ended)


def to_release(
    pods: Sequence[P],
    *,
    ends_counted: frozenset[str],
    deleting: frozenset[str],
) -> list[P]:
    """The pods whose finalizer goes once status is written: counted, and not being deleted.

    Pods the controller deletes in the same reconcile lose the finalizer with the DELETE.
    """
    found = []
    for pod in pods:
        name = str(as_mapping(pod.get("metadata")).get("name", ""))
        if name in ends_counted and name not in deleting and release_patch(pod) is not None:
            found.append(pod)
    return found
