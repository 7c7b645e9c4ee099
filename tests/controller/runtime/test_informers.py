"""Informers: list + watch into the cache; bookmarks, reconnects and 410 relists."""

from __future__ import annotations

import copy
import gc
import json
import sys
from typing import Any

import pytest

from controller.job.observed import is_tracked, main_container_status, observe
from controller.job.ownership import controller_uid
from controller.runtime.client import Gone
from controller.runtime.informers import (
    INTERN_MAX_LENGTH,
    Informer,
    InformerSettings,
    cached_object,
    compact,
    slim_pod,
)
from controller.runtime.store import Store
from tests.controller.fakes import ScriptedWatchApi
from tests.controller.runtime.cache_samples import obj

Obj = dict[str, Any]


def listing(*items: Obj, rv: str, token: str = "") -> Obj:
    return {"metadata": {"resourceVersion": rv, "continue": token}, "items": list(items)}


def event(kind: str, item: Obj) -> Obj:
    return {"type": kind, "object": item}


def run(api: ScriptedWatchApi, **kwargs: Any) -> tuple[Informer, list[tuple[str, str]]]:
    """Run an informer over the scripts until they are used up; return it and its events."""
    informer = Informer(
        api,
        name="test",
        path_for=lambda ns: "/api/v1/pods",
        index_label="job",
        settings=InformerSettings(retry_min=0.001, retry_max=0.002),
        **kwargs,
    )
    seen: list[tuple[str, str]] = []
    informer.add_handler(lambda kind, o, old: seen.append((kind, o["metadata"]["name"])))
    api.on_exhausted = lambda: informer.stop(wait=False)
    informer.start()
    for thread in informer._threads:
        thread.join(timeout=5)
    assert not informer.alive()
    return informer, seen


def test_lists_every_page_then_watches_from_the_lists_version_with_bookmarks() -> None:
    api = ScriptedWatchApi(
        lists=[listing(obj("a", "5"), rv="9", token="next"), listing(obj("b", "6"), rv="10")],
        watches=[[event("MODIFIED", obj("a", "11")), event("DELETED", obj("b", "12"))]],
    )
    informer, seen = run(api)
    assert ("continue", "next") in api.list_queries[1]
    query = dict(api.watch_queries[0])
    assert query["resourceVersion"] == "10" and query["allowWatchBookmarks"] == "true"
    assert seen == [("ADDED", "a"), ("ADDED", "b"), ("MODIFIED", "a"), ("DELETED", "b")]
    assert informer.store.all_keys() == ["ns/a"]
    assert informer.has_synced()
    assert "managedFields" not in informer.store.get("ns/a")["metadata"]  # type: ignore[index]


