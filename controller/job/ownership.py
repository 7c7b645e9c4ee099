"""The owner reference that ties an object to its MXJob (pure).

Every object the controller makes for a job (pods, Services, gang-scheduling objects) carries it,
so garbage collection deletes them with the job and informers find their job by its uid.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shared.constants import API_VERSION_V1, KIND
from shared.spec import as_mapping


def owner_reference(job: Mapping[str, Any]) -> dict[str, Any]:
    """The controller owner reference to the job: garbage collection deletes what it owns."""
    meta = as_mapping(job.get("metadata"))
    return {
        "apiVersion": API_VERSION_V1,
        "kind": KIND,
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "controller": True,
        "blockOwnerDeletion": True,
    }
