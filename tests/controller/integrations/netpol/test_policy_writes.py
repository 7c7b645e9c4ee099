"""The job's NetworkPolicy as a child of the job, over the policies' cache
(controller/integrations/netpol/policy_writes.py): made, put back, and a foreign one (a user's,
an earlier job's) left alone (in-memory fake API; the path itself:
tests/controller/integrations/children/test_ensure.py)."""

from __future__ import annotations

from typing import Any

from controller.integrations.children.ensure import OwnedChildren
from controller.integrations.children.kind import child_object
from controller.integrations.netpol.policy import build_policy
from controller.integrations.netpol.policy_writes import POLICIES, ensure_policy
from controller.runtime.store import Store
from tests.controller.fakes import FakeApi, catch_up
from tests.controller.samples import job, view_of

MNIST = view_of(job())
PATH = "/apis/networking.k8s.io/v1/namespaces/ns/networkpolicies/mnist"


def policies(api: FakeApi) -> OwnedChildren:
    return OwnedChildren(api, kind=POLICIES, store=Store(transform=child_object))


def seen(owned: OwnedChildren, api: FakeApi) -> OwnedChildren:
    catch_up(owned.store, api, POLICIES.path("ns"), transform=child_object)
    return owned


def methods(api: FakeApi) -> list[str]:
    return [w.method for w in api.writes()]


def test_the_kind_is_the_networking_api_s_and_the_pods_need_it() -> None:
    assert POLICIES.path("ns", "mnist") == PATH
    assert POLICIES.pods_need_it and POLICIES.always_served


def test_a_missing_policy_is_created() -> None:
    api = FakeApi()
    ensure_policy(policies(api), MNIST, labels={})
    assert methods(api) == ["POST"]
    assert api.objects[PATH]["spec"] == build_policy(MNIST, labels={})["spec"]


def test_the_jobs_own_policy_is_left_alone() -> None:
    api = FakeApi()
    owned = policies(api)
    ensure_policy(owned, MNIST, labels={})
    ensure_policy(seen(owned, api), MNIST, labels={})
    assert [r.method for r in api.requests] == ["POST"]


def test_an_edited_policy_is_put_back_with_the_version_read() -> None:
    api = FakeApi()
    owned = policies(api)
    ensure_policy(owned, MNIST, labels={})
    api.objects[PATH]["spec"]["ingress"] = [{}]
    read = api.objects[PATH]["metadata"]["resourceVersion"]
    ensure_policy(seen(owned, api), MNIST, labels={})
    assert methods(api) == ["POST", "PUT"]
    assert api.writes()[-1].body["metadata"]["resourceVersion"] == read
    assert api.objects[PATH]["spec"] == build_policy(MNIST, labels={})["spec"]


def foreign_is_left(api: FakeApi, obj: dict[str, Any]) -> None:
    stored = api.put_object(PATH, obj)
    assert ensure_policy(seen(policies(api), api), MNIST, labels={}).foreign
    assert api.writes() == [] and api.objects[PATH] == stored


def test_a_users_policy_of_the_jobs_name_is_never_deleted_nor_overwritten() -> None:
    foreign_is_left(FakeApi(), {"metadata": {"name": "mnist", "namespace": "ns"}, "spec": {}})


def test_an_earlier_jobs_policy_is_left_for_garbage_collection() -> None:
    foreign_is_left(FakeApi(), build_policy(view_of(job(uid="earlier-uid")), labels={}))
