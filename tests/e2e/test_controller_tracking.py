"""The pod tracking finalizer end to end: no pod's end goes uncounted, no pod stays stuck.

Pods are deleted with the real kubectl and the API, while the controller is stopped; the test
kubelet kills them and reports how they ended (143 after SIGTERM) as a real kubelet does, and
the finalizer keeps them, terminating, until the next controller counts them.
"""

from __future__ import annotations

from typing import Any

from localkube.base.api import Api
from localkube.kubelet.core import TestKubelet
from localkube.plane.controlplane import ControlPlane
from shared.constants import TRACKING_FINALIZER
from tests.e2e.controller_fixtures import (
    GROUP_PATH,
    ControllerProcess,
    StartController,
    create_job,
    mxjob,
    names,
    phase,
    pods,
    status,
    wait_pods_running,
    wait_state,
)
from tests.helpers.waiting import wait_for

ALL = ("scheduler-0", "server-0", "worker-0", "worker-1")


def _finalizers(pod: dict[str, Any]) -> list[str]:
    return list(pod["metadata"].get("finalizers") or [])


def _exit_code(pod: dict[str, Any]) -> int | None:
    for container in (pod.get("status") or {}).get("containerStatuses") or []:
        terminated = (container.get("state") or {}).get("terminated")
        if terminated:
            return int(terminated["exitCode"])
    return None


def _held(api: Api, namespace: str, job: str, name: str) -> dict[str, Any]:
    """Wait until ``name`` is terminating, ended, and still held by the finalizer."""

    pod = wait_for(
        f"{name} terminating with its final phase",
        lambda: pods(api, namespace, job=job).get(name) or {},
        lambda pod: bool(
            pod
            and pod["metadata"].get("deletionTimestamp")
            and phase(pod) in ("Succeeded", "Failed")
        ),
        timeout=30,
    )
    assert _finalizers(pod) == [TRACKING_FINALIZER]
    return pod


def _stop(controller: ControllerProcess) -> None:
    assert controller.terminate() == 0


def test_a_worker_deleted_while_the_controller_is_down_counts_as_a_restart(
    api: Api,
    namespace: str,
    start_controller: StartController,
    kubelet: TestKubelet,
    control_plane: ControlPlane,
) -> None:
    first = start_controller()
    create_job(api, namespace, mxjob("gone"))
    running = wait_pods_running(api, namespace, "gone", names("gone", *ALL))
    assert all(_finalizers(p) == [TRACKING_FINALIZER] for p in running.values())
    wait_state(api, namespace, "gone", "Running")
    _stop(first)

    control_plane.kubectl("delete", "pod", "gone-worker-0", "-n", namespace, "--wait=false")
    held = _held(api, namespace, "gone", "gone-worker-0")
    assert (phase(held), _exit_code(held)) == ("Failed", 143)

    second = start_controller()
    wait_for(
        "1 restart",
        lambda: status(api, namespace, "gone").get("restartCount"),
        lambda count: count == 1,
        timeout=30,
    )
    after = wait_pods_running(api, namespace, "gone", names("gone", *ALL))
    assert after["gone-worker-0"]["metadata"]["uid"] != held["metadata"]["uid"]
    assert _finalizers(after["gone-worker-0"]) == [TRACKING_FINALIZER]
    for name in ("gone-scheduler-0", "gone-server-0", "gone-worker-1"):  # the whole job restarted
        assert after[name]["metadata"]["uid"] != running[name]["metadata"]["uid"]
    assert wait_state(api, namespace, "gone", "Running")["attempt"] == 1
    assert (
        second.metric(
            "training_operator_jobs_restarted_total", job_namespace=namespace, framework="mxnet"
        )
        == 1
    )


def test_a_worker_that_succeeded_and_was_deleted_while_the_controller_was_down_counts(
    api: Api, namespace: str, start_controller: StartController, kubelet: TestKubelet
) -> None:
    first = start_controller()
    # 30 s of grace: the workers outlive the scheduler's success while the controller is down.
    create_job(api, namespace, mxjob("late", grace_seconds=30))
    wait_pods_running(api, namespace, "late", names("late", *ALL))
    kubelet.terminate(namespace, "late-scheduler-0", exit_code=0)
    done = wait_state(api, namespace, "late", "Succeeded")
    assert done["replicaStatuses"]["Worker"]["succeeded"] == 0
    _stop(first)

    kubelet.terminate(namespace, "late-worker-0", exit_code=0)
    api.request("DELETE", f"/api/v1/namespaces/{namespace}/pods/late-worker-0")
    _held(api, namespace, "late", "late-worker-0")

    start_controller()
    wait_for(
        "the deleted worker counted as succeeded",
        lambda: status(api, namespace, "late")["replicaStatuses"]["Worker"],
        lambda workers: workers["succeeded"] == 1,
        timeout=30,
    )
    wait_for(
        "the counted worker released and gone",
        lambda: set(pods(api, namespace, job="late")),
        lambda left: "late-worker-0" not in left,
        timeout=30,
    )
    final = status(api, namespace, "late")
    assert final["state"] == "Succeeded"
    assert final["replicaStatuses"]["Worker"]["failed"] == 0


