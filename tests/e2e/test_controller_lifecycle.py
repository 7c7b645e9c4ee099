"""The controller end to end: a job's life from creation to success or failure, and its timers.

Each test runs a real ``mxjob-controller`` process against the local control plane with the
webhook registered; the test kubelet binds and starts pods and plays their exits.
"""

from __future__ import annotations

import operator
import time
from functools import partial
from typing import Any

from controller.job.observed import ATTEMPT_ANNOTATION
from localkube.base.api import Api
from localkube.kubelet.core import TestKubelet
from localkube.plane.controlplane import ControlPlane
from tests.e2e.controller_fixtures import (
    ControllerProcess,
    condition,
    create_job,
    event_reasons,
    events,
    get_job,
    kubectl_state,
    mxjob,
    names,
    phase,
    pods,
    services,
    status,
    wait_pods_running,
    wait_state,
)
from tests.helpers.waiting import wait_for

ALL = ("scheduler-0", "server-0", "worker-0", "worker-1")


def _replaced(old_uid: str, pod: dict[str, Any] | None) -> bool:
    """The pod exists with another uid than ``old_uid``."""
    return pod is not None and pod["metadata"]["uid"] != old_uid


def test_job_runs_to_succeeded_and_kubectl_shows_each_state(
    api: Api,
    namespace: str,
    control_plane: ControlPlane,
    controller: ControllerProcess,
    kubelet: TestKubelet,
) -> None:
    create_job(api, namespace, mxjob("ok"))
    running = wait_pods_running(api, namespace, "ok", names("ok", *ALL))
    wait_state(api, namespace, "ok", "Running")
    assert kubectl_state(control_plane, namespace, "ok") == "Running"

    pod = running["ok-worker-1"]
    labels = pod["metadata"]["labels"]
    assert labels["training.kubeflow.org/replica-type"] == "worker"
    assert labels["training.kubeflow.org/replica-index"] == "1"
    assert labels["training.kubeflow.org/job-role"] == "worker"
    assert running["ok-scheduler-0"]["metadata"]["labels"]["training.kubeflow.org/job-role"] == (
        "master"
    )
    owner = pod["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["controller"], owner["blockOwnerDeletion"]) == (
        "MXJob",
        True,
        True,
    )
    assert pod["spec"]["restartPolicy"] == "Never"  # ExitCode is the controller's business
    service = services(api, namespace, job="ok")["ok-worker-1"]
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["publishNotReadyAddresses"] is True
    assert service["spec"]["ports"][0]["name"] == "mxjob-port"

    kubelet.terminate(namespace, "ok-scheduler-0", exit_code=0)
    final = wait_state(api, namespace, "ok", "Succeeded")
    assert kubectl_state(control_plane, namespace, "ok") == "Succeeded"
    assert final["completionTime"] >= final["startTime"]
    assert final["replicaStatuses"]["Scheduler"]["succeeded"] == 1
    true_exclusive = [
        c["type"]
        for c in final["conditions"]
        if c["type"] in ("Running", "Restarting", "Succeeded", "Failed") and c["status"] == "True"
    ]
    assert true_exclusive == ["Succeeded"]
    # cleanPodPolicy Running (the default): the finished scheduler stays for `kubectl logs`.
    wait_for(
        "running pods cleaned up",
        lambda: set(pods(api, namespace, job="ok")),
        lambda left: left == {"ok-scheduler-0"},
        timeout=30,
    )
    # Events are written in the background, after the status: wait for them.
    wait_for(
        "the job's events",
        lambda: event_reasons(api, namespace, "ok"),
        lambda reasons: (
            {"SuccessfulCreatePod", "SuccessfulCreateService", "MXJobSucceeded"} <= reasons
        ),
        timeout=30,
    )
    described = control_plane.kubectl("describe", "mxjob", "ok", "-n", namespace).stdout
    assert "MXJobSucceeded" in described
    assert (
        controller.metric(
            "training_operator_jobs_successful_total", job_namespace=namespace, framework="mxnet"
        )
        == 1
    )


