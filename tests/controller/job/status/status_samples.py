"""What the status tests share: one reconcile's computation as reconcile stores it, and the
conditions read back."""

from __future__ import annotations

import copy
import datetime
from typing import Any

from controller.job.desired import desired_slots
from controller.job.pods import JobPods
from controller.job.status import Outcome, compute_status
from tests.controller.samples import NOW, view_of

Obj = dict[str, Any]


def step(
    job_obj: Obj,
    pods: list[Obj],
    *,
    now: datetime.datetime = NOW,
) -> tuple[Obj, Outcome]:
    """Compute, and return the job with the new status stored (as reconcile would): the pods
    read once, as reconcile reads them."""
    outcome = compute_status(view_of(job_obj), JobPods.read(pods), now=now)
    stored = copy.deepcopy(job_obj)
    stored["status"] = copy.deepcopy(outcome.status)
    return stored, outcome


def cond(status: Obj, ctype: str) -> Obj | None:
    """The condition of this type, None when the status has none."""
    return next((c for c in status.get("conditions", []) if c["type"] == ctype), None)


def true_exclusive(status: Obj) -> list[str]:
    """The True conditions of the four that exclude each other."""
    return [
        c["type"]
        for c in status.get("conditions", [])
        if c["type"] in ("Running", "Restarting", "Succeeded", "Failed") and c["status"] == "True"
    ]


def last_slot(job_obj: Obj) -> str:
    """The key (``worker-1``) of the job's last slot in canonical order."""
    return desired_slots(view_of(job_obj))[-1].key


def untracked(pod_obj: Obj) -> Obj:
    """The pod without the tracking finalizer: the controller has let it go."""
    pod_obj["metadata"].pop("finalizers", None)
    return pod_obj
