"""Switching from kubeflow training-operator v1.8.1 to this operator with jobs live.

On a control plane of its own (the session's already has this project's CRD), the real
training-operator v1.8.1 (``localkube.thirdparty.training_operator``: built from the Go module
proxy, its own CRD) runs three MXJobs while the test kubelet plays the node: one still running, one
Succeeded, one Failed. Then it is stopped and this operator is installed as docs/migrating.md
says: its CRD by server-side apply taking over the fields, its webhooks, its controller. The
module fixture does all of that once; the tests read what came of it, and the last one lets the
running job finish.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from localkube.base.api import Api, ApiError, ensure_namespace
from localkube.base.processes import stop_process
from localkube.kubelet.core import TestKubelet
from localkube.plane.controlplane import ControlPlane
from localkube.plane.install_choices import InstallChoices
from localkube.plane.operator import LocalOperator, wait_established
from localkube.plane.settings import ControlPlaneSettings
from localkube.thirdparty.training_operator import LocalTrainingOperator
from shared.conversion import convert
from shared.defaults import apply_defaults
from shared.validation import validate
from tests.e2e.controller_fixtures import condition, mxjob
from tests.helpers.waiting import wait_for

# training-operator runs the jobs this operator takes over.
pytestmark = pytest.mark.late_builds("build-training-operator")

NAMESPACE = "migrating"
JOBS = ("running", "succeeded", "failed")
OPERATOR_NAME_LABEL = "training.kubeflow.org/operator-name"


def _job(name: str, *, servers: int = 0, workers: int = 1) -> dict[str, Any]:
    """A job as a training-operator user wrote it: no restartPolicy, no runPolicy."""
    return mxjob(name, servers=servers, workers=workers, grace_seconds=None, namespace=NAMESPACE)


def _get(api: Api, path: str) -> dict[str, Any]:
    found: dict[str, Any] = api.request("GET", path)
    return found


def _job_path(name: str, version: str = "v1") -> str:
    return f"/apis/kubeflow.org/{version}/namespaces/{NAMESPACE}/mxjobs/{name}"


def _owned(api: Api, kind: str, job: str) -> dict[str, dict[str, Any]]:
    """The job's pods or Services, whoever labelled them, by name."""
    listed = api.request(
        "GET",
        f"/api/v1/namespaces/{NAMESPACE}/{kind}",
        query=[("labelSelector", f"training.kubeflow.org/job-name={job}")],
    )
    return {item["metadata"]["name"]: item for item in listed["items"]}


def _uids(objects: dict[str, dict[str, Any]]) -> dict[str, str]:
    return {name: obj["metadata"]["uid"] for name, obj in objects.items()}


def _all_running(api: Api, job: str) -> bool:
    """Every pod of the job Running, and a Service for each."""
    pods = _owned(api, "pods", job)
    running = all((p.get("status") or {}).get("phase") == "Running" for p in pods.values())
    return running and len(_owned(api, "services", job)) == len(pods) > 0


def _reconciled(api: Api) -> bool:
    """This operator wrote its status on the running job and adopted its Services.

    Status is written first in a reconcile, the Services are patched after it.
    """
    state = (_get(api, _job_path("running")).get("status") or {}).get("state")
    services = _owned(api, "services", "running").values()
    return state == "Running" and all(
        s["spec"].get("publishNotReadyAddresses") is True for s in services
    )


def _true(job: dict[str, Any], ctype: str) -> bool:
    found = condition(job.get("status") or {}, ctype)
    return found is not None and found.get("status") == "True"


@dataclass
class Takeover:
    """What the fixture saw before and after switching operators."""

    plane: ControlPlane
    api: Api
    kubelet: TestKubelet
    before: dict[str, dict[str, Any]]
    """Each job as training-operator left it (v1)."""
    pods_before: dict[str, dict[str, str]]
    services_before: dict[str, dict[str, str]]
    webhook_port: int