def test_worker_killed_with_137_restarts_the_whole_job_which_then_succeeds(
    api: Api,
    namespace: str,
    control_plane: ControlPlane,
    controller: ControllerProcess,
    kubelet: TestKubelet,
) -> None:
    create_job(api, namespace, mxjob("retry"))
    before = wait_pods_running(api, namespace, "retry", names("retry", *ALL))
    old_uid = before["retry-worker-0"]["metadata"]["uid"]

    kubelet.terminate(namespace, "retry-worker-0", exit_code=137)
    # Restarting lasts until the new pod runs (the test kubelet starts it at once), so look
    # for the condition rather than hoping to catch the state.
    restarting = wait_for(
        "the Restarting condition",
        lambda: condition(status(api, namespace, "retry"), "Restarting") or {},
        bool,
        timeout=30,
    )
    assert restarting["reason"] == "MXJobRestarting"
    assert "retry-worker-0" in restarting["message"] and "137" in restarting["message"]
    assert "as a whole (attempt 1)" in restarting["message"]
    after = wait_for(
        "every pod made again in attempt 1 and Running",
        lambda: pods(api, namespace, job="retry"),
        lambda found: set(found) == names("retry", *ALL) and all(
            p["metadata"].get("annotations", {}).get(ATTEMPT_ANNOTATION) == "1"
            and phase(p) == "Running" for p in found.values()
        ),
        timeout=30,
    )  # fmt: skip
    assert after["retry-worker-0"]["metadata"]["uid"] != old_uid
    for other in ("retry-scheduler-0", "retry-server-0", "retry-worker-1"):
        assert after[other]["metadata"]["uid"] != before[other]["metadata"]["uid"]
    running = wait_state(api, namespace, "retry", "Running")
    assert running["restartCount"] == 1 and running["attempt"] == 1
    [entry] = running["restarts"]
    assert (entry["replicaType"], entry["index"], entry["exitCode"]) == ("Worker", 0, 137)
    assert kubectl_state(control_plane, namespace, "retry") == "Running"

    kubelet.terminate(namespace, "retry-scheduler-0", exit_code=0)
    final = wait_state(api, namespace, "retry", "Succeeded")
    assert final["restartCount"] == 1
    wait_for(
        "the exit, restart and deletion events",
        lambda: event_reasons(api, namespace, "retry"),
        lambda reasons: {"ExitedWithCode", "MXJobRestarting", "SuccessfulDeletePod"} <= reasons,
        timeout=30,
    )
    exited = [e for e in events(api, namespace, "retry") if e["reason"] == "ExitedWithCode"]
    assert "137 (SIGKILL)" in exited[0]["message"]
    assert (
        controller.metric(
            "training_operator_jobs_restarted_total", job_namespace=namespace, framework="mxnet"
        )
        == 1
    )


def test_worker_exiting_1_fails_the_job_even_if_the_scheduler_then_exits_0(
    api: Api, namespace: str, controller: ControllerProcess, kubelet: TestKubelet
) -> None:
    create_job(api, namespace, mxjob("perm", run_policy={"cleanPodPolicy": "None"}))
    wait_pods_running(api, namespace, "perm", names("perm", *ALL))

    kubelet.terminate(namespace, "perm-worker-1", exit_code=1)
    kubelet.terminate(namespace, "perm-scheduler-0", exit_code=0)
    failed = wait_state(api, namespace, "perm", "Failed")
    message = condition(failed, "Failed")["message"]  # type: ignore[index]
    assert "perm-worker-1" in message and "code 1" in message
    assert condition(failed, "Succeeded") is None
    # Nothing that happens afterwards turns it into a success: the status that counts the
    # worker's success (written by the reconcile that saw it) still says Failed.
    kubelet.terminate(namespace, "perm-worker-0", exit_code=0)
    counted = wait_for(
        "perm-worker-0's success counted in the status",
        lambda: status(api, namespace, "perm"),
        lambda s: s.get("replicaStatuses", {}).get("Worker", {}).get("succeeded") == 1,
        timeout=30,
    )
    assert counted["state"] == "Failed"
    assert condition(counted, "Succeeded") is None
    wait_for(
        "the MXJobFailed event",
        lambda: event_reasons(api, namespace, "perm"),
        lambda reasons: "MXJobFailed" in reasons,
        timeout=30,
    )


