"""The controller end to end: cleanPodPolicy, suspend and resume, scaling."""

from __future__ import annotations

import datetime
import time
from typing import Any

import pytest

from localkube.base.api import Api, ApiError
from localkube.kubelet.core import TestKubelet
from localkube.plane.controlplane import ControlPlane
from tests.e2e.controller_fixtures import (
    ControllerProcess,
    condition,
    create_job,
    event_reasons,
    kubectl_state,
    mxjob,
    names,
    patch_job,
    phase,
    pods,
    services,
    status,
    wait_pods_running,
    wait_state,
)
from tests.helpers.waiting import wait_for

ALL = ("scheduler-0", "server-0", "worker-0", "worker-1")


def _utc_now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize(
    ("policy", "remaining"),
    [
        ("All", set()),
        ("Running", {"scheduler-0", "worker-0"}),
        ("None", {"scheduler-0", "server-0", "worker-0", "worker-1"}),
    ],
)
def test_after_success_running_pods_get_their_grace_period_then_clean_pod_policy_applies(
    *,
    api: Api,
    namespace: str,
    controller: ControllerProcess,
    kubelet: TestKubelet,
    policy: str,
    remaining: set[str],
) -> None:
    grace = 5
    job = mxjob("clean", run_policy={"cleanPodPolicy": policy}, grace_seconds=grace)
    create_job(api, namespace, job)
    wait_pods_running(api, namespace, "clean", names("clean", *ALL))
    kubelet.terminate(namespace, "clean-scheduler-0", exit_code=0)
    succeeded_at = time.monotonic()
    wait_state(api, namespace, "clean", "Succeeded")
    # Within the grace period a worker ends by itself: it is counted, and nothing was deleted.
    kubelet.terminate(namespace, "clean-worker-0", exit_code=0)
    counted = wait_for(
        "worker-0 counted after the job succeeded",
        lambda: dict(status(api, namespace, "clean")["replicaStatuses"]["Worker"]),
        lambda workers: workers["succeeded"] == 1,
        timeout=30,
    )
    assert counted["active"] == 1
    assert time.monotonic() - succeeded_at < grace
    alive = {n for n, p in pods(api, namespace, job="clean").items() if phase(p) == "Running"}
    assert alive == names("clean", "server-0", "worker-1")
    # Events are written by the controller's recorder thread, after the status.
    wait_for(
        "the ReplicasEnded event",
        lambda: event_reasons(api, namespace, "clean"),
        lambda reasons: "ReplicasEnded" in reasons,
        timeout=30,
    )
    expected = names("clean", *remaining)

    def live() -> dict[str, dict[str, Any]]:
        return {
            n: p
            for n, p in pods(api, namespace, job="clean").items()
            if not p["metadata"].get("deletionTimestamp")
        }

    if expected:
        left = wait_for(
            f"pods left by cleanPodPolicy {policy}",
            live,
            lambda found: set(found) == expected,
            timeout=30,
        )
    else:
        wait_for(
            "every pod deleted",
            lambda: set(pods(api, namespace, job="clean")),
            lambda found: not found,
            timeout=30,
        )
        left = {}
    if policy != "None":
        assert time.monotonic() - succeeded_at >= grace - 1  # second resolution of the times
    # Services go with cleanPodPolicy All; otherwise they stay until the job is deleted.
    expected_services = set() if policy == "All" else names("clean", *ALL)
    wait_for(
        "services",
        lambda: set(services(api, namespace, job="clean")),
        lambda found: found == expected_services,
        timeout=30,
    )
    final = status(api, namespace, "clean")["replicaStatuses"]
    assert final["Worker"]["succeeded"] == 1 and final["Scheduler"]["succeeded"] == 1
    if policy == "None":
        assert phase(left["clean-server-0"]) == "Running"
        assert final["Worker"]["active"] == 1
    else:
        assert final["Worker"]["active"] == 0


