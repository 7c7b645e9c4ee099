"""The owner reference that ties an object to its MXJob, and the check that reads it (pure).

Every object the controller makes for a job (pods, Services, gang-scheduling objects, the
PodDisruptionBudget, Kueue's Workload) carries it, so garbage collection deletes them with the job
and informers find their job by its uid. It is built and read here only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.job.view import MXJobView
from shared.constants import API_VERSION_V1, KIND
from shared.spec import as_mapping


def owner_reference(job: MXJobView) -> dict[str, Any]:
    """The controller owner reference to the job: garbage collection deletes what it owns."""
    return {
        "apiVersion": API_VERSION_V1,
        "kind": KIND,
        "name": job.name,
        "uid": job.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def owner_uids(obj: Mapping[str, Any], *, controller_only: bool = False) -> list[str]:
    """The uids of ``obj``'s owners (only its controller's with ``controller_only``)."""
    refs = as_mapping(obj.get("metadata")).get("ownerReferences")
    if not isinstance(refs, list):
        return []
    return [
        str(ref["uid"])
        for ref in refs
        if isinstance(ref, Mapping)
        and isinstance(ref.get("uid"), str)
        and (not controller_only or ref.get("controller") is True)
    ]


def controller_uid(obj: Mapping[str, Any]) -> str | None:
    """The uid of the object's controller owner (its MXJob for what this operator makes)."""
    found = owner_uids(obj, controller_only=True)
    return found[0] if found else None


def owned_by(obj: Mapping[str, Any], job: MXJobView) -> bool:
    """``obj`` names the job among its owners (by uid: a job re-created under the same name is
    another job)."""
    return bool(job.uid) and job.uid in owner_uids(obj)
