"""The job's NetworkPolicy as an :class:`~controller.job.hooks.Integration`
(controller/job/hooks.py): with ``--job-network-policy``, made just before the job's pods are
(:mod:`controller.integrations.netpol.policy` says what it allows and why).

A pod created before its policy stands could be reached by any pod of the cluster, and its
replicas do not authenticate one another: so, unlike the disruption budget, a policy that
cannot be written holds every pod of the job back, and the error is retried with the
reconcile's back-off (a missing RBAC rule shows in the controller's log instead of silently
leaving jobs open).
"""

from __future__ import annotations

from collections.abc import Mapping

from controller.integrations.netpol.policy_writes import ensure_policy
from controller.job.hooks import NoHooks
from controller.job.view import MXJobView
from controller.runtime.client import KubeClient


class NetworkPolicyIntegration(NoHooks):
    """A job's pods take connections only from one another."""

    name = "netpol"

    def __init__(self, client: KubeClient) -> None:
        self.client = client

    def prepare_pods(
        self, job: MXJobView, *, labels: Mapping[str, str], errors: list[Exception]
    ) -> bool:
        """Ensure the policy; without it no pod of the job is created."""
        try:
            ensure_policy(self.client, job, labels=labels)
        except Exception as error:
            errors.append(error)
            return False
        return True
