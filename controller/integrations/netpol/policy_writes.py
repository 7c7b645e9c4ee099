"""The job's NetworkPolicy as a child of the job (:mod:`controller.integrations.netpol.policy`
builds it), made to stand before its pods through the shared path
(:mod:`controller.integrations.children.ensure`): created when missing, its spec put back when
it differs (:func:`~controller.integrations.netpol.policy.policy_update`), a foreign one of its
name left alone.

Unlike the disruption budget, the job's pods need it (:attr:`POLICIES`' ``pods_need_it``): a pod
made before its policy stands could be reached by any pod of the cluster, so while another
object holds the name the pods wait (the caller's choice,
:mod:`controller.integrations.netpol.integration`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from controller.integrations.children.ensure import Ensured, OwnedChildren
from controller.integrations.children.kind import ChildKind
from controller.integrations.netpol.policy import (
    POLICY_API_GROUP,
    POLICY_PLURAL,
    build_policy,
    policy_update,
)
from controller.job.view import MXJobView

POLICIES: Final = ChildKind(
    kind="NetworkPolicy",
    group=POLICY_API_GROUP,
    version="v1",
    plural=POLICY_PLURAL,
    pods_need_it=True,
    always_served=True,
)


def ensure_policy(policies: OwnedChildren, job: MXJobView, *, labels: Mapping[str, str]) -> Ensured:
    """Make the job's policy stand as :func:`build_policy` makes it (at most one write per
    call); a write the API server refuses (no RBAC for networkpolicies, a conflict) is raised."""
    return policies.ensure(job, build_policy(job, labels=labels), revise=policy_update)