@pytest.fixture(scope="module")
def takeover(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Takeover]:
    plane = ControlPlane(ControlPlaneSettings(state_dir=Path(tmp_path_factory.mktemp("takeover"))))
    pids: list[int] = []
    webhook_pid = 0
    try:
        plane.up()
        api = Api.from_kubeconfig(plane.kubeconfig)
        ensure_namespace(api, NAMESPACE)
        kubelet = TestKubelet(api, node_name="takeover-node", namespaces=(NAMESPACE,))
        kubelet.start()

        # training-operator v1.8.1 runs three jobs.
        theirs = LocalTrainingOperator(plane)
        theirs.install_crd()
        their_process = theirs.start()
        pids.append(their_process.pid)
        for manifest in (
            _job("running", servers=1, workers=2),
            _job("succeeded"),
            _job("failed"),
        ):
            plane.kubectl("apply", "-f", "-", input_text=json.dumps(manifest))
        for job in JOBS:
            wait_for(
                f"training-operator's pods and Services of {job} running",
                functools.partial(_all_running, api, job),
                bool,
                timeout=60,
            )
        for pod in ("succeeded-worker-0", "succeeded-scheduler-0"):
            kubelet.terminate(NAMESPACE, pod, exit_code=0)
        kubelet.terminate(NAMESPACE, "failed-worker-0", exit_code=1)
        for job, ctype in (
            ("running", "Running"),
            ("succeeded", "Succeeded"),
            ("failed", "Failed"),
        ):
            wait_for(
                f"{job} {ctype}",
                functools.partial(_get, api, _job_path(job)),
                functools.partial(_true, ctype=ctype),
                timeout=30,
            )
        # Its Failed job keeps a running Scheduler (cleanPodPolicy None); it ends later.
        kubelet.terminate(NAMESPACE, "failed-scheduler-0", exit_code=137)
        wait_for(
            "failed-scheduler-0 ended",
            lambda: _get(api, f"/api/v1/namespaces/{NAMESPACE}/pods/failed-scheduler-0")["status"],
            lambda pod_status: pod_status.get("phase") == "Failed",
            timeout=30,
        )
        theirs.stop(their_process)
        theirs.uninstall_webhook()
        before = {job: _get(api, _job_path(job)) for job in JOBS}
        pods_before = {job: _uids(_owned(api, "pods", job)) for job in JOBS}
        services_before = {job: _uids(_owned(api, "services", job)) for job in JOBS}

        # This operator takes over, as docs/migrating.md says.
        ours = LocalOperator(plane)
        webhook_pid, webhook_port = ours.start_webhook()
        crd = json.dumps(ours.crd_manifest(webhook_port=webhook_port))
        plane.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", input_text=crd)
        wait_established(plane)
        ours.register_webhooks(webhook_port=webhook_port)
        controller, _, _ = ours.start_controller(
            f"--namespace={NAMESPACE}", log_name="takeover-controller.log", ready_path="/readyz"
        )
        pids.append(controller.pid)
        wait_for(
            "this operator's status on the running job, and its Services adopted",
            functools.partial(_reconciled, api),
            bool,
            timeout=30,
        )
        yield Takeover(plane, api, kubelet, before, pods_before, services_before, webhook_port)
        kubelet.stop()
    finally:
        for pid in pids:
            stop_process(pid)
        stop_process(webhook_pid)
        plane.down()


def _serve_v1beta1(takeover: Takeover, *, served: bool) -> None:
    """This operator's CRD with or without ``components/v1beta1``, applied as an overlay would."""
    local = LocalOperator(takeover.plane, choices=InstallChoices(v1beta1=served))
    crd = json.dumps(local.crd_manifest(webhook_port=takeover.webhook_port))
    takeover.plane.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", input_text=crd)
    wait_established(takeover.plane)

    def answered() -> int:
        try:
            takeover.api.request("GET", _job_path(JOBS[0], "v1beta1"))
        except ApiError as error:
            return error.status
        return 200

    wait_for(f"v1beta1 served: {served}", answered,
             lambda status: status == (200 if served else 404), timeout=30)  # fmt: skip


