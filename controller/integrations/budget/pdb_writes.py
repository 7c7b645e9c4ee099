"""The job's PodDisruptionBudget as a child of the job (:mod:`controller.integrations.budget.pdb`
builds it), made to stand before its pods through the shared path
(:mod:`controller.integrations.children.ensure`): created when missing, its spec updated when
the gang's size changed (:func:`~controller.integrations.budget.pdb.budget_update`), a foreign
one of its name left alone.

The job's pods do not need it to run (:attr:`BUDGETS`' ``pods_need_it``): a budget that cannot
be made, or whose name another object holds, leaves the job running as it would without one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from controller.integrations.budget.pdb import (
    BUDGET_PLURAL,
    budget_update,
    build_budget,
)
from controller.integrations.children.ensure import Ensured, OwnedChildren
from controller.integrations.children.kind import ChildKind
from controller.job.view import MXJobView

BUDGETS: Final = ChildKind(
    kind="PodDisruptionBudget",
    group="policy",
    version="v1",
    plural=BUDGET_PLURAL,
    pods_need_it=False,
    always_served=True,
)


def ensure_budget(budgets: OwnedChildren, job: MXJobView, *, labels: Mapping[str, str]) -> Ensured:
    """Make the job's budget stand with the gang's size (at most one write per call)."""
    return budgets.ensure(job, build_budget(job, labels=labels), revise=budget_update)
