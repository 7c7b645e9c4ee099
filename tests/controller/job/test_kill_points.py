"""The controller killed at each point of a restart loses no restart and counts none twice.

Each test arms one failpoint (controller/runtime/failpoints.py) in a controller over an
in-memory API server, lets a pod end retryably, and reconciles until the point kills it; then a
fresh controller (nothing in memory, its caches filled from the API server as its informers
would) reconciles the job to rest. The API server must then hold exactly one restart in status
and one replacement per pod the restart ended, each made once.
"""

from __future__ import annotations

from typing import Any

import pytest

from controller.runtime.client import mxjobs_path, pods_path
from controller.runtime.failpoints import (
    PODS_DELETED,
    PODS_HALF_CREATED,
    STATUS_WRITTEN,
    Failpoints,
)
from tests.controller.job.reconcile_world import KEY, World
from tests.controller.samples import job, pod

Obj = dict[str, Any]


class Killed(BaseException):
    """The process died at the failpoint: nothing after it in the reconcile runs."""


def die() -> None:
    raise Killed


def status(world: World) -> Obj:
    found: Obj = world.api.objects[mxjobs_path("ns", "mnist")]["status"]
    return found


def pod_creations(world: World) -> list[str]:
    return sorted(
        str(r.body["metadata"]["name"])
        for r in world.api.requests
        if r.method == "POST" and r.path.endswith("/pods")
    )


def reconcile_until_killed(world: World) -> None:
    for _ in range(10):
        world.sync_from_api()
        try:
            world.reconciler.reconcile(KEY)
        except Killed:
            return
    raise AssertionError("the failpoint was never reached")


def settle(world: World) -> None:
    """Reconcile until a round writes nothing (the job at rest)."""
    for _ in range(10):
        world.sync_from_api()
        before = len(world.api.writes())
        world.reconciler.reconcile(KEY)
        if len(world.api.writes()) == before:
            return
    raise AssertionError(f"no rest after 10 reconciles: {world.api.writes()[-5:]}")


def started(job_obj: Obj, point: str) -> World:
    """A controller armed at ``point`` that made the job's pods; then ``pod`` ends with 137."""
    world = World(job_obj, failpoints=Failpoints(frozenset({point}), die=die))
    settle(world)
    failed = pod(job_obj, "worker-1", phase="Failed", exit_code=137)
    world.set_pod_status("mnist-worker-1", failed["status"])
    return world


@pytest.mark.parametrize("point", [STATUS_WRITTEN, PODS_DELETED, PODS_HALF_CREATED])
def test_a_whole_job_restart_survives_a_kill_at_each_point(point: str) -> None:
    first = started(job(), point)
    made_before = len(pod_creations(first))
    reconcile_until_killed(first)
    fresh = World(None, api=first.api)
    settle(fresh)
    after = status(fresh)
    assert after["restartCount"] == 1 and after["attempt"] == 1, after
    assert len(after["restarts"]) == 1 and after["restarts"][0]["replicaType"] == "Worker"
    made = pod_creations(fresh)
    slots = ["scheduler-0", "server-0", "worker-0", "worker-1"]
    assert sorted(made) == sorted(f"mnist-{s}" for s in slots for _ in range(2)), made
    assert made_before == 4
    for slot in slots:  # every pod of the new attempt, made once
        assert fresh.api.objects[pods_path("ns", f"mnist-{slot}")]["metadata"]["annotations"] == {
            "mxjob.kubeflow.org/attempt": "1"
        }


@pytest.mark.parametrize("point", [STATUS_WRITTEN, PODS_DELETED])
def test_a_replica_recreation_survives_a_kill_at_each_point(point: str) -> None:
    first = started(job(restart_scope="Replica"), point)
    ended = first.api.objects[pods_path("ns", "mnist-worker-1")]["metadata"]["uid"]
    reconcile_until_killed(first)
    fresh = World(None, api=first.api)
    settle(fresh)
    after = status(fresh)
    assert after["restartCount"] == 1 and "attempt" not in after, after
    assert [r["podUID"] for r in after["restarts"]] == [ended]
    assert pod_creations(fresh).count("mnist-worker-1") == 2
    assert len(pod_creations(fresh)) == 5  # the four pods, and worker 1's replacement


def test_a_failpoint_fires_once_and_an_unknown_one_is_refused_naming_the_allowed() -> None:
    fired: list[str] = []
    points = Failpoints(frozenset({STATUS_WRITTEN}), die=lambda: fired.append("x"))
    points.reach(PODS_DELETED)
    points.reach(STATUS_WRITTEN)
    points.reach(STATUS_WRITTEN)
    assert fired == ["x"]
    with pytest.raises(ValueError, match=r"unknown failpoint.*restart-pods-deleted"):
        Failpoints.from_env({"MXJOB_CONTROLLER_FAILPOINTS": "restart-status-written,typo"})
    for point in (STATUS_WRITTEN, PODS_DELETED, PODS_HALF_CREATED):
        Failpoints.from_env({}).reach(point)  # none armed: this process lives on
