"""The job's PodDisruptionBudget as an :class:`~controller.job.hooks.Integration`
(controller/job/hooks.py): made just before the job's pods are, when the job forms a gang
(:func:`~controller.integrations.budget.pdb.wants_budget`).

Whether every job is a gang depends on the gang scheduler, which is resolved when the
controller starts, after this is built: so the scheduler is asked for at each use, through the
callable given (the gang integration's ``scheduler``, say).

The budget is read from its kind's cache (``stores``:
:class:`~controller.integrations.children.stores.ChildStores`). A foreign object of its name is
left alone and told in a ``ForeignObjectExists`` Warning; the job is not pending for it, as its
pods run without a budget (:mod:`controller.integrations.children.foreign`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from controller.integrations.budget.pdb import wants_budget
from controller.integrations.budget.pdb_writes import BUDGETS, ensure_budget
from controller.integrations.children.ensure import OwnedChildren
from controller.integrations.children.stores import ChildStores
from controller.integrations.gang.podgroups import GangScheduler
from controller.job.hooks import NoHooks, Notice
from controller.job.view import MXJobView
from controller.runtime.client import KubeClient


class BudgetIntegration(NoHooks):
    """A gang's pods are not evicted one by one by a drain
    (controller/integrations/budget/pdb.py)."""

    name = "budget"

    def __init__(
        self,
        client: KubeClient,
        *,
        scheduler: Callable[[], GangScheduler],
        stores: ChildStores | None = None,
    ) -> None:
        self.scheduler = scheduler
        """The gang scheduler as resolved now (``lambda: gang.scheduler``)."""
        self.budgets = OwnedChildren(client, kind=BUDGETS, store=(stores or ChildStores())(BUDGETS))

    def prepare_pods(
        self, job: MXJobView, *, labels: Mapping[str, str], errors: list[Exception]
    ) -> bool:
        """Ensure the budget; one that cannot be written is an error for the reconcile to retry
        but holds no pod back: the job runs as it would without one."""
        if not wants_budget(job, self.scheduler()):
            return True
        try:
            ensure_budget(self.budgets, job, labels=labels)
        except Exception as error:
            errors.append(error)
        return True

    def notices(self, job: MXJobView, pods: Sequence[Mapping[str, Any]]) -> Sequence[Notice]:
        """``ForeignObjectExists`` once, when another object holds the budget's name."""
        if not wants_budget(job, self.scheduler()):
            return ()
        notice = self.budgets.notice(job)
        return (notice,) if notice is not None else ()

    def job_gone(self, namespace: str, name: str) -> None:
        self.budgets.forget(namespace, name)
