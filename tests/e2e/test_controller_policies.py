"""The controller end to end: cleanPodPolicy, suspend and resume, scaling."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from localkube.api import Api, ApiError
from localkube.cluster import ControlPlane
from localkube.kubelet import TestKubelet
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
    wait_for,
    wait_pods_running,
    wait_state,
)

ALL = ("scheduler-0", "server-0", "worker-0", "worker-1")


def _utc_now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize(
    ("policy", "remaining"),
    [
        ("All", set()),
        ("Running", {"scheduler-0"}),
        ("None", {"scheduler-0", "server-0", "worker-0", "worker-1"}),
    ],
)
def test_clean_pod_policy_decides_which_pods_stay_after_success(
    *,
    api: Api,
    namespace: str,
    controller: ControllerProcess,
    kubelet: TestKubelet,
    policy: str,
    remaining: set[str],
) -> None:
    create_job(api, namespace, mxjob("clean", run_policy={"cleanPodPolicy": policy}))
    wait_pods_running(api, namespace, "clean", names("clean", *ALL))
    kubelet.terminate(namespace, "clean-scheduler-0", exit_code=0)
    wait_state(api, namespace, "clean", "Succeeded")
    expected = names("clean", *remaining)

    def settled() -> dict[str, dict[str, object]] | None:
        found = {
            n: p
            for n, p in pods(api, namespace, job="clean").items()
            if not p["metadata"].get("deletionTimestamp")
        }
        return found if set(found) == expected else None

    if expected:
        left = wait_for(settled, what=f"pods left by cleanPodPolicy {policy}")
    else:
        wait_for(lambda: not pods(api, namespace, job="clean"), what="every pod deleted")
        left = {}
    # Services go with cleanPodPolicy All; otherwise they stay until the job is deleted.
    expected_services = set() if policy == "All" else names("clean", *ALL)
    wait_for(
        lambda: set(services(api, namespace, job="clean")) == expected_services, what="services"
    )
    if policy == "None":
        assert phase(left["clean-server-0"]) == "Running"
    assert status(api, namespace, "clean")["state"] == "Succeeded"


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
        lambda: not pods(api, namespace, job="pause") and not services(api, namespace, job="pause"),
        what="pods and services removed",
    )
    assert kubectl_state(control_plane, namespace, "pause") == "Suspended"

    # startTime has second resolution: resume in a later second so that its reset shows.
    wait_for(lambda: _utc_now() > first_start, timeout=3, what="the next second")
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
        lambda: {"MXJobSuspended", "MXJobResumed"} <= event_reasons(api, namespace, "pause"),
        what="suspend and resume events",
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
    wait_for(lambda: not pods(api, namespace, job="scale"), what="pods removed by suspend")
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
        lambda: (
            status(api, namespace, "scale")
            .get("replicaStatuses", {})
            .get("Worker", {})
            .get("active")
            == 3
        ),
        what="three active workers",
    )
