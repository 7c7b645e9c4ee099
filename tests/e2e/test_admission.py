"""Admission end to end: the API server calls the webhook (gunicorn, TLS, caBundle by ``certs``).

Everything goes through the real ``kubectl`` and kube-apiserver: validation messages, defaults
and env visible in ``kubectl get -o yaml`` (what the pods report progress with included),
v1beta1 ⇄ v1 conversion, printer columns, explain.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from localkube.base.api import Api
from localkube.base.paths import PROJECT_ROOT
from localkube.plane.controlplane import ControlPlane
from localkube.plane.operator import RunningOperator
from tests.e2e.progress_wiring import STATUS_MOUNT, status_env, status_volume
from tests.helpers import mxjobs

EXAMPLES = PROJECT_ROOT / "examples"
SEED_JOB = EXAMPLES / "v1beta1" / "train" / "mx_job_dist_gpu.yaml"
INVALID = sorted((EXAMPLES / "invalid").glob("*.yaml"))


def _env(template: dict[str, Any]) -> dict[str, Any]:
    container = next(c for c in template["spec"]["containers"] if c["name"] == "mxnet")
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def _get(plane: ControlPlane, namespace: str, name: str, *, version: str = "v1") -> dict[str, Any]:
    resource = f"mxjobs.{version}.kubeflow.org/{name}"
    out: dict[str, Any] = json.loads(
        plane.kubectl("get", resource, "-n", namespace, "-o", "json").stdout
    )
    return out


def test_seed_v1beta1_job_applies_and_reads_back_as_defaulted_v1(
    control_plane: ControlPlane, local_operator: RunningOperator, namespace: str
) -> None:
    control_plane.kubectl("apply", "-n", namespace, "-f", str(SEED_JOB))
    job = yaml.safe_load(
        control_plane.kubectl("get", "mxjob", "mxnet-job", "-n", namespace, "-o", "yaml").stdout
    )
    assert job["apiVersion"] == "kubeflow.org/v1"
    spec = job["spec"]
    assert spec["runPolicy"]["cleanPodPolicy"] == "All"
    assert spec["runPolicy"]["backoffLimit"] == 6
    assert spec["runPolicy"]["disruptionPolicy"] == "Ignore"
    assert "cleanPodPolicy" not in spec
    replicas = spec["mxReplicaSpecs"]
    assert set(replicas) == {"Scheduler", "Server", "Worker"}
    for replica_type, replica in replicas.items():
        assert replica["restartPolicy"] == "Never"
        assert replica["restartScope"] == "Job"
        env = _env(replica["template"])
        assert env["DMLC_ROLE"] == replica_type.lower()
        assert env["DMLC_PS_ROOT_URI"] == "mxnet-job-scheduler-0"
        assert env["DMLC_PS_ROOT_PORT"] == "9091"
        assert (env["DMLC_NUM_SERVER"], env["DMLC_NUM_WORKER"]) == ("1", "1")
        assert env["DMLC_USE_KUBERNETES"] == "1"
        config = json.loads(env["MX_CONFIG"].replace("$(MXJOB_REPLICA_INDEX)", "0"))
        assert config["cluster"]["scheduler"] == [{"url": "mxnet-job-scheduler-0", "port": 9091}]
        assert config["task"] == {"type": replica_type.lower(), "index": 0}
        assert env["MXJOB_REPLICA_INDEX"] == {
            "fieldRef": {
                "apiVersion": "v1",
                "fieldPath": "metadata.labels['training.kubeflow.org/replica-index']",
            }
        }
    assert _env(replicas["Worker"]["template"])["DMLC_WORKER_ID"] == "$(MXJOB_REPLICA_INDEX)"
    assert "DMLC_WORKER_ID" not in _env(replicas["Server"]["template"])
    worker = replicas["Worker"]["template"]["spec"]["containers"][0]
    assert worker["resources"]["limits"]["nvidia.com/gpu"] == "1"
    # What every replica's pods report progress with, last, and nothing else of it.
    for replica in replicas.values():
        (container,) = replica["template"]["spec"]["containers"]
        assert container["env"][-3:] == status_env(namespace, "mxnet-job")
        assert [e for e in container["env"] if e["name"].startswith("MXJOB_STATUS_")] == (
            status_env(namespace, "mxnet-job")
        )
        assert container["volumeMounts"] == [STATUS_MOUNT]
        assert replica["template"]["spec"]["volumes"] == [status_volume("mxnet-job")]


def test_a_users_own_progress_entries_win_piece_by_piece_and_ours_fill_the_rest(
    control_plane: ControlPlane, local_operator: RunningOperator, namespace: str
) -> None:
    """A URL of a proxy and a volume of one's own named mxjob-status are kept as written, and
    only the missing pieces are added; an update (a second pass) adds nothing more."""
    proxy = {"name": "MXJOB_STATUS_URL", "value": "https://progress-proxy.example:8443/r"}
    own_volume = {"name": "mxjob-status", "emptyDir": {}}
    mxnet = mxjobs.container(env=[proxy])
    replica = mxjobs.replica(1, containers=[mxnet])
    replica["template"]["spec"]["volumes"] = [own_volume]
    job = mxjobs.mxjob("own-status", mode=None, replicas={"Worker": replica})
    control_plane.kubectl("create", "-n", namespace, "-f", "-", input_text=json.dumps(job))
    control_plane.kubectl("label", "mxjob", "own-status", "-n", namespace, "team=vision")
    suspend = {"spec": {"runPolicy": {"suspend": True}}}  # a spec update: mutated again
    control_plane.kubectl("patch", "mxjob", "own-status", "-n", namespace, "--type=merge",
                          "-p", json.dumps(suspend))  # fmt: skip
    template = _get(control_plane, namespace, "own-status")["spec"]["mxReplicaSpecs"]["Worker"][
        "template"
    ]
    (container,) = template["spec"]["containers"]
    ours = status_env(namespace, "own-status")
    assert [e for e in container["env"] if e["name"].startswith("MXJOB_STATUS_")] == [
        proxy, *ours[1:]
    ]  # fmt: skip
    assert container["volumeMounts"] == [STATUS_MOUNT]
    assert template["spec"]["volumes"] == [own_volume]


@pytest.mark.parametrize("path", INVALID, ids=[p.stem for p in INVALID])
def test_every_invalid_example_is_refused_with_a_message_naming_its_field(
    control_plane: ControlPlane, local_operator: RunningOperator, namespace: str, path: Path
) -> None:
    field = re.search(r"^# The webhook's message names: (\S+)$", path.read_text(), re.M)
    assert field, f"{path} must say which field the message names"
    # kubectl apply needs a name; a generateName-only object can only be created.
    verb = "create" if "generateName" in path.read_text() else "apply"
    result = control_plane.kubectl(verb, "-n", namespace, "-f", str(path), check=False)
    assert result.returncode != 0, f"{path.name} was accepted"
    assert 'admission webhook "mutate.mxjobs.kubeflow.org" denied the request' in result.stderr
    assert field.group(1) in result.stderr, result.stderr
    listed = control_plane.kubectl("get", "mxjobs", "-n", namespace, "-o", "name").stdout
    assert listed.strip() == ""


def test_get_mxjobs_shows_state_mode_restarts_progress_waiting_age_and_wide_eta_from_status(
    control_plane: ControlPlane, local_operator: RunningOperator, api: Api, namespace: str
) -> None:
    control_plane.kubectl("apply", "-n", namespace, "-f", str(SEED_JOB))
    status_path = f"/apis/kubeflow.org/v1/namespaces/{namespace}/mxjobs/mxnet-job/status"
    api.request(
        "PATCH",
        status_path,
        body={
            "status": {
                "state": "Running",
                "conditions": [{"type": "Running", "status": "True", "reason": "MXJobRunning"}],
                "restartCount": 2,
            }
        },
        content_type="application/merge-patch+json",
    )
    header = ["NAME", "STATE", "MODE", "RESTARTS", "PROGRESS", "WAITING", "AGE"]
    table = control_plane.kubectl("get", "mxjobs", "-n", namespace).stdout.splitlines()
    assert table[0].split() == header
    # No report yet and nothing holds the job back: the Progress and Waiting cells are empty,
    # the age follows the restarts.
    assert table[1].split()[:4] == ["mxnet-job", "Running", "MXTrain", "2"]
    assert len(table[1].split()) == 5
    # What the progress endpoint writes (status.trainerStatus): the Progress column, and the
    # ETA of -o wide.
    api.request(
        "PATCH",
        status_path,
        body={"status": {"trainerStatus": {"progressPercentage": 40,
                                           "estimatedRemainingSeconds": 1200}}},
        content_type="application/merge-patch+json",
    )  # fmt: skip
    table = control_plane.kubectl("get", "mxjobs", "-n", namespace).stdout.splitlines()
    assert table[1].split()[:5] == ["mxnet-job", "Running", "MXTrain", "2", "40"]
    assert len(table[1].split()) == 6
    wide = control_plane.kubectl("get", "mxjobs", "-n", namespace, "-o", "wide").stdout
    (wide_header, wide_row) = wide.splitlines()
    assert wide_header.split() == [*header, "ETA"]
    assert wide_row.split()[-1] == "1200"
    api.request(
        "PATCH",
        status_path,
        body={"status": {"state": "Suspended", "conditions": [
            {"type": "Suspended", "status": "True", "reason": "MXJobSuspended"},
            {"type": "Pending", "status": "True", "reason": "WaitingForQuota",
             "message": "insufficient unused quota for cpu in flavor default"},
        ]}},
        content_type="application/merge-patch+json",
    )  # fmt: skip
    table = control_plane.kubectl("get", "mxjobs", "-n", namespace).stdout.splitlines()
    assert table[1].split()[:6] == [
        "mxnet-job", "Suspended", "MXTrain", "2", "40", "WaitingForQuota"
    ]  # fmt: skip
    short = control_plane.kubectl("get", "mxj", "-n", namespace, "-o", "name").stdout
    assert short.strip() == "mxjob.kubeflow.org/mxnet-job"
    category = control_plane.kubectl("get", "kubeflow", "-n", namespace, "-o", "name").stdout
    assert "mxjob.kubeflow.org/mxnet-job" in category


def test_kubectl_explain_reaches_the_pod_template_containers(
    control_plane: ControlPlane, local_operator: RunningOperator
) -> None:
    """`mxReplicaSpecs` is a map (one schema for every replica type): `kubectl explain` steps
    into a map's values without a key, so the path names no replica type."""
    replicas = control_plane.kubectl("explain", "mxjob.spec.mxReplicaSpecs").stdout
    assert "FIELD: mxReplicaSpecs <map[string]Object>" in replicas
    for field in ("replicas", "restartPolicy", "template"):
        assert re.search(rf"^\s+{field}\s+<", replicas, re.M), field
    out = control_plane.kubectl(
        "explain", "mxjob.spec.mxReplicaSpecs.template.spec.containers"
    ).stdout
    assert "FIELD: containers <[]Object>" in out
    for field in ("image", "env", "command", "resources", "ports"):
        assert re.search(rf"^\s+{field}\s+<", out, re.M), field


