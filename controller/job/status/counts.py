"""``status.replicaStatuses``: per replica type, its active, succeeded and failed pods.

Every replica type of the spec is listed, with the label selector of its pods
(hack/gen_crd_status.py), even before any pod exists, so a reader finds each type's pods
without knowing how the controller labels them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from controller.job.desired import replica_selector
from controller.job.view import MXJobView
from shared.constants import ReplicaType
from shared.spec import as_mapping, is_int

Counts = dict[ReplicaType, dict[str, int]]
"""Per replica type: ``active``, ``succeeded`` and ``failed`` pods."""
COUNT_KEYS: Final = ("active", "succeeded", "failed")


def empty_counts(job: MXJobView) -> Counts:
    """Zero pods of every replica type of the job."""
    return {replica.type: dict.fromkeys(COUNT_KEYS, 0) for replica in job.replicas}


def replica_statuses(
    job: MXJobView, counts: Mapping[ReplicaType, dict[str, int]]
) -> dict[str, Any]:
    """The ``replicaStatuses`` field: each replica type's counts and its pods' selector."""
    return {
        replica.type.value: {
            **counts.get(replica.type, dict.fromkeys(COUNT_KEYS, 0)),
            "selector": replica_selector(job, replica.type),
        }
        for replica in job.replicas
    }


def recorded(counts: Mapping[str, Any], rtype: ReplicaType, key: str) -> int:
    """A count of an earlier replicaStatuses (0 when absent or malformed)."""
    value = as_mapping(counts.get(rtype.value)).get(key)
    return value if is_int(value) and value > 0 else 0
