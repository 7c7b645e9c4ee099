"""Volcano v1.15.1's own scheduler places the operator's gangs (``--gang-scheduler=volcano``).

The stage of the native gang tests (:mod:`localkube.scenarios.gang_demo`: three test-kubelet nodes
with two GPUs each, six in all) on a control plane of its own, with vc-scheduler and its
controller-manager built from Volcano's release source and run with the release's configuration
(:mod:`localkube.thirdparty.volcano`). The operator writes the PodGroups training-operator v1.8.1
wrote and creates a job's pods once Volcano's enqueue action has admitted its group; from there on
only Volcano decides where, and whether, pods are bound.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from localkube.base.api import NotFound, ensure_namespace
from localkube.base.processes import stop_process
from localkube.scenarios.gang_demo import (
    Scene,
    bound,
    clear,
    gpu_job,
    job_state,
    release_interleaved,
    scene,
)
from localkube.thirdparty import volcano
from tests.e2e.real_node_fixtures import require
from tests.helpers.waiting import wait_for

# Fixture set-up and teardown count against a test's time limit: installing or removing a
# third-party component (or the session's node) on a loaded machine can take minutes.
# A component built in the background by make test: first test waits for it (late_builds).
pytestmark = [pytest.mark.timeout(1500), pytest.mark.late_builds("third-party-volcano")]

JOBS = ("job-a", "job-b")
PODS_EACH = 5
PODGROUPS = "/apis/scheduling.volcano.sh/v1beta1"


@dataclass
class VolcanoStage:
    scene: Scene
    volcano: volcano.Volcano
    seconds_to_healthy: float


@pytest.fixture(scope="module")
def stage(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VolcanoStage]:
    require(volcano.missing())
    home = volcano.build()
    with scene(Path(tmp_path_factory.mktemp("volcano-plane"))) as setup:
        running = volcano.Volcano(setup.plane, Path(tmp_path_factory.mktemp("volcano")), home=home)
        started = time.monotonic()
        try:
            running.start()
            yield VolcanoStage(setup, running, time.monotonic() - started)
        finally:
            running.stop()


@pytest.fixture
def namespace(stage: VolcanoStage) -> Iterator[str]:
    name = f"v-{secrets.token_hex(4)}"
    ensure_namespace(stage.scene.api, name)
    yield name
    clear(stage.scene.api, name, (*JOBS, "too-big", "fits", "queued"))


@pytest.fixture
def controller(stage: VolcanoStage, namespace: str) -> Iterator[None]:
    pid = stage.scene.start_controller(gang_scheduler="volcano", namespace=namespace)
    try:
        yield
    finally:
        # The jobs go while the controller runs: their pods carry its tracking finalizer.
        clear(stage.scene.api, namespace, (*JOBS, "too-big", "fits", "queued"))
        stop_process(pid)


def _submit(stage: VolcanoStage, namespace: str, job: dict[str, Any]) -> None:
    stage.scene.api.request(
        "POST", f"/apis/kubeflow.org/v1/namespaces/{namespace}/mxjobs", body=job
    )


def _pod_group(stage: VolcanoStage, namespace: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = stage.scene.api.request(
        "GET", f"{PODGROUPS}/namespaces/{namespace}/podgroups/{name}"
    )
    return found


def _events(stage: VolcanoStage, namespace: str, name: str, reason: str) -> list[str]:
    items = stage.scene.api.request(
        "GET",
        f"/api/v1/namespaces/{namespace}/events",
        query=[("fieldSelector", f"involvedObject.name={name},reason={reason}")],
    )["items"]
    return [str(e.get("message")) for e in items]


PARTIAL_LIMIT = 2.0
"""Seconds a job may show part of its gang bound. vc-scheduler binds a gang's pods one API call
each, in parallel, so a sample can land among them; a gang placed in part and left waiting for
the rest (what gang scheduling rules out) stays so for scheduler sessions, each a second apart."""


class Placements:
    """Every count of bound pods seen per job while waiting, and how long each job stayed bound
    in part: a partial gang would show up as one that lasts."""

    def __init__(self, stage: VolcanoStage, namespace: str, jobs: dict[str, int]) -> None:
        self.stage, self.namespace, self.jobs = stage, namespace, jobs
        self.seen: dict[str, set[int]] = {job: set() for job in jobs}
        self.partial_seconds: dict[str, float] = dict.fromkeys(jobs, 0.0)
        self._partial_since: dict[str, float] = {}
        self.done: set[str] = set()

    def sample(self) -> dict[str, int]:
        now = {job: bound(self.stage.scene.api, self.namespace, job) for job in self.jobs}
        at = time.monotonic()
        for job, count in now.items():
            if job in self.done:
                continue
            self.seen[job].add(count)
            if count in (0, self.jobs[job]):
                self._partial_since.pop(job, None)
            else:
                since = self._partial_since.setdefault(job, at)
                self.partial_seconds[job] = max(self.partial_seconds[job], at - since)
        return now

    def finishing(self, job: str) -> None:
        """From now on ``job``'s pods end and go one by one: no longer a placement to judge."""
        self.done.add(job)
        self._partial_since.pop(job, None)

    def wait(self, until: Callable[[dict[str, int]], bool], *, timeout: float, what: str) -> None:
        """Sample until ``until`` holds for the counts."""
        try:
            wait_for(what, self.sample, until, timeout=timeout)
        except AssertionError as error:
            raise AssertionError(f"{error}; bound counts seen: {self.seen}") from error

    def assert_never_partial(self) -> None:
        for job, size in self.jobs.items():
            assert self.partial_seconds[job] < PARTIAL_LIMIT, (
                f"{job} bound in part for {self.partial_seconds[job]:.2f} s: "
                f"{sorted(self.seen[job])} of {size}"
            )


