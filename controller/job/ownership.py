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


def _references(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    refs = as_mapping(obj.get("metadata")).get("ownerReferences")
    return [ref for ref in refs if isinstance(ref, Mapping)] if isinstance(refs, list) else []


def owner_uids(obj: Mapping[str, Any]) -> list[str]:
    """The uids of ``obj``'s owners."""
    return [str(ref["uid"]) for ref in _references(obj) if isinstance(ref.get("uid"), str)]


def controller_reference(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """``obj``'s controller owner reference (its MXJob's for what this operator makes)."""
    return next((ref for ref in _references(obj) if ref.get("controller") is True), None)


def controller_uid(obj: Mapping[str, Any]) -> str | None:
    """The uid of the object's controller owner."""
    uid = as_mapping(controller_reference(obj)).get("uid")
    return uid if isinstance(uid, str) else None


def controlling_job(obj: Mapping[str, Any]) -> str | None:
    """``namespace/name`` of the MXJob controlling ``obj`` (in its namespace), None when its
    controller is not an MXJob."""
    ref = as_mapping(controller_reference(obj))
    if ref.get("kind") != KIND or not isinstance(ref.get("name"), str):
        return None
    return f"{as_mapping(obj.get('metadata')).get('namespace')}/{ref['name']}"


def owned_by(obj: Mapping[str, Any], job: MXJobView) -> bool:
    """``obj`` names the job among its owners (by uid: a job re-created under the same name is
    another job)."""
    return bool(job.uid) and job.uid in owner_uids(obj)
