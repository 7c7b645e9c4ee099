"""The controller end to end under process faults: SIGKILL and restart, leader failover."""

from __future__ import annotations

import time

from localkube.base.api import Api
from localkube.kubelet.core import TestKubelet
from tests.e2e.controller_fixtures import (
    StartController,
    create_job,
    lease_holder,
    mxjob,
    names,
    pods,
    status,
    wait_pods_running,
    wait_state,
)
from tests.helpers.waiting import wait_for

ALL = ("scheduler-0", "server-0", "worker-0", "worker-1")


def _uids(api: Api, namespace: str, job: str) -> dict[str, str]:
    return {n: p["metadata"]["uid"] for n, p in pods(api, namespace, job=job).items()}


def test_sigkilled_controller_restarts_without_duplicates_or_lost_restarts(
    api: Api, namespace: str, start_controller: StartController, kubelet: TestKubelet
) -> None:
    first = start_controller()
    create_job(api, namespace, mxjob("crash"))
    wait_pods_running(api, namespace, "crash", names("crash", *ALL))
    old_worker = _uids(api, namespace, "crash")["crash-worker-0"]
    kubelet.terminate(namespace, "crash-worker-0", exit_code=137)
    wait_for(
        "1 restart",
        lambda: status(api, namespace, "crash").get("restartCount"),
        lambda count: count == 1,
        timeout=30,
    )
    wait_pods_running(api, namespace, "crash", names("crash", *ALL))
    assert _uids(api, namespace, "crash")["crash-worker-0"] != old_worker
    wait_state(api, namespace, "crash", "Running")

    first.kill()
    before = _uids(api, namespace, "crash")
    # A failure while no controller runs is counted by the next one, exactly once.
    kubelet.terminate(namespace, "crash-worker-1", exit_code=137)
    second = start_controller()
    wait_for(
        "2 restarts",
        lambda: status(api, namespace, "crash").get("restartCount"),
        lambda count: count == 2,
        timeout=30,
    )
    after = wait_pods_running(api, namespace, "crash", names("crash", *ALL))
    # A whole-job restart: every pod of attempt 1 made again, once, in attempt 2.
    for name, uid in before.items():
        assert after[name]["metadata"]["uid"] != uid, f"{name} was not made again"
    assert wait_state(api, namespace, "crash", "Running")["attempt"] == 2

    kubelet.terminate(namespace, "crash-scheduler-0", exit_code=0)
    final = wait_state(api, namespace, "crash", "Succeeded")
    assert final["restartCount"] == 2
    # The counter is bumped right after the status write that wait_state saw.
    wait_for(
        "one successful job counted",
        lambda: second.metric(
            "training_operator_jobs_successful_total", job_namespace=namespace, framework="mxnet"
        ),
        lambda count: count == 1,
        timeout=5,
    )


def test_when_the_leader_is_sigkilled_the_standby_takes_over_within_the_lease(
    api: Api, namespace: str, start_controller: StartController, kubelet: TestKubelet
) -> None:
    lease_duration = 4.0
    flags = (
        "--leader-elect",
        f"--lease-namespace={namespace}",
        f"--lease-duration={lease_duration}",
        "--renew-deadline=3",
        "--retry-period=0.5",
    )
    candidates = {
        c.identity: c
        for c in (
            start_controller(*flags, identity="ctl-a"),
            start_controller(*flags, identity="ctl-b"),
        )
    }
    holder = wait_for("a leader", lambda: lease_holder(api, namespace) or "", bool, timeout=30)
    leader = candidates.pop(holder)
    standby = next(iter(candidates.values()))

    create_job(api, namespace, mxjob("ha"))
    wait_pods_running(api, namespace, "ha", names("ha", *ALL))
    wait_state(api, namespace, "ha", "Running")
    assert leader.metric("mxjob_controller_is_leader") == 1
    assert standby.metric("mxjob_controller_is_leader") == 0
    # Only the leader reconciles; both export controller-runtime's reconcile metrics.
    assert leader.metric("controller_runtime_reconcile_total", result="success") > 0
    reconciles = "controller_runtime_reconcile_time_seconds_count"
    assert standby.metric(reconciles, controller="mxjob") == 0

    leader.kill()
    killed = time.monotonic()
    kubelet.terminate(namespace, "ha-scheduler-0", exit_code=0)
    wait_for(
        "the standby holding the lease",
        lambda: lease_holder(api, namespace),
        lambda holder: holder == standby.identity,
        timeout=lease_duration + 5,
    )
    wait_state(api, namespace, "ha", "Succeeded", timeout=lease_duration + 5)
    assert time.monotonic() - killed <= lease_duration + 3
    assert standby.metric("mxjob_controller_is_leader") == 1