def wait_events(stage: VolcanoStage, namespace: str, name: str, reason: str) -> list[str]:
    """The events of ``reason`` on ``name`` once there is one: both the operator and Volcano
    post theirs from queues of their own, after the state they report is written."""
    return wait_for(
        f"a {reason} event on {name}",
        lambda: _events(stage, namespace, name, reason),
        bool,
        timeout=30,
    )


def test_volcano_binds_one_job_whole_and_the_other_only_after_it(
    stage: VolcanoStage, namespace: str, controller: None
) -> None:
    api = stage.scene.api
    for job in JOBS:
        _submit(stage, namespace, gpu_job(job))
    release_interleaved(api, namespace, JOBS, pods_each=PODS_EACH)
    placements = Placements(stage, namespace, {job: PODS_EACH for job in JOBS})
    placements.wait(lambda now: PODS_EACH in now.values(), timeout=60, what="one gang bound")
    first = next(job for job in JOBS if bound(api, namespace, job) == PODS_EACH)
    second = next(job for job in JOBS if job != first)
    # Volcano's record that a session tried the second gang beside the first: the second's pods
    # that would fit on the GPUs left held back for the gang, the others unschedulable. A
    # scheduler without gangs would have bound the ones that fit in that very session.
    placements.wait(
        lambda now: _held_back(stage, namespace, second),
        timeout=60,
        what=f"Volcano to hold {second}'s placeable pods back",
    )
    # The operator's record that it saw the second's pods waiting (recorded after its status).
    waiting = wait_events(stage, namespace, second, "GangWaiting")
    assert waiting and "0 of 5 pods placed" in waiting[0], waiting
    assert placements.sample()[second] == 0
    assert job_state(api, namespace, second) == "Created"
    group = _pod_group(stage, namespace, second)
    assert any(
        c["type"] == "Unschedulable" and c["status"] == "True"
        for c in group["status"].get("conditions", [])
    ), group["status"]

    placements.finishing(first)
    stage.scene.finish_pods(namespace, first)
    placements.wait(lambda now: now[second] == PODS_EACH, timeout=60, what=f"{second} bound")
    placements.assert_never_partial()
    wait_state(stage, namespace, second, "Running")
    wait_for(
        f"Volcano to see {second}'s PodGroup Running",
        lambda: _pod_group(stage, namespace, second)["status"],
        lambda status: status.get("phase") == "Running",
        timeout=60,
    )
    stage.scene.finish_pods(namespace, second)
    wait_state(stage, namespace, second, "Succeeded")
    assert job_state(api, namespace, first) == "Succeeded"


