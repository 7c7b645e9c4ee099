"""The ``kubeflow-training==1.8.1`` SDK as a real client of the operator.

Code written against training-operator v1.8.1 (``TrainingClient(job_kind="MXJob")``) must work
unchanged. ``tests/e2e/sdk/driver.py`` runs in the SDK's own virtualenv (``make sdk-venv``) and
makes the SDK's calls against the local control plane: the CPU train example built from the SDK's
models and run for real by the exec-mode test kubelet, then every read, the update, the delete,
and a spec the webhook refuses. One run (about 10 s of training) serves every test here; each test
checks one behaviour in its report.
"""

from __future__ import annotations

import json
import re
import secrets
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from localkube.base.api import Api, ApiError, ensure_namespace
from localkube.base.paths import PROJECT_ROOT
from localkube.base.ports import free_port
from localkube.base.processes import stop_process
from localkube.plane.controlplane import ControlPlane
from localkube.plane.operator import RunningOperator
from localkube.scenarios.demo import examples_kubelet, pod_log
from localkube.scenarios.jobwatch import EXAMPLES, load_job
from tests.e2e.progress_wiring import STATUS_MOUNT, status_env, status_volume

SDK_PYTHON = PROJECT_ROOT / ".venv-sdk" / "bin" / "python"
DRIVER = Path(__file__).parent / "sdk" / "driver.py"
TRAIN_EXAMPLE = EXAMPLES / "v1" / "train" / "mx_job_dist_cpu.yaml"
JOB = "dist-train-cpu"
REPLICA_TYPES = ("Scheduler", "Server", "Worker")
DIGEST = re.compile(r"^final parameters sha256 ([0-9a-f]{64})$", re.MULTILINE)
JOB_TIMEOUT = 120


@dataclass(frozen=True)
class SdkRun:
    """The driver's report and where the run's pods wrote their output."""

    report: dict[str, Any]
    namespace: str
    ports: dict[str, int]
    log_dir: Path

    def result(self, step: str) -> Any:
        """What an SDK call returned; fails with the call's exception when it raised."""
        entry = self.report["steps"][step]
        assert "error" not in entry, f"{step} raised:\n{entry['error']['traceback']}"
        return entry["result"]

    def error(self, step: str) -> dict[str, Any]:
        entry = self.report["steps"][step]
        assert "error" in entry, f"{step} was expected to raise, returned {entry['result']!r}"
        error: dict[str, Any] = entry["error"]
        return error


def require_sdk_venv() -> None:
    """Fail (never skip) when the SDK's virtualenv is missing: the tests would prove nothing."""
    assert SDK_PYTHON.exists(), f"{SDK_PYTHON} is missing: run `make sdk-venv` (make test does)"


