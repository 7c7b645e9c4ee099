"""The pod statuses the test kubelet writes, built from the pod alone (no API server)."""

from __future__ import annotations

from typing import Any

from localkube.kubelet import podstatus
from tests.helpers import mxjobs, pods

UID = "u-1"


def pod(*containers: str, status: dict[str, Any] | None = None) -> dict[str, Any]:
    """Pod ``p`` of the containers named (each of its own image), as its kubelet has it."""
    named = [mxjobs.container(name, image=f"img/{name}") for name in containers]
    return pods.pod("p", namespace="ns", uid=UID, containers=named, status=status or {})


def main_of(status: dict[str, Any]) -> dict[str, Any]:
    return next(s for s in status["containerStatuses"] if s["name"] == "mxnet")


def test_the_main_container_is_mxnet_or_the_only_one() -> None:
    assert podstatus.main_container_name(pod("sidecar", "mxnet")) == "mxnet"
    assert podstatus.main_container_name(pod("trainer")) == "trainer"
    assert podstatus.main_container_name(pod("a", "b")) == "mxnet"  # none of them


def test_a_starting_pod_is_running_with_both_of_its_addresses() -> None:
    status = podstatus.running(
        pod("mxnet", "sidecar", status={"startTime": "T0"}),
        pod_ip="198.18.7.2",
        ready=True,
        restart_count=0,
        last_state={},
    )
    assert status["phase"] == "Running"
    assert (status["hostIP"], status["podIP"]) == ("127.0.0.1", "198.18.7.2")
    assert status["podIPs"] == [{"ip": "198.18.7.2"}]
    assert status["startTime"] == "T0"
    assert {c["type"]: c["status"] for c in status["conditions"]}["Ready"] == "True"
    for container in status["containerStatuses"]:
        assert "running" in container["state"] and container["started"] and container["ready"]


def test_a_restart_in_place_is_the_same_running_status_with_the_exit_as_last_state() -> None:
    """Both paths share one builder: the restarted pod keeps podIP and podIPs alike."""
    before = pod("mxnet", "sidecar", status={"startTime": "T0"})
    last = podstatus.terminated_state(before, exit_code=137)
    restarted = podstatus.running(
        before, pod_ip="198.18.7.2", ready=False, restart_count=1, last_state=last
    )
    started = podstatus.running(
        before, pod_ip="198.18.7.2", ready=False, restart_count=0, last_state={}
    )
    assert set(restarted) == set(started)
    assert restarted["podIP"] == "198.18.7.2" and restarted["podIPs"] == [{"ip": "198.18.7.2"}]
    main = main_of(restarted)
    assert main["restartCount"] == 1
    assert main["lastState"]["terminated"]["exitCode"] == 137
    assert main["lastState"]["terminated"]["reason"] == "Error"
    sidecar = next(s for s in restarted["containerStatuses"] if s["name"] == "sidecar")
    assert (sidecar["restartCount"], sidecar["lastState"]) == (0, {})
    assert {c["type"]: c["status"] for c in restarted["conditions"]}["Ready"] == "False"


def test_a_pod_without_an_address_of_its_own_has_the_nodes() -> None:
    status = podstatus.terminated(pod("mxnet"), pod_ip=podstatus.HOST_IP, exit_code=0)
    assert status["podIP"] == status["hostIP"] == "127.0.0.1"
    assert status["podIPs"] == [{"ip": "127.0.0.1"}]


def test_exit_code_zero_succeeds_and_others_fail_keeping_restarts_and_last_state() -> None:
    last = {"terminated": {"exitCode": 1, "reason": "Error"}}
    running = pod(
        "mxnet",
        status={
            "startTime": "T0",
            "containerStatuses": [{"name": "mxnet", "restartCount": 2, "lastState": last}],
        },
    )
    succeeded = podstatus.terminated(running, pod_ip="127.0.0.1", exit_code=0)
    assert succeeded["phase"] == "Succeeded"
    assert main_of(succeeded)["state"]["terminated"]["reason"] == "Completed"
    failed = podstatus.terminated(
        running, pod_ip="127.0.0.1", exit_code=3, reason="OOMKilled", message="out of memory"
    )
    assert failed["phase"] == "Failed"
    main = main_of(failed)
    assert main["state"]["terminated"] == {
        "exitCode": 3,
        "reason": "OOMKilled",
        "message": "out of memory",
        "startedAt": "T0",
        "finishedAt": main["state"]["terminated"]["finishedAt"],
    }
    assert (main["restartCount"], main["lastState"], main["ready"]) == (2, last, False)


def test_an_evicted_pod_fails_without_an_exit_code() -> None:
    status = podstatus.evicted(pod("mxnet"), message="low on memory")
    assert (status["phase"], status["reason"], status["message"]) == (
        "Failed",
        "Evicted",
        "low on memory",
    )
    assert main_of(status)["state"] == {"waiting": {"reason": "ContainerStatusUnknown"}}


def test_a_container_that_cannot_be_created_keeps_the_pod_pending() -> None:
    status = podstatus.waiting(pod("mxnet"), reason="ContainerCreating", message="no secret")
    assert status["phase"] == "Pending"
    assert main_of(status)["state"] == {
        "waiting": {"reason": "ContainerCreating", "message": "no secret"}
    }
    assert not main_of(status)["started"]


def test_a_readiness_flip_changes_only_readiness() -> None:
    current = pod(
        "mxnet",
        status={"containerStatuses": [{"name": "mxnet", "ready": False, "restartCount": 4}]},
    )
    change = podstatus.readiness(current, ready=True)
    assert set(change) == {"conditions", "containerStatuses"}
    assert change["containerStatuses"] == [{"name": "mxnet", "ready": True, "restartCount": 4}]
    assert {c["type"]: c["status"] for c in change["conditions"]}["ContainersReady"] == "True"
