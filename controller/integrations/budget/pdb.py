"""A job's PodDisruptionBudget: its gang is not broken up by a voluntary disruption (pure).

ps-lite's membership is fixed: a distributed MXNet job that loses one scheduler, server or
worker does not go on with fewer, every pod of it is restarted. ``kubectl drain`` evicts pods
one by one through the Eviction API, so without a budget a drain ends a job it could have let
finish. The Eviction API refuses evictions that would leave fewer pods matched by a budget
than its ``minAvailable``, and ``kubectl drain`` retries them until the job ends or its own
``--timeout`` (``--disable-eviction`` deletes pods without asking).

A job has a budget when it forms a gang: when it asks for one by setting
``runPolicy.schedulingPolicy.minAvailable`` (how many of its pods must run together, also the
gang size of its PodGroup), or when the controller runs every job as a gang (a gang scheduler
configured, :mod:`controller.integrations.gang.podgroups`). ``minAvailable`` is that gang size
(:func:`controller.integrations.gang.podgroups.min_available`: every replica unless the job says
fewer). The budget is named after the job and owned by it, so garbage collection removes it with the
job; the pods it selects are the job's, whichever operator made them (pods adopted from
training-operator carry its ``operator-name``). Involuntary ends (an OOM kill, a lost node,
preemption) are not disruptions a budget can refuse; the job's ``restartPolicy`` handles those.

The I/O (creating and updating the object) is :mod:`controller.integrations.budget.pdb_writes`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from controller.integrations.gang.podgroups import GangScheduler, min_available, scheduling_policy
from controller.job.ownership import owner_reference
from shared.constants import LABEL_JOB_NAME, LABEL_OPERATOR_NAME, WATCHED_OPERATOR_NAMES
from shared.spec import as_mapping, is_int, job_name

API_VERSION: Final = "policy/v1"
PLURAL: Final = "poddisruptionbudgets"


def wants_budget(job: Mapping[str, Any], gang: GangScheduler) -> bool:
    """Whether the job's pods get a budget: it is a gang (see the module's docstring)."""
    asked = scheduling_policy(job).get("minAvailable")
    return gang != "none" or (is_int(asked) and asked > 0)


def budget_selector(job: Mapping[str, Any]) -> dict[str, Any]:
    """The job's pods: its name label, made by this operator or adopted from training-operator."""
    return {
        "matchLabels": {LABEL_JOB_NAME: job_name(job)},
        "matchExpressions": [
            {"key": LABEL_OPERATOR_NAME, "operator": "In", "values": list(WATCHED_OPERATOR_NAMES)}
        ],
    }


def build_budget(job: Mapping[str, Any], *, labels: Mapping[str, str]) -> dict[str, Any]:
    """The job's PodDisruptionBudget: at least the gang's size of its pods stay up."""
    meta = as_mapping(job.get("metadata"))
    return {
        "apiVersion": API_VERSION,
        "kind": "PodDisruptionBudget",
        "metadata": {
            "name": job_name(job),
            "namespace": meta.get("namespace"),
            "labels": dict(labels),
            "ownerReferences": [owner_reference(job)],
        },
        "spec": {"minAvailable": min_available(job), "selector": budget_selector(job)},
    }


def budget_update(existing: Mapping[str, Any], wanted: Mapping[str, Any]) -> dict[str, Any] | None:
    """``existing`` with the wanted spec, or None when it already has it (replicas changed
    while the job was suspended change the gang's size)."""
    spec = as_mapping(existing.get("spec"))
    want = as_mapping(wanted.get("spec"))
    if all(spec.get(field) == want[field] for field in ("minAvailable", "selector")):
        return None
    return {**existing, "spec": {**spec, **want}}


def owned_by(existing: Mapping[str, Any], job: Mapping[str, Any]) -> bool:
    """Whether ``existing`` is this job's (a budget of the same name may be an earlier job's)."""
    uid = as_mapping(job.get("metadata")).get("uid")
    owners = as_mapping(existing.get("metadata")).get("ownerReferences") or []
    return any(as_mapping(owner).get("uid") == uid for owner in owners)