def wait_state(stage: VolcanoStage, namespace: str, job: str, state: str) -> None:
    wait_for(
        f"{job} {state}",
        lambda: job_state(stage.scene.api, namespace, job),
        lambda current: current == state,
        timeout=60,
    )


def _held_back(stage: VolcanoStage, namespace: str, job: str) -> bool:
    """Volcano tried to place ``job`` and held back the pods that would fit (their PodScheduled
    condition False, reason ``Schedulable``: "can possibly be assigned to <node>, once
    minAvailable is satisfied") because the others do not (reason ``Unschedulable``): what
    vc-scheduler writes at the end of a session that found the gang does not fit whole."""
    pods = stage.scene.api.request(
        "GET",
        f"/api/v1/namespaces/{namespace}/pods",
        query=[("labelSelector", f"training.kubeflow.org/job-name={job}")],
    )["items"]
    reasons = {
        condition.get("reason")
        for pod in pods
        for condition in (pod.get("status") or {}).get("conditions") or []
        if condition["type"] == "PodScheduled" and condition["status"] == "False"
    }
    return {"Schedulable", "Unschedulable"} <= reasons


def test_a_gang_that_cannot_fit_waits_visibly_and_holds_no_gpu(
    stage: VolcanoStage, namespace: str, controller: None
) -> None:
    api = stage.scene.api
    _submit(stage, namespace, gpu_job("too-big", workers=7, gated=False))  # 7 GPUs of 6
    placements = Placements(stage, namespace, {"too-big": 8, "fits": 5})

    def group_unschedulable() -> bool:
        try:
            group = _pod_group(stage, namespace, "too-big")
        except NotFound:  # not created yet
            return False
        conditions = (group.get("status") or {}).get("conditions") or []
        return any(c["type"] == "Unschedulable" and c["status"] == "True" for c in conditions)

    placements.wait(
        lambda now: group_unschedulable(), timeout=60, what="the PodGroup marked Unschedulable"
    )
    waiting = wait_events(stage, namespace, "too-big", "GangWaiting")
    assert "0 of 8 pods placed" in waiting[0], waiting
    assert wait_events(stage, namespace, "too-big", "Unschedulable"), "Volcano's event"

    _submit(stage, namespace, gpu_job("fits", workers=4, gated=False))
    placements.wait(lambda now: now["fits"] == 5, timeout=60, what="the job that fits bound")
    placements.assert_never_partial()
    assert bound(api, namespace, "too-big") == 0


def test_the_queue_and_priority_class_of_the_scheduling_policy_reach_volcano(
    stage: VolcanoStage, namespace: str, controller: None
) -> None:
    api = stage.scene.api
    queue = f"research-{namespace}"
    api.request(
        "POST",
        f"{PODGROUPS}/queues",
        body={"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
              "metadata": {"name": queue}, "spec": {"weight": 1, "reclaimable": True}},
    )  # fmt: skip
    priority = f"high-{namespace}"
    api.request(
        "POST",
        "/apis/scheduling.k8s.io/v1/priorityclasses",
        body={"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
              "metadata": {"name": priority}, "value": 1000},
    )  # fmt: skip
    try:
        job = gpu_job("queued", workers=2, gated=False)
        job["spec"]["runPolicy"] = {"schedulingPolicy": {"queue": queue, "priorityClass": priority}}
        _submit(stage, namespace, job)
        placements = Placements(stage, namespace, {"queued": 3})
        placements.wait(lambda now: now["queued"] == 3, timeout=60, what="the job bound")
        group = _pod_group(stage, namespace, "queued")
        assert group["spec"]["queue"] == queue
        assert group["spec"]["priorityClassName"] == priority
        stage.scene.finish_pods(namespace, "queued")
        wait_state(stage, namespace, "queued", "Succeeded")
        state = api.request("GET", f"{PODGROUPS}/queues/{queue}")["status"]
        assert state["state"] == "Open", state
    finally:
        clear(api, namespace, ("queued",))
        api.request("DELETE", f"{PODGROUPS}/queues/{queue}")
        api.request("DELETE", f"/apis/scheduling.k8s.io/v1/priorityclasses/{priority}")
