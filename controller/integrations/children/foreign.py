"""The one rule for a foreign object of a job's child's name (pure).

A job's PodDisruptionBudget, NetworkPolicy, PodGroup or Workload is named after the job. An
object of that name the job does not control (no controller owner reference with its uid) is
foreign: a user's, another tool's, or one an earlier MXJob of the same name left for garbage
collection. Whatever it is, the controller leaves it as it is, never deleting or overwriting it:
it cannot know what else relies on it, and an earlier job's is deleted by garbage collection
anyway. It says so instead, in a ``ForeignObjectExists`` Warning on the job and, when the job's
pods need the object (:attr:`~controller.integrations.children.kind.ChildKind.pods_need_it`), in
its ``Pending`` condition (controller/job/status/waiting.py): the pods wait until the name is
free. A job whose pods do not need it (a budget) runs without one, and is not pending for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.integrations.children.kind import ChildKind, controlled_by_an_mxjob
from controller.job.ownership import controller_reference, controller_uid
from controller.job.status.outcome import Wait
from controller.job.view import MXJobView
from controller.runtime.events import FOREIGN_OBJECT_EXISTS
from shared.spec import as_mapping


def is_foreign(obj: Mapping[str, Any], job: MXJobView) -> bool:
    """``obj`` (named like the job) is not controlled by this job (by uid: a job re-created under
    the same name is another job)."""
    return not job.uid or controller_uid(obj) != job.uid


def left_by_earlier_job(obj: Mapping[str, Any], job: MXJobView) -> bool:
    """``obj`` was made for an earlier MXJob of this name, which garbage collection removes."""
    ref = as_mapping(controller_reference(obj))
    return controlled_by_an_mxjob(obj) and ref.get("name") == job.name and is_foreign(obj, job)


def foreign_message(kind: ChildKind, obj: Mapping[str, Any], job: MXJobView) -> str:
    """What the Warning and the ``Pending`` condition say: whose it is, and what follows."""
    where = f"{kind.kind} {job.namespace}/{kind.name_for(job.name)}"
    if left_by_earlier_job(obj, job):
        whose = "was made for an earlier MXJob of this name; garbage collection deletes it"
    else:
        whose = "is not this job's (no controller ownerReference to it); rename or delete it"
    then = (
        "the job's pods wait until the name is free"
        if kind.pods_need_it
        else f"the job runs without a {kind.kind} of its own"
    )
    return f"{where} {whose}. It is left as it is, and {then}."


def foreign_wait(kind: ChildKind, obj: Mapping[str, Any], job: MXJobView) -> Wait | None:
    """The job's ``Pending`` reason while ``obj`` holds the name, when its pods need the object."""
    if not kind.pods_need_it:
        return None
    return Wait(FOREIGN_OBJECT_EXISTS, foreign_message(kind, obj, job))
