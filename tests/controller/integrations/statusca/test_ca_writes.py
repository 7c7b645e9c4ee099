"""controller/integrations/statusca/ca_writes.py: the job's CA ConfigMap as a child of the job,
named with a suffix, through the shared path (in-memory fake API; the path itself:
tests/controller/integrations/children/test_ensure.py)."""

from __future__ import annotations

from controller.integrations.children.ensure import OwnedChildren
from controller.integrations.children.kind import child_object
from controller.integrations.statusca.ca_writes import CA_CONFIGMAPS, ensure_ca
from controller.job.desired import job_labels
from controller.runtime.store import Store
from tests.controller.fakes import FakeApi, catch_up
from tests.controller.samples import job, view_of

MNIST = view_of(job())
PATH = "/api/v1/namespaces/ns/configmaps/mnist-status-ca"


def configmaps(api: FakeApi) -> OwnedChildren:
    return OwnedChildren(api, kind=CA_CONFIGMAPS, store=Store(transform=child_object))


def test_the_kind_is_the_core_apis_configmaps_named_job_status_ca() -> None:
    assert CA_CONFIGMAPS.path("ns", CA_CONFIGMAPS.name_for("mnist")) == PATH
    assert CA_CONFIGMAPS.pods_need_it and CA_CONFIGMAPS.always_served
    assert CA_CONFIGMAPS.watch.name == "configmaps"
    named = {"metadata": {"namespace": "ns", "name": "mnist-status-ca"}}
    assert CA_CONFIGMAPS.watch.job_of(named) == "ns/mnist"
    other = {"metadata": {"namespace": "ns", "name": "kube-root-ca.crt"}}
    assert CA_CONFIGMAPS.watch.job_of(other) is None


def test_it_is_created_then_left_then_updated_when_the_ca_changes() -> None:
    api = FakeApi()
    owned = configmaps(api)
    labels = job_labels(MNIST)
    assert ensure_ca(owned, MNIST, labels=labels, ca=b"ONE").wrote == "created"
    assert api.objects[PATH]["data"] == {"ca.crt": "ONE"}
    catch_up(owned.store, api, CA_CONFIGMAPS.path("ns"), transform=child_object)
    assert ensure_ca(owned, MNIST, labels=labels, ca=b"ONE").wrote == ""
    assert ensure_ca(owned, MNIST, labels=labels, ca=b"TWO").wrote == "updated"
    assert api.objects[PATH]["data"] == {"ca.crt": "TWO"}
    assert [w.method for w in api.writes()] == ["POST", "PUT"]


def test_a_foreign_configmap_of_the_name_is_left_alone() -> None:
    api = FakeApi()
    users = {"metadata": {"name": "mnist-status-ca", "namespace": "ns"}, "data": {"ca.crt": "X"}}
    api.put_object(PATH, users)
    owned = configmaps(api)
    catch_up(owned.store, api, CA_CONFIGMAPS.path("ns"), transform=child_object)
    assert ensure_ca(owned, MNIST, labels=job_labels(MNIST), ca=b"ONE").foreign
    assert api.writes() == []
    assert api.objects[PATH]["data"] == {"ca.crt": "X"}