def test_deleting_the_mxjob_deletes_every_pod_even_while_the_controller_is_down(
    api: Api,
    namespace: str,
    start_controller: StartController,
    kubelet: TestKubelet,
    control_plane: ControlPlane,
) -> None:
    first = start_controller()
    for name in ("up", "down"):
        create_job(api, namespace, mxjob(name))
    for name in ("up", "down"):
        wait_pods_running(api, namespace, name, names(name, *ALL))

    control_plane.kubectl("delete", "mxjob", "up", "-n", namespace)
    wait_for(
        "every pod of 'up' gone",
        lambda: set(pods(api, namespace, job="up")),
        lambda left: not left,
        timeout=30,
    )

    _stop(first)
    api.request("DELETE", f"{GROUP_PATH}/namespaces/{namespace}/mxjobs/down")
    # The garbage collector deletes the pods; the finalizer holds them for the controller.
    for name in names("down", *ALL):
        _held(api, namespace, "down", name)
    start_controller()
    wait_for(
        "every pod of 'down' gone",
        lambda: set(pods(api, namespace, job="down")),
        lambda left: not left,
        timeout=30,
    )


def test_pods_keep_the_finalizer_only_until_their_end_is_counted(
    api: Api, namespace: str, controller: ControllerProcess, kubelet: TestKubelet
) -> None:
    create_job(api, namespace, mxjob("kept", run_policy={"cleanPodPolicy": "None"}))
    wait_pods_running(api, namespace, "kept", names("kept", *ALL))
    kubelet.terminate(namespace, "kept-worker-0", exit_code=0)
    wait_for(
        "the succeeded worker released",
        lambda: _finalizers(pods(api, namespace, job="kept")["kept-worker-0"]),
        lambda finalizers: not finalizers,
        timeout=30,
    )
    assert status(api, namespace, "kept")["replicaStatuses"]["Worker"]["succeeded"] == 1
    still = pods(api, namespace, job="kept")
    for name in ("kept-scheduler-0", "kept-server-0", "kept-worker-1"):
        assert _finalizers(still[name]) == [TRACKING_FINALIZER], name

    for name, code in (("kept-worker-1", 0), ("kept-server-0", 0), ("kept-scheduler-0", 0)):
        kubelet.terminate(namespace, name, exit_code=code)
    final = wait_state(api, namespace, "kept", "Succeeded")

    ended = wait_for(
        "every ended pod released",
        lambda: pods(api, namespace, job="kept"),
        lambda found: not any(_finalizers(p) for p in found.values()),
        timeout=30,
    )
    assert set(ended) == names("kept", *ALL)  # cleanPodPolicy None: they stay, released
    assert all(phase(p) == "Succeeded" for p in ended.values())
    final = status(api, namespace, "kept")
    assert final["replicaStatuses"]["Worker"]["succeeded"] == 2
    assert final["replicaStatuses"]["Server"]["succeeded"] == 1


RELEASE_PATCH = (
    '{"metadata":{"$deleteFromPrimitiveList/finalizers":["' + TRACKING_FINALIZER + '"]}}'
)
"""The strategic merge patch docs/how-to/upgrade-and-uninstall.md gives for pods left after an
uninstall."""


def test_after_an_uninstall_the_documented_kubectl_command_lets_the_pods_go(
    api: Api,
    namespace: str,
    start_controller: StartController,
    kubelet: TestKubelet,
    control_plane: ControlPlane,
) -> None:
    controller = start_controller()
    create_job(api, namespace, mxjob("left"))
    wait_pods_running(api, namespace, "left", names("left", *ALL))
    _stop(controller)  # uninstalled, its MXJob deleted after it
    api.request("DELETE", f"{GROUP_PATH}/namespaces/{namespace}/mxjobs/left")
    for name in names("left", *ALL):
        _held(api, namespace, "left", name)
    listed = control_plane.kubectl(
        "get", "pods", "-n", namespace, "-l", "training.kubeflow.org/job-name=left", "-o", "name"
    ).stdout.split()
    assert len(listed) == len(ALL)
    control_plane.kubectl(
        "patch", "-n", namespace, *listed, "--type=strategic", "-p", RELEASE_PATCH
    )
    wait_for(
        "every pod of 'left' gone",
        lambda: set(pods(api, namespace, job="left")),
        lambda left: not left,
        timeout=30,
    )