TUNE_V1BETA1 = mxjobs.mxjob(
    "auto-tune",
    api_version=mxjobs.V1BETA1,
    mode="MXTune",
    replicas={
        "TunerTracker": 1,
        "TunerServer": mxjobs.replica(
            2, label="2080ti", containers=[mxjobs.container(image="mxjob/tvm:gpu")]
        ),
        "Tuner": mxjobs.replica(1, containers=[mxjobs.container(image="mxjob/tvm:cpu")]),
    },
    image="mxjob/tvm:cpu",
    command=["python", "start-job.py"],
    spec={"ttlSecondsAfterFinished": 600, "backoffLimit": 2},
)


def test_v1beta1_object_reads_back_identically_through_v1beta1_after_v1_storage(
    control_plane: ControlPlane, local_operator: RunningOperator, namespace: str
) -> None:
    control_plane.kubectl("create", "-n", namespace, "-f", "-", input_text=json.dumps(TUNE_V1BETA1))
    stored_v1 = _get(control_plane, namespace, "auto-tune", version="v1")
    server = stored_v1["spec"]["mxReplicaSpecs"]["TunerServer"]
    assert server["template"]["metadata"]["annotations"]["tuner-server-key"] == "2080ti"
    assert stored_v1["spec"]["runPolicy"]["ttlSecondsAfterFinished"] == 600
    config = json.loads(
        _env(server["template"])["MX_CONFIG"].replace("$(MXJOB_REPLICA_INDEX)", "1")
    )
    assert config["labels"] == {"tunertracker": "", "tunerserver": "2080ti", "tuner": ""}
    assert config["task"] == {"type": "tunerserver", "index": 1}

    first = _get(control_plane, namespace, "auto-tune", version="v1beta1")
    assert first["apiVersion"] == "kubeflow.org/v1beta1"
    assert first["spec"]["mxReplicaSpecs"]["TunerServer"]["label"] == "2080ti"
    assert first["spec"]["ttlSecondsAfterFinished"] == 600
    assert first["spec"]["backoffLimit"] == 2
    assert "runPolicy" not in first["spec"]
    assert {r["restartScope"] for r in first["spec"]["mxReplicaSpecs"].values()} == {"Replica"}
    # v1beta1 has no place for the defaulted disruptionPolicy: the conversion keeps it here.
    stash = first["metadata"]["annotations"]["mxjob.kubeflow.org/conversion-data"]
    assert json.loads(stash)["runPolicy"] == {"disruptionPolicy": "Ignore"}
    # Writing back what was read through v1beta1 changes nothing: the conversion is lossless.
    control_plane.kubectl("replace", "-n", namespace, "-f", "-", input_text=json.dumps(first))
    second = _get(control_plane, namespace, "auto-tune", version="v1beta1")
    assert second["spec"] == first["spec"]
    assert second["metadata"]["generation"] == first["metadata"]["generation"]
    assert second["metadata"].get("annotations") == first["metadata"].get("annotations")


