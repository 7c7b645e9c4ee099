"""tracking: which pods' ends are counted, when the finalizer goes, and the guarded patch."""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import pytest

from controller.job.observed import observe
from controller.job.tracking import (
    UNREPORTED_END_REASON,
    UNREPORTED_END_SLACK,
    accounted,
    release_patch,
    settle_views,
    to_release,
)
from shared.constants import TRACKING_FINALIZER
from shared.exitcodes import ExitClass, classify_exit
from tests.controller.samples import NOW, job, later, pod

Obj = dict[str, Any]


def untracked(p: Obj) -> Obj:
    p["metadata"].pop("finalizers", None)
    return p


def test_every_pod_the_controller_builds_carries_the_tracking_finalizer() -> None:
    built = pod(job(), "worker-0")
    assert built["metadata"]["finalizers"] == [TRACKING_FINALIZER]
    assert observe(built).tracked
    assert not observe(untracked(built)).tracked


def test_the_release_patch_removes_only_our_entry_of_that_very_pod() -> None:
    p = pod(job(), "worker-0")
    p["metadata"]["finalizers"] = ["example.com/keep", TRACKING_FINALIZER, "example.com/too"]
    patch = release_patch(p)
    assert patch == [
        {"op": "test", "path": "/metadata/uid", "value": "pod-worker-0"},
        {"op": "test", "path": "/metadata/finalizers/1", "value": TRACKING_FINALIZER},
        {"op": "remove", "path": "/metadata/finalizers/1"},
    ]
    released = jsonpatch.apply_patch(p, patch)
    assert released["metadata"]["finalizers"] == ["example.com/keep", "example.com/too"]


def test_the_release_patch_fails_on_a_stale_cache_instead_of_removing_another_entry() -> None:
    cached = pod(job(), "worker-0")
    patch = release_patch(cached)
    assert patch is not None
    moved = copy.deepcopy(cached)
    moved["metadata"]["finalizers"] = ["example.com/other", TRACKING_FINALIZER]
    newer = copy.deepcopy(cached)
    newer["metadata"]["uid"] = "a-newer-pod-of-the-same-name"
    for current in (moved, newer):
        with pytest.raises(jsonpatch.JsonPatchTestFailed):
            jsonpatch.apply_patch(current, patch)


def test_an_untracked_pod_needs_no_release() -> None:
    assert release_patch(untracked(pod(job(), "worker-0"))) is None


def test_only_tracked_pods_that_ended_are_accounted() -> None:
    j = job()
    views = [
        observe(pod(j, "scheduler-0", phase="Succeeded", exit_code=0)),
        observe(pod(j, "server-0", phase="Failed", exit_code=143, terminating=True)),
        observe(pod(j, "worker-0")),
        observe(pod(j, "worker-1", terminating=True)),
        observe(untracked(pod(j, "worker-1", phase="Failed", exit_code=1))),
    ]
    assert accounted(views) == {"mnist-scheduler-0", "mnist-server-0"}


def test_pods_being_deleted_by_the_controller_are_released_by_the_delete_not_twice() -> None:
    j = job()
    pods = [
        pod(j, "scheduler-0", phase="Succeeded", exit_code=0),
        pod(j, "worker-0", phase="Failed", exit_code=137),
        untracked(pod(j, "worker-1", phase="Failed", exit_code=1)),
    ]
    counted = frozenset({"mnist-scheduler-0", "mnist-worker-0", "mnist-worker-1"})
    found = to_release(pods, ends_counted=counted, deleting=frozenset({"mnist-worker-0"}))
    assert [p["metadata"]["name"] for p in found] == ["mnist-scheduler-0"]


def deleted(p: Obj, *, at: str) -> Obj:
    p["metadata"]["deletionTimestamp"] = at
    return p


def test_a_terminating_pod_whose_end_is_never_reported_counts_as_failed_after_the_slack() -> None:
    j = job()
    # Deleted by someone at NOW with no grace left, on a node that never reports back.
    silent = deleted(pod(j, "worker-0"), at="2030-01-02T03:04:05Z")
    views, due = settle_views([observe(silent)], later(1))
    assert views[0].phase == "Running" and not views[0].ended
    assert due == pytest.approx(UNREPORTED_END_SLACK - 1)
    views, due = settle_views([observe(silent)], later(UNREPORTED_END_SLACK))
    assert views[0].failed and views[0].reason == UNREPORTED_END_REASON
    assert views[0].exit_code is None
    assert classify_exit(views[0].exit_code) is ExitClass.RETRYABLE
    assert due is None
    assert not views[0].gone


def test_untracked_or_ended_pods_are_never_rewritten() -> None:
    j = job()
    ended = deleted(pod(j, "worker-0", phase="Succeeded", exit_code=0), at="2000-01-01T00:00:00Z")
    let_go = untracked(deleted(pod(j, "worker-1"), at="2000-01-01T00:00:00Z"))
    views, due = settle_views([observe(ended), observe(let_go)], NOW)
    assert views == [observe(ended), observe(let_go)]
    assert due is None
    assert views[1].gone and not views[0].gone
