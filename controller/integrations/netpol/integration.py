"""The job's NetworkPolicy as an :class:`~controller.job.hooks.Integration`
(controller/job/hooks.py): with ``--job-network-policy``, made just before the job's pods are
(:mod:`controller.integrations.netpol.policy` says what it allows and why).

A pod created before its policy stands could be reached by any pod of the cluster, and its
replicas do not authenticate one another: so, unlike the disruption budget, a policy that
cannot be written holds every pod of the job back, and the error is retried with the
reconcile's back-off (a missing RBAC rule shows in the controller's log instead of silently
leaving jobs open). A foreign object of the policy's name holds them back too, without an
error: it is left alone, and the job's ``Pending`` condition and a ``ForeignObjectExists``
Warning say why (:mod:`controller.integrations.children.foreign`); its removal, seen by the
policies' cache (``stores``), brings the job back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from controller.integrations.children.ensure import OwnedChildren
from controller.integrations.children.stores import ChildStores
from controller.integrations.netpol.policy_writes import POLICIES, ensure_policy
from controller.job.hooks import NoHooks, Notice
from controller.job.status.outcome import Wait
from controller.job.view import MXJobView
from controller.runtime.client import KubeClient


class NetworkPolicyIntegration(NoHooks):
    """A job's pods take connections only from one another."""

    name = "netpol"

    def __init__(self, client: KubeClient, *, stores: ChildStores | None = None) -> None:
        self.policies = OwnedChildren(
            client, kind=POLICIES, store=(stores or ChildStores())(POLICIES)
        )

    def prepare_pods(
        self, job: MXJobView, *, labels: Mapping[str, str], errors: list[Exception]
    ) -> bool:
        """Ensure the policy; without it no pod of the job is created."""
        try:
            return not ensure_policy(self.policies, job, labels=labels).foreign
        except Exception as error:
            errors.append(error)
            return False

    def waits(self, job: MXJobView, pods: Sequence[Mapping[str, Any]]) -> Wait | None:
        """``Pending`` while a foreign object holds the policy's name."""
        return self.policies.wait(job)

    def notices(self, job: MXJobView, pods: Sequence[Mapping[str, Any]]) -> Sequence[Notice]:
        notice = self.policies.notice(job)
        return (notice,) if notice is not None else ()

    def job_gone(self, namespace: str, name: str) -> None:
        self.policies.forget(namespace, name)
