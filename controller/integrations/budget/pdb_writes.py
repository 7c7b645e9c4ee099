"""The job's PodDisruptionBudget made to exist before its pods
(:mod:`controller.integrations.budget.pdb` builds it): created when missing, its spec updated when
the gang's size changed, and one left by an earlier job of the same name deleted (the next reconcile
creates the job's own).

A budget that cannot be written does not hold the pods back: the job runs as it would without
one, and the error is retried with the reconcile's back-off.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from typing import Any

from controller.integrations.budget.pdb import BUDGET_PLURAL, budget_update, build_budget
from controller.job.ownership import owned_by
from controller.job.view import MXJobView
from controller.runtime.client import AlreadyExists, Conflict, KubeClient, NotFound, resource_path
from shared.spec import as_mapping

log = logging.getLogger(__name__)


def budget_path(namespace: str, name: str | None = None) -> str:
    return resource_path(
        group="policy", version="v1", plural=BUDGET_PLURAL, namespace=namespace, name=name
    )


def ensure_budget(client: KubeClient, job: MXJobView, *, labels: Mapping[str, str]) -> None:
    """Make the job's budget exist with the gang's size (at most one write per call)."""
    wanted = build_budget(job, labels=labels)
    path = budget_path(job.namespace, job.name)
    try:
        existing: Mapping[str, Any] = client.request("GET", path)
    except NotFound:
        with contextlib.suppress(AlreadyExists):  # made meanwhile: the next reconcile checks it
            client.request("POST", budget_path(job.namespace), body=wanted)
            log.info("%s: PodDisruptionBudget created", job.key)
        return
    if not owned_by(existing, job):
        uid = as_mapping(existing.get("metadata")).get("uid")
        with contextlib.suppress(NotFound, Conflict):
            client.request("DELETE", path, body={"preconditions": {"uid": uid}})
        return
    update = budget_update(existing, wanted)
    if update is not None:
        client.request("PUT", path, body=update)
        log.info("%s: PodDisruptionBudget updated", job.key)