@pytest.fixture(scope="module")
def sdk_run(
    api: Api,
    control_plane: ControlPlane,
    local_operator: RunningOperator,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[SdkRun]:
    """Namespace, controller and exec kubelet for the module; the driver run once against them."""
    require_sdk_venv()
    namespace = f"sdk-{secrets.token_hex(4)}"
    ensure_namespace(api, namespace)
    log_dir = tmp_path_factory.mktemp("sdk-pods")
    process, _, _ = local_operator.local.start_controller(
        f"--namespace={namespace}", "--identity=sdk-client", log_name=f"controller-{namespace}.log"
    )
    ports = {rtype: free_port() for rtype in REPLICA_TYPES}
    try:
        with examples_kubelet(
            api, node_name=f"node-{namespace}", namespace=namespace, log_dir=log_dir
        ) as kubelet:
            driven = subprocess.run(
                [
                    str(SDK_PYTHON),
                    str(DRIVER),
                    f"--kubeconfig={control_plane.kubeconfig}",
                    f"--namespace={namespace}",
                    f"--name={JOB}",
                    f"--ports={json.dumps(ports)}",
                    f"--timeout={JOB_TIMEOUT}",
                ],
                capture_output=True,
                text=True,
                check=False,
                timeout=3 * JOB_TIMEOUT,
            )
            assert driven.returncode == 0, f"the driver failed:\n{driven.stderr[-5000:]}"
            (log_dir / "sdk-report.json").write_text(driven.stdout)  # kept for a failure's reader
            yield SdkRun(json.loads(driven.stdout), namespace, ports, log_dir)
        api.request("DELETE", f"/api/v1/nodes/{kubelet.node_name}")
    finally:
        stop_process(process.pid)
        try:
            api.request("DELETE", f"/api/v1/namespaces/{namespace}")
        except ApiError as error:
            if error.status != 404:
                raise


def example_as_sent(ports: dict[str, int]) -> dict[str, Any]:
    """The train example as the SDK sends it: its ports, ``jobMode`` at the model's ``""``."""
    job = load_job(TRAIN_EXAMPLE)
    job["spec"]["jobMode"] = ""
    for rtype, spec in job["spec"]["mxReplicaSpecs"].items():
        spec["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] = ports[rtype]
    return job


def test_the_sdk_runs_with_the_pinned_kubernetes_client(sdk_run: SdkRun) -> None:
    pinned = (PROJECT_ROOT / "tests" / "e2e" / "sdk" / "requirements.txt").read_text()
    assert f"\nkubernetes=={sdk_run.report['kubernetes_client']}\n" in pinned
    assert int(sdk_run.report["kubernetes_client"].split(".")[0]) < 36


def test_the_job_built_from_sdk_models_is_the_cpu_train_example(sdk_run: SdkRun) -> None:
    assert sdk_run.report["steps"]["sent"] == example_as_sent(sdk_run.ports)


def assert_progress_wiring(job: dict[str, Any], namespace: str) -> None:
    """Every replica's template carries what admission wrote for progress reports, once: the
    SDK's models (kubernetes' V1PodTemplateSpec) keep it through a read and a write back."""
    for rtype, replica in job["spec"]["mxReplicaSpecs"].items():
        pod = replica["template"]["spec"]
        (mxnet,) = pod["containers"]
        progress = [e for e in mxnet["env"] if e["name"].startswith("MXJOB_STATUS_")]
        assert progress == mxnet["env"][-3:] == status_env(namespace, JOB), rtype
        assert mxnet["volumeMounts"] == [STATUS_MOUNT], rtype
        assert pod["volumes"] == [status_volume(JOB)], rtype


def test_create_job_is_admitted_and_get_job_reads_it_back_defaulted(sdk_run: SdkRun) -> None:
    sdk_run.result("create_job")
    job = sdk_run.result("get_job")
    assert job["metadata"]["name"] == JOB
    assert job["spec"]["jobMode"] == "MXTrain"  # the SDK sent "", as training-operator allowed
    assert set(job["spec"]["mxReplicaSpecs"]) == set(REPLICA_TYPES)
    assert job["spec"]["runPolicy"]["cleanPodPolicy"] == "Running"
    assert_progress_wiring(job, sdk_run.namespace)


def test_list_jobs_returns_the_job(sdk_run: SdkRun) -> None:
    assert [job["metadata"]["name"] for job in sdk_run.result("list_jobs")] == [JOB]


def test_wait_for_job_conditions_returns_the_succeeded_job(sdk_run: SdkRun) -> None:
    job = sdk_run.result("wait_for_job_conditions")
    succeeded = [c for c in job["status"]["conditions"] if c["type"] == "Succeeded"]
    assert [c["status"] for c in succeeded] == ["True"], job["status"]
    assert sdk_run.result("is_job_succeeded") is True


def test_get_job_conditions_lists_created_running_succeeded(sdk_run: SdkRun) -> None:
    conditions = {c["type"]: c for c in sdk_run.result("get_job_conditions")}
    assert {"Created", "Running", "Succeeded"} <= set(conditions), conditions
    assert conditions["Succeeded"]["status"] == "True"
    assert conditions["Succeeded"]["reason"] == "MXJobSucceeded"
    assert conditions["Running"]["status"] == "False"  # at most one of them is True
    assert "Failed" not in conditions


def test_get_job_pods_selects_by_replica_type_index_and_master(sdk_run: SdkRun) -> None:
    workers = [f"{JOB}-worker-0", f"{JOB}-worker-1"]
    assert {f"{JOB}-scheduler-0", *workers} <= set(sdk_run.result("get_job_pods"))
    assert sdk_run.result("get_job_pods_workers") == workers
    assert sdk_run.result("get_job_pods_worker_1") == [f"{JOB}-worker-1"]
    # The scheduler decides an MXTrain job's success: it is the `job-role=master` pod.
    assert sdk_run.result("get_job_pods_master") == [f"{JOB}-scheduler-0"]
    assert sdk_run.result("get_job_pod_names_scheduler") == [f"{JOB}-scheduler-0"]


def test_get_job_logs_returns_each_workers_training_output(sdk_run: SdkRun) -> None:
    logs = sdk_run.result("get_job_logs_workers")
    assert sorted(logs) == [f"{JOB}-worker-0", f"{JOB}-worker-1"]
    digests = []
    for pod, text in logs.items():
        # Exactly what the process printed, as the kubelet stored it.
        assert text == pod_log(sdk_run.log_dir, sdk_run.namespace, pod).read_text(), pod
        found = DIGEST.findall(text)
        assert len(found) == 1, text
        digests.append(found[0])
    assert digests[0] == digests[1], "dist_sync workers ended with different parameters"
    master = sdk_run.result("get_job_logs_master")
    assert list(master) == [f"{JOB}-scheduler-0"]
    assert f"scheduler {JOB}-scheduler-0:" in master[f"{JOB}-scheduler-0"]


def test_update_job_sends_the_read_job_back_with_an_annotation_and_a_ttl(
    sdk_run: SdkRun,
) -> None:
    sdk_run.result("update_job")
    job = sdk_run.result("get_job_after_update")
    assert job["metadata"]["annotations"]["example.com/updated-by"] == "kubeflow-sdk"
    assert job["spec"]["runPolicy"]["ttlSecondsAfterFinished"] == 3600
    assert job["status"]["conditions"] == sdk_run.result("get_job_conditions")
    assert_progress_wiring(job, sdk_run.namespace)


def test_delete_job_removes_the_job_and_its_pods(sdk_run: SdkRun) -> None:
    sdk_run.result("delete_job")
    gone = sdk_run.result("after_delete")
    assert gone["job_gone_after"] is not None, gone
    assert gone["pods_gone_after"] is not None, gone
    assert gone["pods_left"] == []


def test_create_job_with_a_bad_spec_raises_with_the_webhooks_message(sdk_run: SdkRun) -> None:
    error = sdk_run.error("create_bad_job")
    assert error["type"] == "RuntimeError"
    assert error["message"] == f"Failed to create MXJob: {sdk_run.namespace}/{JOB}-bad"
    # The API server's answer is the chained exception a user's traceback shows.
    chained = error["chained"]
    assert chained.startswith("ApiException: (422)") or chained.startswith("ApiException: (400)")
    assert "admission webhook" in chained, chained
    assert "spec.mxReplicaSpecs.Scheduler.replicas" in chained, chained
    assert "spec.mxReplicaSpecs.Worker.template.spec.containers" in chained, chained
    assert chained in error["traceback"]
