"""In-place restarts, counted once each, with status as their only record.

Under ``restartPolicy`` ``OnFailure`` or ``Always`` the kubelet restarts the ``mxnet`` container
inside its pod; the pod's ``restartCount`` grows and the controller makes nothing. Every other
restart is the controller's own decision, counted in ``status.restartCount`` in the same write
that decides it (before any pod is deleted, controller/job/recovery.py). An in-place restart is
found instead: so that a restarted controller counts none twice and loses none, status keeps,
per slot (``<type>-<index>``), the pod whose container restarts it has counted and how many
(``status.inPlaceRestarts``), as kube's Job controller keeps in status the pods whose end it has
not counted yet. A new pod in the slot starts from zero; the restarts of a pod that went were
counted while it lived.

The record is kept for jobs that can restart in place (a replica type under ``OnFailure`` or
``Always``), even empty: a status without it was written by an operator that kept no such record
and counted every in-place restart of the pods it saw, so those are taken as counted once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from controller.job.observed import PodView
from shared.spec import as_mapping, is_int

IN_PLACE_RESTARTS: Final = "inPlaceRestarts"
"""The status field: slot → ``{"podUID": …, "restarts": …}``."""


@dataclass(frozen=True)
class InPlace:
    """What the in-place restarts of the pods seen now add, and the record to write."""

    new_restarts: int
    record: dict[str, dict[str, Any]]


def persisted_record(status: Mapping[str, Any]) -> dict[str, tuple[str, int]] | None:
    """``status.inPlaceRestarts`` as slot → (pod uid, restarts counted); None when absent."""
    found = status.get(IN_PLACE_RESTARTS)
    if not isinstance(found, Mapping):
        return None
    record: dict[str, tuple[str, int]] = {}
    for slot, raw in found.items():
        entry = as_mapping(raw)
        uid, restarts = entry.get("podUID"), entry.get("restarts")
        if isinstance(uid, str) and is_int(restarts) and restarts >= 0:
            record[str(slot)] = (uid, restarts)
    return record


def count_in_place(
    views: Sequence[PodView], persisted: Mapping[str, tuple[str, int]] | None
) -> InPlace:
    """The in-place restarts of ``views`` (the running attempt's pods) not counted yet, and the
    record that counts them all. Without a persisted record every restart seen is taken as
    counted (see the module docstring)."""
    new_restarts = 0
    record: dict[str, dict[str, Any]] = {}
    for view in views:
        if view.replica_type is None or view.index is None:
            continue
        if persisted is None:
            counted = view.in_place_restarts
        else:
            uid, restarts = persisted.get(view.slot, ("", 0))
            counted = restarts if uid == view.uid else 0
        new_restarts += max(0, view.in_place_restarts - counted)
        if view.in_place_restarts > 0:
            record[view.slot] = {"podUID": view.uid, "restarts": view.in_place_restarts}
    return InPlace(new_restarts, record)