def test_a_closed_stream_resumes_from_the_last_bookmark_without_relisting() -> None:
    api = ScriptedWatchApi(
        lists=[listing(rv="10")],
        watches=[
            [{"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "50"}}}],
            [event("ADDED", obj("c", "51"))],
        ],
    )
    informer, seen = run(api)
    assert dict(api.watch_queries[1])["resourceVersion"] == "50"
    assert informer.relists == 1 and seen == [("ADDED", "c")]


def test_a_dropped_connection_reconnects_from_the_last_version() -> None:
    api = ScriptedWatchApi(
        lists=[listing(obj("a", "5"), rv="10")],
        watches=[
            [event("MODIFIED", obj("a", "20"))],
            ConnectionResetError("reset"),
            [event("MODIFIED", obj("a", "21"))],
        ],
    )
    informer, _ = run(api)
    assert [dict(q)["resourceVersion"] for q in api.watch_queries[:3]] == ["10", "20", "20"]
    assert informer.relists == 1


def test_an_expired_watch_relists_and_reports_what_vanished_meanwhile() -> None:
    api = ScriptedWatchApi(
        lists=[listing(obj("a", "5"), obj("b", "6"), rv="10"), listing(obj("a", "30"), rv="31")],
        watches=[
            [{"type": "ERROR", "object": {"code": 410, "message": "too old"}}],
            [event("ADDED", obj("d", "32"))],
        ],
    )
    informer, seen = run(api)
    assert informer.relists == 2
    assert seen[2:] == [("DELETED", "b"), ("MODIFIED", "a"), ("ADDED", "d")]
    assert dict(api.watch_queries[1])["resourceVersion"] == "31"


def test_a_410_answer_to_the_watch_request_also_relists() -> None:
    api = ScriptedWatchApi(
        lists=[listing(rv="10"), listing(rv="40")],
        watches=[Gone(410, "Gone", {"reason": "Expired"}), []],
    )
    informer, _ = run(api)
    assert informer.relists == 2


def test_one_watch_per_namespace_when_namespaces_are_given() -> None:
    paths: list[str | None] = []
    api = ScriptedWatchApi(lists=[listing(rv="1"), listing(rv="2")], watches=[])

    def path_for(namespace: str | None) -> str:
        paths.append(namespace)
        return f"/api/v1/namespaces/{namespace}/pods"

    informer = Informer(
        api,
        name="ns",
        path_for=path_for,
        namespaces=("a", "b"),
        settings=InformerSettings(retry_min=0.001),
    )
    informer.start()
    assert informer.wait_synced(timeout=5)
    informer.stop()
    assert not informer.alive()
    assert {"a", "b"} <= set(paths)
    assert len(api.list_queries) == 2


def test_slim_pods_keep_only_what_status_needs() -> None:
    pod = obj(
        "a",
        "1",
        spec={
            "nodeName": "n",
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1,
            "containers": [{}],
        },
        status={"phase": "Running", "podIP": "10.0.0.1", "conditions": [{"type": "Ready"}]},
    )
    slim = slim_pod(pod)
    assert slim["spec"] == {
        "nodeName": "n",
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 1,
    }
    assert slim["status"] == {"phase": "Running"}
    assert "managedFields" not in slim["metadata"]


def test_slim_pods_keep_the_disruption_target_condition_and_init_container_states() -> None:
    disrupted = {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI"}
    waiting = {"name": "init", "state": {"waiting": {"reason": "ErrImagePull"}}, "image": "x"}
    pod = obj(
        "a",
        "1",
        status={"phase": "Pending", "conditions": [{"type": "Ready"}, disrupted],
                "initContainerStatuses": [waiting]},
    )  # fmt: skip
    slim = slim_pod(pod)
    assert slim["status"]["conditions"] == [disrupted]
    assert slim["status"]["initContainerStatuses"] == [
        {"name": "init", "state": {"waiting": {"reason": "ErrImagePull"}}}
    ]


def test_slim_pods_keep_why_no_node_takes_them_and_not_that_one_did() -> None:
    unschedulable = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                     "message": "0/5 nodes are available: 5 Insufficient cpu."}  # fmt: skip
    waiting = slim_pod(obj("a", "1", status={"phase": "Pending", "conditions": [unschedulable]}))
    assert waiting["status"]["conditions"] == [unschedulable]
    assert observe(waiting).unschedulable == unschedulable["message"]
    placed = {"type": "PodScheduled", "status": "True"}
    running = slim_pod(obj("a", "2", status={"phase": "Running", "conditions": [placed]}))
    assert "conditions" not in running["status"]


def _kubelet_pod(state: Obj, *, phase: str, restarts: int = 0) -> Obj:
    """A pod as a kubelet reports it: every status field the API server fills in."""
    return {
        "metadata": {
            "name": "job-worker-0",
            "namespace": "ns",
            "uid": "9f0c6a1e-2a4b-4c8e-9d3f-0b1a2c3d4e5f",
            "resourceVersion": "42",
            "labels": {
                "training.kubeflow.org/job-name": "job",
                "training.kubeflow.org/replica-type": "worker",
                "training.kubeflow.org/replica-index": "0",
            },
            "annotations": {"training.kubeflow.org/restarts-before": "2"},
            "finalizers": ["training.kubeflow.org/mxjob-tracking"],
            "ownerReferences": [{"kind": "MXJob", "uid": "u", "controller": True}],
            "deletionTimestamp": "2026-01-01T00:00:09Z",
            "managedFields": [{"manager": "kubelet"}],
        },
        "spec": {
            "nodeName": "n",
            "restartPolicy": "OnFailure",
            "terminationGracePeriodSeconds": 7,
            "containers": [{"name": "mxnet", "image": "i", "env": [{"name": "A", "value": "b"}]}],
        },
        "status": {
            "phase": phase,
            "reason": "Evicted" if phase == "Failed" else None,
            "conditions": [{"type": "Ready", "status": "False"}],
            "hostIP": "10.0.0.1",
            "podIP": "10.1.0.1",
            "podIPs": [{"ip": "10.1.0.1"}],
            "qosClass": "BestEffort",
            "startTime": "2026-01-01T00:00:00Z",
            "containerStatuses": [
                {
                    "name": "sidecar",
                    "image": "s",
                    "imageID": "s@sha256:0",
                    "ready": False,
                    "restartCount": 0,
                    "state": {"terminated": {"exitCode": 9, "reason": "Error"}},
                },
                {
                    "name": "mxnet",
                    "image": "i",
                    "imageID": "i@sha256:1",
                    "containerID": "containerd://x",
                    "ready": False,
                    "started": False,
                    "restartCount": restarts,
                    "state": state,
                    "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}},
                },
            ],
        },
    }


@pytest.mark.parametrize(
    ("state", "phase"),
    [
        ({"running": {"startedAt": "2026-01-01T00:00:01Z"}}, "Running"),
        ({"terminated": {"exitCode": 0, "reason": "Completed"}}, "Succeeded"),
        ({"terminated": {"exitCode": 1, "reason": "Error"}}, "Failed"),
        ({"waiting": {"reason": "CrashLoopBackOff"}}, "Running"),
    ],
)
def test_a_slim_pod_reads_as_the_full_pod_does(state: Obj, phase: str) -> None:
    """Everything the controller reads of a pod survives the cache (controller/job/observed.py)."""
    full = _kubelet_pod(state, phase=phase, restarts=3)
    slim = slim_pod(copy.deepcopy(full))
    assert observe(slim) == observe(full)
    assert controller_uid(slim) == controller_uid(full)
    assert is_tracked(slim) and slim["metadata"]["finalizers"] == full["metadata"]["finalizers"]
    assert slim["metadata"]["labels"] == full["metadata"]["labels"]
    assert main_container_status(slim)["lastState"] == {
        "terminated": {"exitCode": 137, "reason": "OOMKilled"}
    }
    assert "conditions" not in slim["status"] and "podIP" not in slim["status"]
    assert set(slim["status"]["containerStatuses"][1]) == {
        "name",
        "state",
        "lastState",
        "restartCount",
    }


def test_cached_objects_share_one_copy_of_each_key_and_short_value() -> None:
    first = cached_object(json.loads(json.dumps(_kubelet_pod({}, phase="Running"))))
    second = cached_object(json.loads(json.dumps(_kubelet_pod({}, phase="Running"))))
    key_1 = next(k for k in first["metadata"]["labels"] if k.endswith("job-name"))
    key_2 = next(k for k in second["metadata"]["labels"] if k.endswith("job-name"))
    assert key_1 is key_2
    assert first["status"]["phase"] is second["status"]["phase"]
    assert first["metadata"]["uid"] is second["metadata"]["uid"]
    assert first == json.loads(json.dumps(_kubelet_pod({}, phase="Running"))) | {
        "metadata": {k: v for k, v in first["metadata"].items() if k != "managedFields"}
    }
    assert "managedFields" not in first["metadata"]


def test_long_strings_are_not_interned() -> None:
    text = "x" * (INTERN_MAX_LENGTH + 1)
    a, b = compact({"v": "".join(text)}), compact({"v": "".join(text)})
    assert a == b and a["v"] is not b["v"]


def test_interned_values_are_freed_with_the_objects_that_held_them() -> None:
    """Unique values (uids, timestamps) must not outlive their object in the interpreter's
    table of interned strings, or a long-running controller would grow with every pod.

    ``sys.intern`` of a fresh, equal string returns the copy already interned while one is
    alive, and the fresh string itself once none is: that tells, without measuring memory
    (which the table's own resizing blurs), whether the cached value was freed.
    """

    def fresh(number: int) -> str:
        return "".join(["uid-", f"{number:034d}"])  # built at run time: never interned yet

    cached = [compact({"uid": fresh(n)}) for n in range(1_000)]
    held = [sys.intern(fresh(n)) for n in range(1_000)]
    assert all(h is c["uid"] for h, c in zip(held, cached, strict=True))
    del cached, held
    gc.collect()
    for n in range(1_000):
        probe = fresh(n)
        assert sys.intern(probe) is probe, f"uid {n} outlived the object that held it"


def test_a_write_through_is_cached_as_the_informer_caches_its_objects() -> None:
    store = Store(transform=slim_pod)
    store.apply("ADDED", slim_pod(obj("a", "1", spec={"containers": [{}]})))
    assert store.write_through(obj("a", "2", spec={"containers": [{}]}, status={"podIP": "x"}))
    cached = store.get("ns/a")
    assert cached is not None
    assert cached["metadata"]["resourceVersion"] == "2"
    assert "managedFields" not in cached["metadata"]
    assert cached["spec"] == {} and cached["status"] == {}