def test_update_that_scales_workers_recomputes_env_and_job_mode_is_immutable(
    control_plane: ControlPlane, local_operator: RunningOperator, namespace: str
) -> None:
    control_plane.kubectl("apply", "-n", namespace, "-f", str(SEED_JOB))
    control_plane.kubectl(
        "patch",
        "mxjob",
        "mxnet-job",
        "-n",
        namespace,
        "--type=merge",
        "-p",
        json.dumps({"spec": {"runPolicy": {"suspend": True}}}),  # counts change only suspended
    )
    control_plane.kubectl(
        "patch",
        "mxjob",
        "mxnet-job",
        "-n",
        namespace,
        "--type=merge",
        "-p",
        json.dumps({"spec": {"mxReplicaSpecs": {"Worker": {"replicas": 3}}}}),
    )
    job = _get(control_plane, namespace, "mxnet-job")
    for replica in job["spec"]["mxReplicaSpecs"].values():
        assert _env(replica["template"])["DMLC_NUM_WORKER"] == "3"
    result = control_plane.kubectl(
        "patch",
        "mxjob",
        "mxnet-job",
        "-n",
        namespace,
        "--type=merge",
        "-p",
        json.dumps({"spec": {"jobMode": "MXTune"}}),
        check=False,
    )
    assert result.returncode != 0
    assert "spec.jobMode" in result.stderr and "immutable" in result.stderr


