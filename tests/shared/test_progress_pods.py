"""shared/progress_pods.py: what admission writes into every replica's pod template so its pods
can report progress; idempotent, a user's own entries winning piece by piece."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given

from shared.defaults import apply_defaults
from shared.progress_pods import inject_progress, status_volume
from shared.validation import validate
from tests.shared.shared_samples import (
    env_names,
    mxnet_of,
    property_settings,
    train_job,
    tune_job,
    valid_jobs,
)

Job = dict[str, Any]
URL = (
    "https://mxjob-controller-progress.mxjob-system.svc:8444"
    "/apis/kubeflow.org/v1/namespaces/default/mxjobs/mnist/status"
)


def injected(job: Job, **options: str) -> Job:
    result = apply_defaults(job)
    inject_progress(result, operator_namespace="mxjob-system", **options)
    return result


def pod_spec(job: Job, replica_type: str) -> Job:
    spec: Job = job["spec"]["mxReplicaSpecs"][replica_type]["template"]["spec"]
    return spec


def env_of(job: Job, replica_type: str) -> dict[str, Any]:
    return {e["name"]: e.get("value") for e in mxnet_of(job, replica_type)["env"]}


def test_every_replica_gets_the_volume_the_mount_and_the_env() -> None:
    job = injected(train_job())
    for replica_type in ("Scheduler", "Server", "Worker"):
        assert pod_spec(job, replica_type)["volumes"] == [status_volume("mnist")]
        assert mxnet_of(job, replica_type)["volumeMounts"] == [
            {
                "name": "mxjob-status",
                "mountPath": "/var/run/secrets/mxjob.kubeflow.org",
                "readOnly": True,
            }
        ]
        env = env_of(job, replica_type)
        assert env["MXJOB_STATUS_URL"] == URL
        assert env["MXJOB_STATUS_CA_CERT"] == "/var/run/secrets/mxjob.kubeflow.org/ca.crt"
        assert env["MXJOB_STATUS_TOKEN"] == "/var/run/secrets/mxjob.kubeflow.org/token"
    names = env_names(mxnet_of(job, "Worker")["env"])
    assert names[-3:] == ["MXJOB_STATUS_URL", "MXJOB_STATUS_CA_CERT", "MXJOB_STATUS_TOKEN"]


def test_the_volume_holds_a_token_for_the_endpoint_and_the_jobs_ca() -> None:
    sources = status_volume("mnist")["projected"]["sources"]
    assert sources[0] == {
        "serviceAccountToken": {
            "audience": "mxjob.kubeflow.org",
            "expirationSeconds": 3600,
            "path": "token",
        }
    }
    assert sources[1] == {
        "configMap": {
            "name": "mnist-status-ca",
            "items": [{"key": "ca.crt", "path": "ca.crt"}],
            "optional": True,
        }
    }


def test_a_tuning_job_and_its_sidecars_get_it_in_the_mxnet_container_only() -> None:
    job = apply_defaults(tune_job())
    sidecar = {"name": "sidecar", "image": "busybox"}
    pod_spec(job, "Tuner")["containers"].append(sidecar)
    inject_progress(job, operator_namespace="ops")
    assert sidecar == {"name": "sidecar", "image": "busybox"}
    for replica_type in ("TunerTracker", "TunerServer", "Tuner"):
        assert "mxjob-controller-progress.ops.svc" in env_of(job, replica_type)["MXJOB_STATUS_URL"]


def test_a_second_pass_changes_nothing() -> None:
    once = injected(train_job())
    twice = copy.deepcopy(once)
    inject_progress(twice, operator_namespace="mxjob-system")
    assert twice == once
    assert apply_defaults(once) == once, "defaulting keeps what admission wrote, in place"


def test_the_requests_namespace_wins_over_an_object_without_one() -> None:
    job = train_job()
    del job["metadata"]["namespace"]
    assert (
        "/namespaces/team-a/"
        in env_of(injected(job, namespace="team-a"), "Worker")["MXJOB_STATUS_URL"]
    )


def test_a_job_whose_namespace_is_unknown_is_left_alone() -> None:
    job = apply_defaults(train_job())
    del job["metadata"]["namespace"]
    before = copy.deepcopy(job)
    inject_progress(job, operator_namespace="mxjob-system")
    assert job == before


def test_the_users_own_env_volume_and_mount_win() -> None:
    job = train_job()
    worker = mxnet_of(job, "Worker")
    worker["env"] = [{"name": "MXJOB_STATUS_URL", "value": "https://proxy.example/status"}]
    worker["volumeMounts"] = [{"name": "mine", "mountPath": "/var/run/secrets/mxjob.kubeflow.org"}]
    pod_spec(job, "Worker")["volumes"] = [{"name": "mine", "emptyDir": {}}]
    pod_spec(job, "Server")["volumes"] = [{"name": "mxjob-status", "emptyDir": {}}]
    result = injected(job)
    env = env_of(result, "Worker")
    assert env["MXJOB_STATUS_URL"] == "https://proxy.example/status"
    assert env_names(mxnet_of(result, "Worker")["env"]).count("MXJOB_STATUS_URL") == 1
    assert env["MXJOB_STATUS_TOKEN"] == "/var/run/secrets/mxjob.kubeflow.org/token"
    assert [m["name"] for m in mxnet_of(result, "Worker")["volumeMounts"]] == ["mine"]
    assert pod_spec(result, "Server")["volumes"] == [{"name": "mxjob-status", "emptyDir": {}}]
    assert [m["name"] for m in mxnet_of(result, "Server")["volumeMounts"]] == ["mxjob-status"]


def test_a_template_whose_lists_are_not_lists_is_left_for_validation() -> None:
    job = apply_defaults(train_job())
    mxnet_of(job, "Worker")["env"] = "not a list"
    before = copy.deepcopy(pod_spec(job, "Worker"))
    inject_progress(job, operator_namespace="mxjob-system")
    assert pod_spec(job, "Worker") == before
    assert pod_spec(job, "Server")["volumes"] == [status_volume("mnist")]


def test_the_templates_share_no_entry() -> None:
    job = injected(train_job())
    worker, server = pod_spec(job, "Worker"), pod_spec(job, "Server")
    assert worker["volumes"][0] is not server["volumes"][0]
    assert mxnet_of(job, "Worker")["env"][-1] is not mxnet_of(job, "Server")["env"][-1]


@property_settings(max_examples=60)
@given(valid_jobs())
def test_a_valid_job_stays_valid_and_a_second_pass_is_a_no_op(job: Job) -> None:
    once = injected(job)
    assert validate(once) == []
    twice = copy.deepcopy(once)
    inject_progress(twice, operator_namespace="mxjob-system")
    assert twice == once
