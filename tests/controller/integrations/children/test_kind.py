"""A kind of a job's child as data, and what its cache keeps of each object
(controller/integrations/children/kind.py)."""

from __future__ import annotations

from typing import Any

from controller.integrations.children.kind import (
    ChildKind,
    child_object,
    controlled_by_an_mxjob,
)
from controller.job.ownership import owner_reference
from tests.controller.samples import job, view_of

MNIST = view_of(job())
THINGS = ChildKind(kind="Thing", group="example.com", version="v1", plural="things",
                   pods_need_it=True)  # fmt: skip


def stored(**metadata: Any) -> dict[str, Any]:
    meta = {"name": "mnist", "namespace": "ns", "uid": "u-1", "resourceVersion": "7", **metadata}
    return {"metadata": {**meta, "managedFields": [{"manager": "kubectl"}]},
            "spec": {"big": "x" * 100}, "status": {"phase": "Inqueue"}}  # fmt: skip


def test_a_kind_names_its_paths_as_the_api_server_does() -> None:
    assert THINGS.path() == "/apis/example.com/v1/things"
    assert THINGS.path("ns") == "/apis/example.com/v1/namespaces/ns/things"
    assert THINGS.path("ns", "mnist") == "/apis/example.com/v1/namespaces/ns/things/mnist"
    assert THINGS.resource == "things.example.com"


def test_an_object_an_mxjob_controls_is_cached_whole_without_managed_fields() -> None:
    obj = stored(ownerReferences=[owner_reference(MNIST)])
    cached = child_object(obj)
    assert cached["spec"] == obj["spec"] and cached["status"] == {"phase": "Inqueue"}
    assert "managedFields" not in cached["metadata"]


def test_any_other_object_is_cached_as_whose_it_is_and_nothing_more() -> None:
    users = stored(labels={"app": "mine"}, deletionTimestamp="2030-01-01T00:00:00Z")
    assert child_object(users) == {"metadata": {
        "name": "mnist", "namespace": "ns", "uid": "u-1", "resourceVersion": "7",
        "deletionTimestamp": "2030-01-01T00:00:00Z",
    }}  # fmt: skip
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "d",
                  "controller": True}  # fmt: skip
    assert "spec" not in child_object(stored(ownerReferences=[deployment]))


def test_any_mxjob_controller_counts_whatever_its_version_and_only_as_controller() -> None:
    reference = owner_reference(MNIST)
    assert controlled_by_an_mxjob(stored(ownerReferences=[reference]))
    older = {**reference, "apiVersion": "kubeflow.org/v1beta1", "uid": "earlier"}
    assert controlled_by_an_mxjob(stored(ownerReferences=[older]))
    not_controller = {**reference, "controller": False}
    assert not controlled_by_an_mxjob(stored(ownerReferences=[not_controller]))
    other_group = {**reference, "apiVersion": "example.com/v1"}
    assert not controlled_by_an_mxjob(stored(ownerReferences=[other_group]))


def test_a_kinds_cache_is_declared_as_a_watch_of_its_resource_by_the_jobs_name() -> None:
    watch = THINGS.watch
    assert (watch.name, watch.path("ns")) == ("things.example.com", THINGS.path("ns"))
    assert watch.job_of(stored()) == "ns/mnist", "the job of the object's name"
    assert watch.transform is child_object and not watch.queues_gone_jobs
    assert watch.optional, "not always served: asked of the API server first"
    built_in = ChildKind(kind="Thing", group="example.com", version="v1", plural="things",
                         pods_need_it=False, always_served=True)  # fmt: skip
    assert not built_in.watch.optional
    assert THINGS.watch == THINGS.watch, "declared alike each time it is asked"


def test_a_kinds_rule_covers_the_shared_path_and_the_writes_it_is_given() -> None:
    rule = THINGS.rule("delete")
    assert rule.grants() == {
        ("example.com", "things", verb) for verb in ("get", "list", "watch", "create", "delete")
    }


def test_a_kind_named_with_a_suffix_maps_only_names_with_it_back_to_their_job() -> None:
    suffixed = ChildKind(kind="Thing", group="example.com", version="v1", plural="things",
                         pods_need_it=True, suffix="-x")  # fmt: skip
    assert (suffixed.name_for("mnist"), suffixed.key_for(MNIST)) == ("mnist-x", "ns/mnist-x")
    job_of = suffixed.watch.job_of
    assert job_of({"metadata": {"namespace": "ns", "name": "mnist-x"}}) == "ns/mnist"
    assert job_of({"metadata": {"namespace": "ns", "name": "mnist"}}) is None
    assert job_of({"metadata": {"namespace": "ns", "name": "-x"}}) is None
    again = ChildKind(kind="Thing", group="example.com", version="v1", plural="things",
                      pods_need_it=True, suffix="-x")  # fmt: skip
    assert again.watch == suffixed.watch, "equal kinds declare equal watches"
    assert THINGS.key_for(MNIST) == MNIST.key and THINGS.name_for("mnist") == "mnist"