def test_backoff_limit_2_and_three_retryable_failures_fail_with_backoff_limit_exceeded(
    api: Api, namespace: str, controller: ControllerProcess, kubelet: TestKubelet
) -> None:
    create_job(
        api, namespace, mxjob("backoff", workers=1, servers=0, run_policy={"backoffLimit": 2})
    )
    expected = names("backoff", "scheduler-0", "worker-0")
    for attempt in (1, 2):
        uid = wait_pods_running(api, namespace, "backoff", expected)["backoff-worker-0"][
            "metadata"
        ]["uid"]
        kubelet.terminate(namespace, "backoff-worker-0", exit_code=143)
        wait_for(
            f"worker recreated after failure {attempt}",
            lambda: pods(api, namespace).get("backoff-worker-0"),
            partial(_replaced, uid),
            timeout=30,
        )
        wait_for(
            f"restartCount {attempt}",
            lambda: status(api, namespace, "backoff").get("restartCount"),
            partial(operator.eq, attempt),
            timeout=30,
        )
    wait_pods_running(api, namespace, "backoff", expected)
    kubelet.terminate(namespace, "backoff-worker-0", exit_code=137)
    failed = wait_state(api, namespace, "backoff", "Failed")
    assert condition(failed, "Failed")["reason"] == "BackoffLimitExceeded"  # type: ignore[index]
    assert failed["restartCount"] == 2
    # cleanPodPolicy Running applies on a backoff failure too: the scheduler goes.
    wait_for(
        "running scheduler cleaned up",
        lambda: set(pods(api, namespace, job="backoff")),
        lambda left: "backoff-scheduler-0" not in left,
        timeout=30,
    )


def test_active_deadline_fails_the_job_on_time_without_any_other_event(
    api: Api, namespace: str, controller: ControllerProcess, kubelet: TestKubelet
) -> None:
    started = time.monotonic()
    create_job(api, namespace, mxjob("deadline", run_policy={"activeDeadlineSeconds": 5}))
    wait_pods_running(api, namespace, "deadline", names("deadline", *ALL))
    # From here nothing touches the job or its pods: only the controller's timer can fire.
    failed = wait_state(api, namespace, "deadline", "Failed", timeout=15)
    elapsed = time.monotonic() - started
    assert 4 <= elapsed <= 10, elapsed
    assert condition(failed, "Failed")["reason"] == "DeadlineExceeded"  # type: ignore[index]
    wait_for(
        "pods removed",
        lambda: set(pods(api, namespace, job="deadline")),
        lambda left: not left,
        timeout=30,
    )
    wait_for(
        "the DeadlineExceeded event",
        lambda: event_reasons(api, namespace, "deadline"),
        lambda reasons: "DeadlineExceeded" in reasons,
        timeout=30,
    )


def test_ttl_after_finished_deletes_the_job_on_time(
    api: Api, namespace: str, controller: ControllerProcess, kubelet: TestKubelet
) -> None:
    create_job(
        api,
        namespace,
        mxjob("ttl", workers=1, servers=0, run_policy={"ttlSecondsAfterFinished": 3}),
    )
    wait_pods_running(api, namespace, "ttl", names("ttl", "scheduler-0", "worker-0"))
    kubelet.terminate(namespace, "ttl-scheduler-0", exit_code=0)
    wait_state(api, namespace, "ttl", "Succeeded")
    finished = time.monotonic()
    wait_for(
        "MXJob deleted", lambda: get_job(api, namespace, "ttl"), lambda job: job is None, timeout=10
    )
    elapsed = time.monotonic() - finished
    assert 1.5 <= elapsed <= 8, elapsed


def test_deleting_the_job_garbage_collects_its_pods_and_services(
    api: Api, namespace: str, controller: ControllerProcess, kubelet: TestKubelet
) -> None:
    create_job(api, namespace, mxjob("gc"))
    wait_pods_running(api, namespace, "gc", names("gc", *ALL))
    assert len(services(api, namespace, job="gc")) == 4
    api.request("DELETE", f"/apis/kubeflow.org/v1/namespaces/{namespace}/mxjobs/gc")
    # kube-controller-manager's garbage collector; its discovery of a new CRD can take 30 s.
    wait_for(
        "pods and services garbage-collected",
        lambda: set(pods(api, namespace, job="gc")) | set(services(api, namespace, job="gc")),
        lambda left: not left,
        timeout=60,
        interval=0.5,
    )