def test_lower_case_keys_and_run_policy_under_spec_are_rewritten_canonically(
    control_plane: ControlPlane, local_operator: RunningOperator, namespace: str
) -> None:
    unnamed = mxjobs.container(None, ports=[{"name": "mxjob-port", "containerPort": 9999}])
    sidecar = mxjobs.container("sidecar", image="busybox")
    job = mxjobs.mxjob(
        "single",
        replicas={"worker": mxjobs.replica(None, containers=[unnamed, sidecar])},
        spec={"activeDeadlineSeconds": 3600},
    )
    result = control_plane.kubectl(
        "apply", "-n", namespace, "-f", "-", input_text=json.dumps(job), check=False
    )
    # Two containers and none named mxnet: refused with the reason.
    assert result.returncode != 0 and "mxnet" in result.stderr
    job["spec"]["mxReplicaSpecs"]["worker"]["template"]["spec"]["containers"].pop()
    control_plane.kubectl("apply", "-n", namespace, "-f", "-", input_text=json.dumps(job))
    stored = _get(control_plane, namespace, "single")
    assert list(stored["spec"]["mxReplicaSpecs"]) == ["Worker"]
    assert stored["spec"]["runPolicy"]["activeDeadlineSeconds"] == 3600
    assert "activeDeadlineSeconds" not in stored["spec"]
    worker = stored["spec"]["mxReplicaSpecs"]["Worker"]
    container = worker["template"]["spec"]["containers"][0]
    assert container["name"] == "mxnet"
    # The CRD defaults a port's protocol as the API server does for a Pod's (hack/gen_crd.py).
    assert container["ports"] == [{"name": "mxjob-port", "containerPort": 9999, "protocol": "TCP"}]
    config = json.loads(
        _env(worker["template"])["MX_CONFIG"].replace("$(MXJOB_REPLICA_INDEX)", "0")
    )
    assert config["cluster"] == {"worker": [{"url": "single-worker-0", "port": 9999}]}


