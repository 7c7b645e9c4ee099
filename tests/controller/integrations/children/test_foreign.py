"""The one rule for a foreign object of a job's child's name: whose it is, what the job is told,
and when the job waits for it (controller/integrations/children/foreign.py)."""

from __future__ import annotations

from typing import Any

from controller.integrations.children.foreign import (
    foreign_message,
    foreign_wait,
    is_foreign,
    left_by_earlier_job,
)
from controller.integrations.children.kind import ChildKind
from controller.job.ownership import owner_reference
from controller.runtime.events import FOREIGN_OBJECT_EXISTS
from tests.controller.samples import job, view_of

MNIST = view_of(job())
GROUPS = ChildKind(kind="PodGroup", group="example.com", version="v1", plural="podgroups",
                   pods_need_it=True)  # fmt: skip
BUDGETS = ChildKind(kind="PodDisruptionBudget", group="policy", version="v1",
                    plural="poddisruptionbudgets", pods_need_it=False)  # fmt: skip


def named_mnist(*references: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "mnist", "namespace": "ns", "ownerReferences": list(references)}}


OWN = named_mnist(owner_reference(MNIST))
EARLIER = named_mnist(owner_reference(view_of(job(uid="earlier-uid"))))
USERS = named_mnist()


def test_only_an_object_the_job_controls_by_uid_is_its_own() -> None:
    assert not is_foreign(OWN, MNIST)
    assert is_foreign(USERS, MNIST)
    assert is_foreign(EARLIER, MNIST)
    owner_not_controller = named_mnist({**owner_reference(MNIST), "controller": False})
    assert is_foreign(owner_not_controller, MNIST)
    assert is_foreign(OWN, view_of(job(uid=""))), "a job without a uid owns nothing"


def test_only_an_object_controlled_by_an_earlier_mxjob_of_the_name_was_left_behind() -> None:
    assert left_by_earlier_job(EARLIER, MNIST)
    assert not left_by_earlier_job(OWN, MNIST)
    assert not left_by_earlier_job(USERS, MNIST)
    other_job = named_mnist(owner_reference(view_of(job("other", uid="earlier-uid"))))
    assert not left_by_earlier_job(other_job, MNIST)


def test_the_message_says_whose_it_is_and_that_the_pods_wait_when_they_need_it() -> None:
    users = foreign_message(GROUPS, USERS, MNIST)
    assert users.startswith("PodGroup ns/mnist is not this job's")
    assert "rename or delete it" in users and "the job's pods wait" in users
    earlier = foreign_message(GROUPS, EARLIER, MNIST)
    assert "earlier MXJob of this name; garbage collection deletes it" in earlier
    budget = foreign_message(BUDGETS, USERS, MNIST)
    assert budget.endswith("the job runs without a PodDisruptionBudget of its own.")


def test_the_job_is_pending_for_a_foreign_object_only_when_its_pods_need_it() -> None:
    wait = foreign_wait(GROUPS, USERS, MNIST)
    assert wait is not None
    assert (wait.reason, wait.message) == (
        FOREIGN_OBJECT_EXISTS, foreign_message(GROUPS, USERS, MNIST),
    )  # fmt: skip
    assert foreign_wait(BUDGETS, USERS, MNIST) is None