def test_every_stored_job_reads_back_valid_through_v1_and_v1beta1_where_served(
    takeover: Takeover,
) -> None:
    """v1 alone is served after the switch, as under training-operator; with the v1beta1
    install option the same stored jobs read back through the conversion webhook too."""
    for name in JOBS:
        v1 = _get(takeover.api, _job_path(name))
        assert v1["spec"] == takeover.before[name]["spec"], f"{name}: spec changed on the way"
        assert validate(apply_defaults(v1)) == [], name
    _serve_v1beta1(takeover, served=True)
    try:
        for name in JOBS:
            v1beta1 = _get(takeover.api, _job_path(name, "v1beta1"))  # the conversion webhook
            assert v1beta1["apiVersion"] == "kubeflow.org/v1beta1"
            v1 = _get(takeover.api, _job_path(name))
            assert convert(v1beta1, "kubeflow.org/v1")["spec"] == v1["spec"]
    finally:
        _serve_v1beta1(takeover, served=False)


def test_the_running_job_keeps_its_pods_and_services_adopted(takeover: Takeover) -> None:
    api = takeover.api
    pods = _owned(api, "pods", "running")
    services = _owned(api, "services", "running")
    assert _uids(pods) == takeover.pods_before["running"]
    assert _uids(services) == takeover.services_before["running"]
    for pod in pods.values():
        assert pod["status"]["phase"] == "Running"
        assert pod["metadata"]["labels"][OPERATOR_NAME_LABEL] == "mxjob-controller"
        assert pod["status"]["containerStatuses"][0]["restartCount"] == 0
    for service in services.values():
        selector = service["spec"]["selector"]
        assert OPERATOR_NAME_LABEL not in selector
        assert service["spec"]["publishNotReadyAddresses"] is True
        assert service["metadata"]["labels"][OPERATOR_NAME_LABEL] == "mxjob-operator"
    job_status = _get(api, _job_path("running"))["status"]
    assert job_status["state"] == "Running"
    assert job_status["restartCount"] == 0
    counts = {t: s["active"] for t, s in job_status["replicaStatuses"].items()}
    assert counts == {"Scheduler": 1, "Server": 1, "Worker": 2}


def test_finished_jobs_keep_their_state_and_their_pods(takeover: Takeover) -> None:
    for name, state in (("succeeded", "Succeeded"), ("failed", "Failed")):
        job = _get(takeover.api, _job_path(name))
        assert job["status"]["state"] == state
        assert job["status"]["conditions"] == takeover.before[name]["status"]["conditions"]
        assert job["status"]["completionTime"] == takeover.before[name]["status"]["completionTime"]
        assert _uids(_owned(takeover.api, "pods", name)) == takeover.pods_before[name]


def test_the_running_job_finishes_with_honest_status_when_its_pods_end(
    takeover: Takeover,
) -> None:
    kubelet = takeover.kubelet
    for pod in ("running-worker-0", "running-worker-1", "running-server-0"):
        kubelet.terminate(NAMESPACE, pod, exit_code=0)
    kubelet.terminate(NAMESPACE, "running-scheduler-0", exit_code=0)
    job = wait_for(
        "the taken-over job Succeeded",
        lambda: _get(takeover.api, _job_path("running")),
        lambda found: found["status"].get("state") == "Succeeded",
        timeout=30,
    )
    job_status = job["status"]
    counts = {
        t: (s["active"], s["succeeded"], s["failed"])
        for t, s in job_status["replicaStatuses"].items()
    }
    assert counts == {"Scheduler": (0, 1, 0), "Server": (0, 1, 0), "Worker": (0, 2, 0)}
    assert job_status["restartCount"] == 0
    assert job_status["completionTime"]
    assert not _true(job, "Running")
    assert _uids(_owned(takeover.api, "pods", "running")) == takeover.pods_before["running"]
