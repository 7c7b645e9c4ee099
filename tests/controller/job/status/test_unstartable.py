"""Pods that cannot start: named at once, fatal after the pod start timeout."""

from __future__ import annotations

from tests.controller.job.status.status_samples import Obj, cond, last_slot, step
from tests.controller.samples import NOW_TEXT, job, later, pod, pods_all


def stuck(job_obj: Obj, key: str, reason: str, message: str, *, created: str = NOW_TEXT) -> Obj:
    """A Pending pod whose container the kubelet cannot start."""
    built = pod(job_obj, key, phase="Pending")
    built["metadata"]["creationTimestamp"] = created
    waiting = {"reason": reason, "message": message}
    built["status"]["containerStatuses"][0]["state"] = {"waiting": waiting}
    return built


def with_one_stuck(job_obj: Obj, reason: str, message: str) -> list[Obj]:
    """Every replica running but the last, which cannot start."""
    last = last_slot(job_obj)
    return [*pods_all(job_obj)[:-1], stuck(job_obj, last, reason, message)]


def test_a_pod_that_cannot_pull_its_image_is_named_at_once_with_the_kubelets_message() -> None:
    train = job()
    pods = with_one_stuck(train, "ImagePullBackOff", 'Back-off pulling image "nope:1"')
    stored, outcome = step(train, pods, now=later(5))
    running = cond(stored["status"], "Running")
    assert running is not None and running["status"] == "False"
    assert running["reason"] == "ImagePullBackOff"
    name = pods[-1]["metadata"]["name"]
    assert f"pod {name} cannot start its container mxnet" in running["message"]
    assert 'Back-off pulling image "nope:1"' in running["message"]
    assert [(e.type, e.reason) for e in outcome.events] == [("Warning", "ImagePullBackOff")]
    assert stored["status"]["state"] == "Created"
    assert outcome.requeue_after == 595  # the pod start timeout's timer
    assert not outcome.finished and outcome.new_restarts == 0
    _, again = step(stored, pods, now=later(6))
    assert again.events == ()  # said once, not on every reconcile


def test_the_job_fails_when_a_pod_could_not_start_for_the_pod_start_timeout() -> None:
    train = job()
    pods = with_one_stuck(train, "CreateContainerConfigError", 'secret "creds" not found')
    stored, outcome = step(train, pods, now=later(600))
    failed = cond(stored["status"], "Failed")
    assert failed is not None and failed["reason"] == "PodStartTimeout"
    assert 'secret "creds" not found' in failed["message"]
    assert "600 s" in failed["message"]
    assert outcome.finished and stored["status"]["restartCount"] == 0


def test_a_jobs_annotation_sets_its_own_pod_start_timeout_and_zero_never_fails_it() -> None:
    train = job()
    train["metadata"]["annotations"] = {
        "mxjob-operator.kubeflow.org/pod-start-timeout-seconds": "30"
    }
    pods = with_one_stuck(train, "ErrImagePull", "connection refused")
    assert step(train, pods, now=later(29))[1].requeue_after == 1
    assert step(train, pods, now=later(30))[1].finished
    train["metadata"]["annotations"]["mxjob-operator.kubeflow.org/pod-start-timeout-seconds"] = "0"
    never = step(train, pods, now=later(86400))[1]
    assert not never.finished and never.requeue_after is None


def test_a_job_whose_cause_is_fixed_in_time_goes_on_to_running() -> None:
    train = job()
    stored, _ = step(train, with_one_stuck(train, "CreateContainerConfigError", "missing"))
    running, _ = step(stored, pods_all(train), now=later(20))
    condition = cond(running["status"], "Running")
    assert condition is not None and condition["status"] == "True"
    assert running["status"]["state"] == "Running"
