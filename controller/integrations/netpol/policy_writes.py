"""The job's NetworkPolicy made to exist before its pods
(:mod:`controller.integrations.netpol.policy` builds it): created when missing, its spec put
back when it differs, and one an earlier job of the same name left deleted and made anew.

Unlike the disruption budget, a policy that is not there holds the pods back (the caller's
choice, :mod:`controller.integrations.netpol.integration`): :func:`ensure_policy` raises
whenever the job's own policy is not known to stand.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from typing import Any

from controller.integrations.netpol.policy import (
    POLICY_API_GROUP,
    POLICY_PLURAL,
    build_policy,
    left_by_earlier_job,
    policy_update,
)
from controller.job.ownership import owned_by
from controller.job.view import MXJobView
from controller.runtime.client import KubeClient, NotFound, resource_path
from shared.spec import as_mapping

log = logging.getLogger(__name__)


class ForeignPolicyError(RuntimeError):
    """A NetworkPolicy named like the job exists and is not the operator's: it is left alone,
    and the job's pods wait (its message says what to do)."""


def policy_path(namespace: str, name: str | None = None) -> str:
    return resource_path(
        group=POLICY_API_GROUP, version="v1", plural=POLICY_PLURAL, namespace=namespace, name=name
    )


def ensure_policy(client: KubeClient, job: MXJobView, *, labels: Mapping[str, str]) -> None:
    """Make the job's policy stand as :func:`build_policy` makes it; return only then.

    A write the API server refuses (no RBAC for networkpolicies, a conflict) is raised, and so
    is :class:`ForeignPolicyError`.
    """
    wanted = build_policy(job, labels=labels)
    path = policy_path(job.namespace, job.name)
    try:
        existing: Mapping[str, Any] = client.request("GET", path)
    except NotFound:
        client.request("POST", policy_path(job.namespace), body=wanted)
        log.info("%s: NetworkPolicy created", job.key)
        return
    if owned_by(existing, job):
        update = policy_update(existing, wanted)
        if update is not None:
            client.request("PUT", path, body=update)
            log.info("%s: NetworkPolicy put back to the job's", job.key)
        return
    if not left_by_earlier_job(existing, job):
        raise ForeignPolicyError(
            f"NetworkPolicy {job.namespace}/{job.name} exists and is not the operator's: "
            f"the job's pods wait until it is renamed or deleted"
        )
    uid = as_mapping(existing.get("metadata")).get("uid")
    with contextlib.suppress(NotFound):
        client.request("DELETE", path, body={"preconditions": {"uid": uid}})
    client.request("POST", policy_path(job.namespace), body=wanted)
    log.info("%s: an earlier job's NetworkPolicy replaced", job.key)
