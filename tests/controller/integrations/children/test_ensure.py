"""The one path that makes a job's child stand, over the kind's cache
(controller/integrations/children/ensure.py): created when absent, left when equal, updated
when it drifted, replaced when it cannot be updated, a foreign one left alone and told once, and
a stale cache's AlreadyExists answered by one read (in-memory fake API, the cache filled by
:func:`~tests.controller.fakes.catch_up` where an informer would have caught up)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import pytest

from controller.integrations.children.ensure import (
    CREATED,
    UPDATED,
    ChildNotReadyError,
    OwnedChildren,
)
from controller.integrations.children.kind import ChildKind, Replace, Revision, child_object
from controller.job.ownership import owner_reference
from controller.job.view import MXJobView
from controller.runtime.client import error_for
from controller.runtime.events import FOREIGN_OBJECT_EXISTS
from controller.runtime.store import Store
from tests.controller.fakes import FakeApi, catch_up
from tests.controller.samples import job, view_of

MNIST = view_of(job())
THINGS = ChildKind(kind="Thing", group="example.com", version="v1", plural="things",
                   pods_need_it=True)  # fmt: skip
EXTRAS = ChildKind(kind="Extra", group="example.com", version="v1", plural="things",
                   pods_need_it=False)  # fmt: skip
COLLECTION = THINGS.path("ns")
PATH = THINGS.path("ns", "mnist")


def wanted(view: MXJobView = MNIST, size: int = 2) -> dict[str, Any]:
    meta = {"name": view.name, "namespace": view.namespace,
            "ownerReferences": [owner_reference(view)]}  # fmt: skip
    return {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": meta,
            "spec": {"size": size}}  # fmt: skip


def put_spec_back(stored: Mapping[str, Any], want: Mapping[str, Any]) -> Revision:
    """A kind whose spec is updated in place (a budget, a policy)."""
    return None if stored.get("spec") == want["spec"] else {**stored, "spec": want["spec"]}


def replace_it(stored: Mapping[str, Any], want: Mapping[str, Any]) -> Revision:
    """A kind whose spec is immutable (kube-scheduler's Workload and PodGroup)."""
    return None if stored.get("spec") == want["spec"] else Replace("size")


class Child:
    """A kind's shared path over a FakeApi and a cache the test brings up to date."""

    def __init__(self, kind: ChildKind = THINGS) -> None:
        self.api = FakeApi()
        self.store = Store(transform=child_object)
        self.owned = OwnedChildren(self.api, kind=kind, store=self.store)

    def catch_up(self) -> None:
        catch_up(self.store, self.api, COLLECTION, transform=child_object)

    def put(self, obj: dict[str, Any]) -> dict[str, Any]:
        """An object of the job's name stored (by someone) and seen by the cache."""
        stored = self.api.put_object(PATH, obj)
        self.catch_up()
        return stored

    def sent(self) -> list[tuple[str, str]]:
        return [(r.method, r.path) for r in self.api.requests]


def test_creates_the_child_when_the_cache_has_none_without_reading_the_api() -> None:
    child = Child()
    ensured = child.owned.ensure(MNIST, wanted(), revise=put_spec_back)
    assert child.sent() == [("POST", COLLECTION)]
    assert ensured.wrote == CREATED and not ensured.foreign
    assert ensured.obj["metadata"]["uid"] == child.api.objects[PATH]["metadata"]["uid"]


def test_no_write_and_no_read_of_the_api_when_the_cached_child_equals_the_wanted_one() -> None:
    child = Child()
    child.put(wanted())
    ensured = child.owned.ensure(MNIST, wanted(), revise=put_spec_back)
    assert child.sent() == []
    assert ensured.wrote == "" and ensured.obj["spec"] == {"size": 2}


def test_an_owned_child_that_drifted_is_updated_with_the_version_read_and_cached() -> None:
    child = Child()
    drifted = child.put(wanted(size=5))
    ensured = child.owned.ensure(MNIST, wanted(), revise=put_spec_back)
    (put,) = child.api.writes()
    assert (put.method, put.path) == ("PUT", PATH)
    assert put.body["metadata"]["resourceVersion"] == drifted["metadata"]["resourceVersion"]
    assert child.api.objects[PATH]["spec"] == {"size": 2}
    assert ensured.wrote == UPDATED
    child.owned.ensure(MNIST, wanted(), revise=put_spec_back)
    assert len(child.api.writes()) == 1, "written through: the next call sees the update"


@pytest.mark.parametrize(
    "foreign",
    [
        {"metadata": {"name": "mnist", "namespace": "ns"}, "spec": {"size": 9}},
        wanted(view_of(job(uid="earlier-uid")), size=9),
    ],
    ids=["a user's", "an earlier job's"],
)
def test_a_foreign_child_is_left_as_it_is(foreign: dict[str, Any]) -> None:
    child = Child()
    before = child.put(foreign)
    ensured = child.owned.ensure(MNIST, wanted(), revise=put_spec_back)
    assert ensured.foreign and ensured.wrote == ""
    assert child.api.requests == [], "never deleted, never overwritten"
    assert child.api.objects[PATH] == before


def test_a_foreign_child_is_told_once_in_a_warning_and_the_job_waits_for_it() -> None:
    child = Child()
    child.put({"metadata": {"name": "mnist", "namespace": "ns"}})
    wait = child.owned.wait(MNIST)
    assert wait is not None and wait.reason == FOREIGN_OBJECT_EXISTS
    assert "Thing ns/mnist is not this job's" in wait.message
    assert "the job's pods wait" in wait.message
    notice = child.owned.notice(MNIST)
    assert notice is not None
    assert (notice.type, notice.reason, notice.message) == (
        "Warning", FOREIGN_OBJECT_EXISTS, wait.message,
    )  # fmt: skip
    assert child.owned.notice(MNIST) is None, "said once"
    assert child.owned.wait(MNIST) == wait, "pending for as long as it stands"


def test_another_foreign_object_or_a_new_job_of_the_name_is_told_again() -> None:
    child = Child()
    child.put({"metadata": {"name": "mnist", "namespace": "ns"}})
    assert child.owned.notice(MNIST) is not None
    del child.api.objects[PATH]
    child.put({"metadata": {"name": "mnist", "namespace": "ns"}})
    assert child.owned.notice(MNIST) is not None, "a new object: a new uid"
    child.owned.forget("ns", "mnist")
    assert child.owned.notice(MNIST) is not None


def test_a_child_the_pods_do_not_need_is_told_but_the_job_is_not_pending_for_it() -> None:
    child = Child(EXTRAS)
    child.put({"metadata": {"name": "mnist", "namespace": "ns"}})
    assert child.owned.wait(MNIST) is None
    notice = child.owned.notice(MNIST)
    assert notice is not None and "the job runs without a Extra of its own" in notice.message


def test_nothing_is_said_for_the_jobs_own_child_nor_for_a_finished_or_suspended_job() -> None:
    child = Child()
    child.put(wanted())
    assert child.owned.wait(MNIST) is None and child.owned.notice(MNIST) is None
    other = Child()
    other.put({"metadata": {"name": "mnist", "namespace": "ns"}})
    succeeded = {"conditions": [{"type": "Succeeded", "status": "True", "reason": "Done"}]}
    for view in (view_of(job(status=succeeded)), view_of(job(run_policy={"suspend": True}))):
        assert other.owned.wait(view) is None and other.owned.notice(view) is None


def test_a_create_right_after_a_create_reads_the_child_on_already_exists() -> None:
    child = Child()
    child.owned.ensure(MNIST, wanted(), revise=put_spec_back)
    ensured = child.owned.ensure(MNIST, wanted(), revise=put_spec_back)  # the cache is stale
    assert child.sent() == [("POST", COLLECTION), ("POST", COLLECTION), ("GET", PATH)]
    assert ensured.wrote == "" and not ensured.foreign


def test_a_stale_cache_finds_a_drifted_own_child_by_its_read_and_updates_it() -> None:
    child = Child()
    child.api.put_object(PATH, wanted(size=5))
    ensured = child.owned.ensure(MNIST, wanted(), revise=put_spec_back)
    assert child.sent() == [("POST", COLLECTION), ("GET", PATH), ("PUT", PATH)]
    assert ensured.wrote == UPDATED


def test_a_stale_cache_that_misses_a_foreign_child_leaves_it_after_the_read() -> None:
    child = Child()
    users = child.api.put_object(PATH, {"metadata": {"name": "mnist", "namespace": "ns"}})
    ensured = child.owned.ensure(MNIST, wanted(), revise=put_spec_back)
    assert ensured.foreign
    assert child.sent() == [("POST", COLLECTION), ("GET", PATH)]
    assert child.api.objects[PATH] == users


def test_a_child_gone_between_the_create_and_the_read_is_retried() -> None:
    child = Child()
    child.api.fail_next[("POST", COLLECTION)] = error_for(
        409, "Conflict", {"kind": "Status", "reason": "AlreadyExists", "code": 409}
    )
    with pytest.raises(ChildNotReadyError, match="vanished"):
        child.owned.ensure(MNIST, wanted(), revise=put_spec_back)


def test_a_child_that_cannot_be_updated_is_deleted_by_uid_and_the_pods_held() -> None:
    child = Child()
    old = child.put(wanted(size=5))
    with pytest.raises(ChildNotReadyError, match=r"replaced: it no longer matched \(size\)"):
        child.owned.ensure(MNIST, wanted(), revise=replace_it)
    (delete,) = child.api.writes()
    assert (delete.method, delete.body) == (
        "DELETE", {"preconditions": {"uid": old["metadata"]["uid"]}},
    )  # fmt: skip
    child.catch_up()
    assert child.owned.ensure(MNIST, wanted(), revise=replace_it).wrote == CREATED


def test_the_jobs_own_child_still_being_deleted_holds_the_pods() -> None:
    child = Child()
    going = copy.deepcopy(wanted())
    going["metadata"]["deletionTimestamp"] = "2030-01-01T00:00:00Z"
    child.put(going)
    with pytest.raises(ChildNotReadyError, match="still being deleted"):
        child.owned.ensure(MNIST, wanted(), revise=put_spec_back)
    assert child.api.writes() == []


def test_a_write_the_api_server_refuses_is_raised() -> None:
    child = Child()
    refused = error_for(403, "Forbidden", {"kind": "Status", "reason": "Forbidden", "code": 403})
    child.api.fail_next[("POST", COLLECTION)] = refused
    with pytest.raises(type(refused)):
        child.owned.ensure(MNIST, wanted(), revise=put_spec_back)
