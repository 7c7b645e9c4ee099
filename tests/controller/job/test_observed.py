"""observed: what a pod says about its replica, read totally."""

from __future__ import annotations

from controller.job.observed import observe
from controller.job.ownership import controller_uid
from tests.controller.samples import job, pod, with_running_sidecar


def test_a_terminated_container_gives_the_exit_code_and_slot() -> None:
    view = observe(pod(job(), "worker-1", phase="Failed", exit_code=137))
    assert (view.slot, view.exit_code, view.failed, view.active) == ("worker-1", 137, True, False)
    assert view.reason == "Error"


def test_an_evicted_pod_has_no_exit_code_and_the_pods_reason() -> None:
    view = observe(pod(job(), "server-0", phase="Failed", reason="Evicted"))
    assert view.exit_code is None and view.reason == "Evicted"


def test_in_place_restarts_and_the_last_exit_are_the_containers() -> None:
    view = observe(pod(job(), "worker-0", restarts=2, last_exit_code=1))
    assert view.in_place_restarts == 2 and view.last_exit_code == 1


def test_a_terminating_pod_is_not_active() -> None:
    view = observe(pod(job(), "worker-0", terminating=True))
    assert view.terminating and not view.active and not view.running


def test_the_node_a_pod_is_bound_to_is_read_from_its_spec() -> None:
    bound = pod(job(), "worker-0")
    bound["spec"]["nodeName"] = "node-1"
    assert observe(bound).node_name == "node-1"
    unbound = pod(job(), "worker-0")
    unbound["spec"].pop("nodeName", None)
    assert observe(unbound).node_name is None
    unbound["spec"]["nodeName"] = ""
    assert observe(unbound).node_name is None


def test_a_malformed_pod_reads_as_pending() -> None:
    view = observe(
        {
            "metadata": {"name": "x", "labels": {"training.kubeflow.org/replica-index": "abc"}},
            "status": "oops",
        }
    )
    assert view.phase == "Pending" and view.index is None and view.replica_type is None
    assert view.in_place_restarts == 0


def test_the_controller_owner_is_found_among_owner_references() -> None:
    built = pod(job(uid="u-1"), "worker-0")
    built["metadata"]["ownerReferences"].insert(0, {"uid": "not-controller"})
    assert controller_uid(built) == "u-1"
    assert controller_uid({"metadata": {}}) is None


def test_a_container_the_kubelet_cannot_start_is_named_with_its_reason_and_message() -> None:
    built = pod(job(), "worker-0", phase="Pending")
    built["status"]["initContainerStatuses"] = [
        {"name": "fetch", "state": {"waiting": {"reason": "ErrImagePull", "message": "refused"}}}
    ]
    problem = observe(built).start_problem
    assert problem is not None
    assert (problem.container, problem.reason, problem.message) == (
        "fetch",
        "ErrImagePull",
        "refused",
    )


def test_a_container_still_being_created_is_not_a_start_problem() -> None:
    assert observe(pod(job(), "worker-0", phase="Pending")).start_problem is None


def test_who_ended_a_pod_is_read_from_its_disruption_target_condition() -> None:
    built = pod(job(), "worker-0", phase="Failed", exit_code=143)
    built["status"]["conditions"] = [
        {"type": "Ready", "status": "False"},
        {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"},
    ]
    assert observe(built).disruption == "PreemptionByScheduler"
    assert observe(pod(job(), "worker-0")).disruption is None


def test_a_replica_ends_with_mxnet_while_a_sidecar_keeps_the_pod_running() -> None:
    done = observe(
        with_running_sidecar(pod(job(), "worker-0", exit_code=0), restart_policy="Never")
    )
    assert (done.succeeded, done.lingering, done.active, done.exit_code) == (True, True, False, 0)
    bug = observe(with_running_sidecar(pod(job(), "worker-0", exit_code=3), restart_policy="Never"))
    assert (bug.failed, bug.lingering, bug.exit_code, bug.reason) == (True, True, 3, "Error")


def test_under_on_failure_only_a_success_ends_the_replica_before_the_pod() -> None:
    retried = observe(
        with_running_sidecar(pod(job(), "worker-0", exit_code=1), restart_policy="OnFailure")
    )
    assert retried.running and not retried.lingering  # the kubelet starts mxnet again
    done = observe(
        with_running_sidecar(pod(job(), "worker-0", exit_code=0), restart_policy="OnFailure")
    )
    assert done.succeeded and done.lingering


def test_under_always_the_kubelet_restarts_mxnet_so_the_pod_runs_on() -> None:
    view = observe(
        with_running_sidecar(pod(job(), "worker-0", exit_code=0), restart_policy="Always")
    )
    assert view.running and not view.lingering


def test_a_pod_the_kubelet_ended_is_not_lingering() -> None:
    view = observe(pod(job(), "worker-0", phase="Succeeded", exit_code=0))
    assert view.succeeded and not view.lingering


def test_a_pod_failed_only_by_its_sidecar_ran_a_replica_that_succeeded() -> None:
    failed_by_sidecar = pod(job(), "worker-0", phase="Failed", exit_code=0)
    failed_by_sidecar["status"]["containerStatuses"].append(
        {"name": "collector", "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}
    )
    view = observe(failed_by_sidecar)
    assert (view.succeeded, view.lingering, view.exit_code) == (True, False, 0)


def test_an_evicted_pod_stays_failed_whatever_its_container_said() -> None:
    evicted = observe(pod(job(), "worker-0", phase="Failed", exit_code=0, reason="Evicted"))
    assert evicted.failed and evicted.reason == "Evicted"
