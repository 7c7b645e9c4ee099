"""pods: the job's pods read once per reconcile, each with its view."""

from __future__ import annotations

from typing import Any

import pytest

import controller.job.pods as pods_module
from controller.job.observed import PodView, observe
from controller.job.pods import JobPods
from tests.controller.samples import job, pod, pods_all

Obj = dict[str, Any]


def test_reading_observes_each_pod_once_and_asking_again_observes_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    observed: list[str] = []

    def counting(raw: Obj) -> PodView:
        view = observe(raw)
        observed.append(view.name)
        return view

    monkeypatch.setattr(pods_module, "observe", counting)
    read = JobPods.read(pods_all(job()))
    assert sorted(observed) == sorted(v.name for v in read.views) and len(observed) == 4
    asked = (read.views, read.raws, read.live(), read.names(), list(read))
    assert all(len(answer) == 4 for answer in asked)
    assert len(observed) == 4, "the views are kept, never observed again"


def test_each_pod_keeps_its_cached_object_beside_its_view() -> None:
    raws = pods_all(job())
    read = JobPods.read(raws)
    assert [p.raw for p in read] == raws
    assert all(cached is raw for cached, raw in zip(read.raws, raws, strict=True))
    assert read.views == tuple(observe(raw) for raw in raws)
    assert len(read) == 4


def test_live_leaves_terminating_pods_out_and_names_keep_them() -> None:
    j = job()
    read = JobPods.read([pod(j, "worker-0"), pod(j, "worker-1", terminating=True)])
    assert [p.view.name for p in read.live()] == ["mnist-worker-0"]
    assert read.names() == {"mnist-worker-0", "mnist-worker-1"}


def test_no_pods_read_as_the_empty_collection() -> None:
    empty = JobPods.read([])
    assert empty == JobPods() and len(empty) == 0 and list(empty) == []
    assert empty.views == () and empty.raws == () and empty.live() == ()
    assert empty.names() == frozenset()