def test_suspend_removes_pods_and_services_and_resume_recreates_them(
    api: Api,
    namespace: str,
    control_plane: ControlPlane,
    controller: ControllerProcess,
    kubelet: TestKubelet,
) -> None:
    create_job(api, namespace, mxjob("pause"))
    before = wait_pods_running(api, namespace, "pause", names("pause", *ALL))
    first_start = wait_state(api, namespace, "pause", "Running")["startTime"]

    patch_job(api, namespace, "pause", {"spec": {"runPolicy": {"suspend": True}}})
    suspended = wait_state(api, namespace, "pause", "Suspended")
    assert condition(suspended, "Suspended")["reason"] == "MXJobSuspended"  # type: ignore[index]
    assert condition(suspended, "Running")["status"] == "False"  # type: ignore[index]
    wait_for(
        "pods and services removed",
        lambda: set(pods(api, namespace, job="pause")) | set(services(api, namespace, job="pause")),
        lambda left: not left,
        timeout=30,
    )
    assert kubectl_state(control_plane, namespace, "pause") == "Suspended"

    # startTime has second resolution: resume in a later second so that its reset shows.
    wait_for("the next second", _utc_now, lambda now: now > first_start, timeout=3)
    patch_job(api, namespace, "pause", {"spec": {"runPolicy": {"suspend": False}}})
    after = wait_pods_running(api, namespace, "pause", names("pause", *ALL))
    assert {p["metadata"]["uid"] for p in after.values()}.isdisjoint(
        p["metadata"]["uid"] for p in before.values()
    )
    assert len(services(api, namespace, job="pause")) == 4
    resumed = wait_state(api, namespace, "pause", "Running")
    assert condition(resumed, "Suspended")["status"] == "False"  # type: ignore[index]
    assert condition(resumed, "Suspended")["reason"] == "MXJobResumed"  # type: ignore[index]
    assert resumed["startTime"] > first_start
    wait_for(
        "suspend and resume events",
        lambda: event_reasons(api, namespace, "pause"),
        lambda reasons: {"MXJobSuspended", "MXJobResumed"} <= reasons,
        timeout=30,
    )


def _mxnet_env(pod: dict[str, Any]) -> dict[str, str]:
    container = next(c for c in pod["spec"]["containers"] if c["name"] == "mxnet")
    return {e["name"]: e.get("value", "") for e in container.get("env", [])}


def test_scaling_a_running_job_is_refused_and_suspend_scale_resume_restarts_it_with_new_counts(
    api: Api, namespace: str, controller: ControllerProcess, kubelet: TestKubelet
) -> None:
    create_job(api, namespace, mxjob("scale", workers=2))
    before = wait_pods_running(api, namespace, "scale", names("scale", *ALL))

    with pytest.raises(ApiError) as refused:
        patch_job(
            api, namespace, "scale", {"spec": {"mxReplicaSpecs": {"Worker": {"replicas": 3}}}}
        )
    assert refused.value.status == 422
    assert "spec.mxReplicaSpecs.Worker.replicas: cannot change from 2 to 3" in str(refused.value)
    assert "suspend" in str(refused.value)
    assert set(pods(api, namespace, job="scale")) == set(before)  # nothing happened to the pods

    patch_job(api, namespace, "scale", {"spec": {"runPolicy": {"suspend": True}}})
    wait_for(
        "pods removed by suspend",
        lambda: set(pods(api, namespace, job="scale")),
        lambda left: not left,
        timeout=30,
    )
    patch_job(api, namespace, "scale", {"spec": {"mxReplicaSpecs": {"Worker": {"replicas": 3}}}})
    patch_job(api, namespace, "scale", {"spec": {"runPolicy": {"suspend": False}}})
    after = wait_pods_running(api, namespace, "scale", names("scale", *ALL, "worker-2"))
    assert {p["metadata"]["uid"] for p in after.values()}.isdisjoint(
        p["metadata"]["uid"] for p in before.values()
    )
    for pod in after.values():  # one cluster again: every member was started with the same counts
        assert _mxnet_env(pod)["DMLC_NUM_WORKER"] == "3"
    assert "scale-worker-2" in services(api, namespace, job="scale")
    wait_for(
        "three active workers",
        lambda: status(api, namespace, "scale").get("replicaStatuses", {}).get("Worker", {}),
        lambda workers: workers.get("active") == 3,
        timeout=30,
    )