@pytest.mark.parametrize("job_mode", ["", None], ids=["empty", "absent"])
def test_a_job_with_an_empty_or_absent_job_mode_is_stored_as_mxtrain(
    control_plane: ControlPlane,
    local_operator: RunningOperator,
    namespace: str,
    job_mode: str | None,
) -> None:
    """What training-operator's SDK sends ("") and what its CRD allowed (no jobMode)."""
    name = f"mode-{'empty' if job_mode == '' else 'absent'}"
    job = mxjobs.mxjob(name, mode=job_mode, replicas={"Worker": 1}, image="mxjob/mxnet")
    control_plane.kubectl("create", "-n", namespace, "-f", "-", input_text=json.dumps(job))
    stored = _get(control_plane, namespace, name)
    assert stored["spec"]["jobMode"] == "MXTrain"
    env = _env(stored["spec"]["mxReplicaSpecs"]["Worker"]["template"])
    # A single-node job: no Scheduler, so no address that points at a Service never created.
    assert (env["DMLC_PS_ROOT_URI"], env["DMLC_PS_ROOT_PORT"]) == ("", "0")
    assert _get(control_plane, namespace, name, version="v1beta1")["spec"]["jobMode"] == "MXTrain"


def _update_calls(plane: ControlPlane) -> dict[str, int]:
    """UPDATE reviews the API server has sent to each of our webhooks, from its own metrics."""
    calls = {"mutate": 0, "validate": 0}
    for line in plane.kubectl("get", "--raw", "/metrics").stdout.splitlines():
        if not line.startswith("apiserver_admission_webhook_request_total{"):
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', line.split("}", 1)[0]))
        kind = labels.get("name", "").removesuffix(".mxjobs.kubeflow.org")
        if kind in calls and labels.get("operation") == "UPDATE":
            calls[kind] += int(float(line.rsplit(" ", 1)[1]))
    return calls


def test_metadata_only_updates_skip_both_webhooks_and_spec_updates_reach_both(
    control_plane: ControlPlane, local_operator: RunningOperator, namespace: str
) -> None:
    control_plane.kubectl("apply", "-n", namespace, "-f", str(SEED_JOB))
    before = _update_calls(control_plane)
    control_plane.kubectl("label", "mxjob", "mxnet-job", "-n", namespace, "team=vision")
    control_plane.kubectl("annotate", "mxjob", "mxnet-job", "-n", namespace, "owner=alice")
    finalizer = {"metadata": {"finalizers": ["example.com/hold"]}}
    control_plane.kubectl(
        "patch", "mxjob", "mxnet-job", "-n", namespace, "--type=merge", "-p", json.dumps(finalizer)
    )
    # Three UPDATEs that leave spec alone: matchConditions keep them from both webhooks.
    assert _update_calls(control_plane) == before
    job = _get(control_plane, namespace, "mxnet-job")
    assert job["metadata"]["labels"]["team"] == "vision"
    assert job["metadata"]["finalizers"] == ["example.com/hold"]
    suspend = {"metadata": {"finalizers": None}, "spec": {"runPolicy": {"suspend": True}}}
    control_plane.kubectl(
        "patch", "mxjob", "mxnet-job", "-n", namespace, "--type=merge", "-p", json.dumps(suspend)
    )
    after = _update_calls(control_plane)
    assert after == {"mutate": before["mutate"] + 1, "validate": before["validate"] + 1}
    # The spec update was judged as ever: an immutable field still cannot change.
    result = control_plane.kubectl(
        "patch", "mxjob", "mxnet-job", "-n", namespace, "--type=merge",
        "-p", json.dumps({"metadata": {"labels": {"team": "x"}}, "spec": {"jobMode": "MXTune"}}),
        check=False,
    )  # fmt: skip
    assert result.returncode != 0 and "immutable" in result.stderr
