"""The job's NetworkPolicy written to the API (controller/integrations/netpol/policy_writes.py):
made, put back, an earlier job's replaced, a user's left alone (in-memory fake API)."""

from __future__ import annotations

import pytest

from controller.integrations.netpol.policy import build_policy
from controller.integrations.netpol.policy_writes import (
    ForeignPolicyError,
    ensure_policy,
    policy_path,
)
from tests.controller.fakes import FakeApi
from tests.controller.samples import job, view_of

MNIST = view_of(job())
PATH = "/apis/networking.k8s.io/v1/namespaces/ns/networkpolicies/mnist"


def methods(api: FakeApi) -> list[str]:
    return [w.method for w in api.writes()]


def test_the_path_is_the_networking_api_s() -> None:
    assert policy_path("ns", "mnist") == PATH


def test_a_missing_policy_is_created() -> None:
    api = FakeApi()
    ensure_policy(api, MNIST, labels={})
    assert methods(api) == ["POST"]
    assert api.objects[PATH]["spec"] == build_policy(MNIST, labels={})["spec"]


def test_the_jobs_own_policy_is_left_alone() -> None:
    api = FakeApi()
    ensure_policy(api, MNIST, labels={})
    ensure_policy(api, MNIST, labels={})
    assert methods(api) == ["POST"]


def test_an_edited_policy_is_put_back_with_the_version_read() -> None:
    api = FakeApi()
    ensure_policy(api, MNIST, labels={})
    api.objects[PATH]["spec"]["ingress"] = [{}]
    read = api.objects[PATH]["metadata"]["resourceVersion"]
    ensure_policy(api, MNIST, labels={})
    assert methods(api) == ["POST", "PUT"]
    assert api.writes()[-1].body["metadata"]["resourceVersion"] == read
    assert api.objects[PATH]["spec"] == build_policy(MNIST, labels={})["spec"]


def test_an_earlier_jobs_policy_is_deleted_by_uid_and_the_jobs_own_made_at_once() -> None:
    api = FakeApi()
    earlier = api.put_object(PATH, build_policy(view_of(job(uid="earlier-uid")), labels={}))
    ensure_policy(api, MNIST, labels={})
    assert methods(api) == ["DELETE", "POST"]
    assert api.writes()[0].body == {"preconditions": {"uid": earlier["metadata"]["uid"]}}
    assert api.objects[PATH]["metadata"]["ownerReferences"][0]["uid"] == "job-uid"


def test_a_users_policy_of_the_jobs_name_is_never_deleted() -> None:
    api = FakeApi()
    api.put_object(PATH, {"metadata": {"name": "mnist", "namespace": "ns"}, "spec": {}})
    with pytest.raises(ForeignPolicyError, match="ns/mnist exists and is not the operator's"):
        ensure_policy(api, MNIST, labels={})
    assert api.writes() == []
