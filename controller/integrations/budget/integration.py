"""The job's PodDisruptionBudget as an :class:`~controller.job.hooks.Integration`
(controller/job/hooks.py): made just before the job's pods are, when the job forms a gang
(:func:`~controller.integrations.budget.pdb.wants_budget`).

Whether every job is a gang depends on the gang scheduler, resolved before the integrations are
built (controller/integrations/chosen.py): it is given as it is.

The budget is read from its kind's cache, declared here and bound by the manager
(:class:`~controller.integrations.children.stores.ChildStores`). A foreign object of its name is
left alone and told in a ``ForeignObjectExists`` Warning; the job is not pending for it, as its
pods run without a budget (:mod:`controller.integrations.children.foreign`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from controller.integrations.budget.pdb import wants_budget
from controller.integrations.budget.pdb_writes import BUDGETS, ensure_budget
from controller.integrations.children.ensure import OwnedChildren
from controller.integrations.children.stores import ChildStores
from controller.integrations.gang.podgroups import GangScheduler
from controller.job.declaration import Declaration, Stores
from controller.job.hooks import READY, NoHooks, Notice, Preparation
from controller.job.pods import JobPods
from controller.job.view import MXJobView
from controller.runtime.client import KubeClient


class BudgetIntegration(NoHooks):
    """A gang's pods are not evicted one by one by a drain
    (controller/integrations/budget/pdb.py)."""

    name = "budget"

    def __init__(self, client: KubeClient, *, scheduler: GangScheduler) -> None:
        self.scheduler = scheduler
        """The gang scheduler, as resolved at start-up."""
        self.children = ChildStores(client)

    @property
    def budgets(self) -> OwnedChildren:
        return self.children.owned(BUDGETS)

    def declaration(self) -> Declaration:
        """The budgets' cache, whatever the scheduler (a job may ask for a gang itself), and
        their rule: a budget's spec is updated in place (``update``)."""
        return Declaration(watches=(BUDGETS.watch,), rules=(BUDGETS.rule("update"),))

    def bind(self, stores: Stores) -> None:
        self.children.bind(stores)

    def prepare_pods(self, job: MXJobView, *, labels: Mapping[str, str]) -> Preparation:
        """Ensure the budget; one that cannot be written is an error for the reconcile to retry
        but holds no pod back: the job runs as it would without one."""
        if not wants_budget(job, self.scheduler):
            return READY
        try:
            ensure_budget(self.budgets, job, labels=labels)
        except Exception as error:
            return Preparation(ready=True, errors=(error,))
        return READY

    def notices(self, job: MXJobView, pods: JobPods) -> Sequence[Notice]:
        """``ForeignObjectExists`` once, when another object holds the budget's name."""
        if not wants_budget(job, self.scheduler):
            return ()
        notice = self.budgets.notice(job)
        return (notice,) if notice is not None else ()

    def job_gone(self, namespace: str, name: str, *, uid: str | None) -> None:
        self.budgets.forget(namespace, name)
