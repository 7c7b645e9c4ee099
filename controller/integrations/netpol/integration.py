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
policies' cache (declared here, bound by the manager), brings the job back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from controller.integrations.children.ensure import OwnedChildren
from controller.integrations.children.stores import ChildStores
from controller.integrations.netpol.policy_writes import POLICIES, ensure_policy
from controller.job.declaration import Declaration, Stores
from controller.job.hooks import NoHooks, Notice, Preparation
from controller.job.pods import JobPods
from controller.job.status.outcome import Wait
from controller.job.view import MXJobView
from controller.runtime.client import KubeClient


class NetworkPolicyIntegration(NoHooks):
    """A job's pods take connections only from one another."""

    name = "netpol"

    def __init__(self, client: KubeClient) -> None:
        self.children = ChildStores(client)

    @property
    def policies(self) -> OwnedChildren:
        return self.children.owned(POLICIES)

    def declaration(self) -> Declaration:
        """The policies' cache, and their rule: a policy's spec is put back in place
        (``update``); RBAC for it ships in manifests/components/network-policies/jobs/."""
        return Declaration(watches=(POLICIES.watch,), rules=(POLICIES.rule("update"),))

    def bind(self, stores: Stores) -> None:
        self.children.bind(stores)

    def prepare_pods(self, job: MXJobView, *, labels: Mapping[str, str]) -> Preparation:
        """Ensure the policy; without it no pod of the job is created."""
        try:
            return Preparation(ready=not ensure_policy(self.policies, job, labels=labels).foreign)
        except Exception as error:
            return Preparation(ready=False, errors=(error,))

    def waits(self, job: MXJobView, pods: JobPods) -> Wait | None:
        """``Pending`` while a foreign object holds the policy's name."""
        return self.policies.wait(job)

    def notices(self, job: MXJobView, pods: JobPods) -> Sequence[Notice]:
        notice = self.policies.notice(job)
        return (notice,) if notice is not None else ()

    def job_gone(self, namespace: str, name: str, *, uid: str | None) -> None:
        self.policies.forget(namespace, name)
