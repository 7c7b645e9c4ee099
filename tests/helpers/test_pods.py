"""tests.helpers.pods: pods to create, and the statuses a kubelet writes on them."""

from __future__ import annotations

from tests.helpers.mxjobs import IMAGE, container
from tests.helpers.pods import NOW_TEXT, container_status, pod, pod_status


def test_a_pod_has_what_was_asked_for_and_one_mxnet_container_by_default() -> None:
    assert pod("p") == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "mxnet", "image": IMAGE}]},
    }
    found = pod(
        "p",
        namespace="ns",
        uid="u",
        labels={"a": "b"},
        init_containers=[container("init")],
        restart_policy="Never",
        grace_seconds=0,
        status={"phase": "Pending"},
    )
    assert found["metadata"] == {"name": "p", "namespace": "ns", "uid": "u", "labels": {"a": "b"}}
    assert found["spec"]["restartPolicy"] == "Never"
    assert found["spec"]["initContainers"] == [{"name": "init", "image": IMAGE}]
    assert found["spec"]["terminationGracePeriodSeconds"] == 0
    assert found["status"] == {"phase": "Pending"}


def test_a_container_runs_waits_or_ends_as_its_pod_and_exit_code_say() -> None:
    assert container_status()["state"] == {"running": {"startedAt": NOW_TEXT}}
    waiting = {"waiting": {"reason": "ContainerCreating"}}
    assert container_status(phase="Pending")["state"] == waiting
    ended = container_status(phase="Failed", exit_code=137, finished_at="T", last_exit_code=1)
    assert ended["state"] == {"terminated": {"exitCode": 137, "reason": "Error", "finishedAt": "T"}}
    assert ended["lastState"] == {"terminated": {"exitCode": 1}}
    assert container_status(exit_code=0)["state"]["terminated"]["reason"] == "Completed"


def test_a_disrupted_pod_carries_the_condition_with_its_reason() -> None:
    status = pod_status(phase="Failed", exit_code=143, reason="Evicted", disruption="Preempted")
    assert status["reason"] == "Evicted"
    assert status["conditions"] == [
        {"type": "DisruptionTarget", "status": "True", "reason": "Preempted",
         "lastTransitionTime": NOW_TEXT}
    ]  # fmt: skip
    assert "conditions" not in pod_status()
