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

from controller.integrations.gang.podgroups import GangScheduler, min_available
from controller.job.ownership import owner_reference
from controller.job.view import MXJobView
from shared.constants import LABEL_JOB_NAME, LABEL_OPERATOR_NAME, WATCHED_OPERATOR_NAMES
from shared.spec import as_mapping, is_int

BUDGET_API_VERSION: Final = "policy/v1"
BUDGET_PLURAL: Final = "poddisruptionbudgets"


def wants_budget(job: MXJobView, gang: GangScheduler) -> bool:
    """Whether the job's pods get a budget: it is a gang (see the module's docstring)."""
    asked = job.run_policy.scheduling_policy.get("minAvailable")
    return gang != "none" or (is_int(asked) and asked > 0)


def budget_selector(job: MXJobView) -> dict[str, Any]:
    """The job's pods: its name label, made by this operator or adopted from training-operator."""
    return {
        "matchLabels": {LABEL_JOB_NAME: job.name},
        "matchExpressions": [
            {"key": LABEL_OPERATOR_NAME, "operator": "In", "values": list(WATCHED_OPERATOR_NAMES)}
        ],
    }


def build_budget(job: MXJobView, *, labels: Mapping[str, str]) -> dict[str, Any]:
    """The job's PodDisruptionBudget: at least the gang's size of its pods stay up."""
    return {
        "apiVersion": BUDGET_API_VERSION,
        "kind": "PodDisruptionBudget",
        "metadata": {
            "name": job.name,
            "namespace": job.namespace,
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
