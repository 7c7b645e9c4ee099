"""Admission decisions (pure): what mutate and validate answer for each kind of request."""

from __future__ import annotations

import copy
from typing import Any, cast

import jsonpatch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared.conversion import convert
from shared.defaults import apply_defaults
from shared.validation import validate as shared_validate
from tests.helpers import mxjobs
from tests.webhook.reviews_samples import admission_review, decode_patch
from webhook.admission import make_patch, mutate, validate
from webhook.reviews import AdmissionRequest, AdmissionResponse, Operation

Job = dict[str, Any]


def _request(
    obj: Job | None,
    *,
    operation: Operation = "CREATE",
    old: Job | None = None,
    uid: str = "uid-1",
    sub_resource: str | None = None,
) -> AdmissionRequest:
    review = admission_review(obj, operation=operation, old=old, uid=uid, sub_resource=sub_resource)
    return cast(AdmissionRequest, review["request"])


def _patched(obj: Job, response: AdmissionResponse) -> Job:
    result: Job = jsonpatch.apply_patch(obj, decode_patch(response))
    return result


def _env(job: Job, replica_type: str) -> dict[str, Any]:
    template = job["spec"]["mxReplicaSpecs"][replica_type]["template"]
    container = next(c for c in template["spec"]["containers"] if c.get("name") == "mxnet")
    return {entry["name"]: entry.get("value", entry.get("valueFrom")) for entry in container["env"]}


def _message(response: AdmissionResponse) -> str:
    assert response["allowed"] is False
    status = response.get("status")
    assert status is not None
    return status.get("message", "")


# --- mutate -----------------------------------------------------------------------------------


def test_mutate_patches_the_seed_job_to_its_defaults(seed_job: Job) -> None:
    response = mutate(_request(seed_job))
    assert response["allowed"] is True
    assert response.get("patchType") == "JSONPatch"
    patched = _patched(seed_job, response)
    assert patched == apply_defaults(seed_job)
    scheduler = _env(patched, "Scheduler")
    assert scheduler["DMLC_ROLE"] == "scheduler"
    assert scheduler["DMLC_NUM_SERVER"] == "1"
    assert scheduler["DMLC_NUM_WORKER"] == "1"
    assert scheduler["DMLC_USE_KUBERNETES"] == "1"
    assert "DMLC_WORKER_ID" in _env(patched, "Worker")
    assert patched["spec"]["runPolicy"] == {
        "cleanPodPolicy": "All",
        "backoffLimit": 6,
        "disruptionPolicy": "Ignore",
    }
    for replica in patched["spec"]["mxReplicaSpecs"].values():
        assert replica["restartScope"] == "Job"


def test_mutate_is_idempotent(seed_job: Job, tune_job: Job) -> None:
    for job in (seed_job, tune_job):
        patched = _patched(job, mutate(_request(job)))
        again = mutate(_request(patched, uid="second"))
        assert again == {"uid": "second", "allowed": True}


def test_with_progress_every_replica_reports_and_a_second_pass_adds_nothing(
    seed_job: Job, tune_job: Job
) -> None:
    for job in (seed_job, tune_job):
        patched = _patched(job, mutate(_request(job), progress_namespace="ops"))
        for replica_type in patched["spec"]["mxReplicaSpecs"]:
            url = str(_env(patched, replica_type)["MXJOB_STATUS_URL"])
            assert url.startswith("https://mxjob-controller-progress.ops.svc:8444/apis/")
        assert validate(_request(patched))["allowed"] is True
        again = mutate(_request(patched, uid="second"), progress_namespace="ops")
        assert again == {"uid": "second", "allowed": True}


def test_without_progress_nothing_of_it_is_written(seed_job: Job) -> None:
    patched = _patched(seed_job, mutate(_request(seed_job)))
    assert "MXJOB_STATUS_URL" not in _env(patched, "Worker")


def test_mutate_stores_the_restart_scope_of_each_mode_and_the_disruption_policy(
    seed_job: Job, tune_job: Job
) -> None:
    for found, scope in ((seed_job, "Job"), (tune_job, "Replica")):
        patched = _patched(found, mutate(_request(found)))
        scopes = {t: r["restartScope"] for t, r in patched["spec"]["mxReplicaSpecs"].items()}
        assert scopes == dict.fromkeys(found["spec"]["mxReplicaSpecs"], scope)
        assert patched["spec"]["runPolicy"]["disruptionPolicy"] == "Ignore"


def test_an_update_of_a_job_stored_before_the_new_defaults_adds_them(seed_job: Job) -> None:
    """A job stored without restartScope and disruptionPolicy (by an older webhook) gets them
    at its next spec update, and the update is allowed."""
    stored = apply_defaults(seed_job)
    for replica in stored["spec"]["mxReplicaSpecs"].values():
        del replica["restartScope"]
    del stored["spec"]["runPolicy"]["disruptionPolicy"]
    update = copy.deepcopy(stored)
    update["spec"]["runPolicy"]["ttlSecondsAfterFinished"] = 60
    response = mutate(_request(update, operation="UPDATE", old=stored))
    patch = decode_patch(response)
    assert sorted(op["path"] for op in patch) == [
        "/spec/mxReplicaSpecs/Scheduler/restartScope",
        "/spec/mxReplicaSpecs/Server/restartScope",
        "/spec/mxReplicaSpecs/Worker/restartScope",
        "/spec/runPolicy/disruptionPolicy",
    ]
    assert {op["op"] for op in patch} == {"add"}
    patched = _patched(update, response)
    assert validate(_request(patched, operation="UPDATE", old=stored))["allowed"] is True


def test_mutate_injects_mx_config_with_the_tuner_server_key(tune_job: Job) -> None:
    patched = _patched(tune_job, mutate(_request(tune_job)))
    mx_config = _env(patched, "TunerServer")["MX_CONFIG"]
    assert '"labels":{"tunertracker":"","tunerserver":"2080ti","tuner":""}' in mx_config
    assert "DMLC_ROLE" not in _env(patched, "Tuner")  # MXTune jobs get MX_CONFIG only


def test_mutate_writes_what_defaulting_normalises(seed_job: Job) -> None:
    # A user's spelling that the contract accepts: lower-case keys, run policy under spec, a
    # sole unnamed container. The check before defaulting must not refuse any of it.
    job = copy.deepcopy(seed_job)
    specs = job["spec"]["mxReplicaSpecs"]
    specs["worker"] = specs.pop("Worker")
    del specs["worker"]["template"]["spec"]["containers"][0]["name"]
    job["spec"]["ttlSecondsAfterFinished"] = 600
    response = mutate(_request(job))
    assert response["allowed"] is True, response
    patched = _patched(job, response)
    assert "Worker" in patched["spec"]["mxReplicaSpecs"]
    assert "worker" not in patched["spec"]["mxReplicaSpecs"]
    assert patched["spec"]["runPolicy"]["ttlSecondsAfterFinished"] == 600
    assert "ttlSecondsAfterFinished" not in patched["spec"]
    worker = patched["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    assert worker["name"] == "mxnet"


def test_mutate_denies_owned_env_that_defaulting_would_overwrite(seed_job: Job) -> None:
    container = seed_job["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    container["env"] = [{"name": "DMLC_ROLE", "value": "server"}]
    # Defaulting alone would hide the user's value: the defaulted job is valid.
    assert shared_validate(apply_defaults(seed_job)) == []
    response = mutate(_request(seed_job))
    message = _message(response)
    assert "spec.mxReplicaSpecs.Worker.template.spec.containers[0].env[0]" in message
    assert "DMLC_ROLE" in message
    assert "patch" not in response


def _tune_container(job: Job, replica_type: str) -> dict[str, Any]:
    template = job["spec"]["mxReplicaSpecs"][replica_type]["template"]
    container: dict[str, Any] = template["spec"]["containers"][0]
    return container


def test_mutate_gives_each_tune_replica_the_tracker_env_tvm_reads(tune_job: Job) -> None:
    patched = _patched(tune_job, mutate(_request(tune_job)))
    tracker = {"TVM_TRACKER_HOST": "auto-tuning-job-tunertracker-0", "TVM_TRACKER_PORT": "9091"}
    for replica_type in ("TunerServer", "Tuner"):
        env = _env(patched, replica_type)
        assert {k: v for k, v in env.items() if k.startswith("TVM_")} == {
            **tracker,
            "TVM_TRACKER_KEY": "2080ti",
        }
    env = _env(patched, "TunerTracker")
    assert {k: v for k, v in env.items() if k.startswith("TVM_")} == tracker
    assert validate(_request(patched, uid="v")) == {"uid": "v", "allowed": True}


def test_a_users_tracker_address_elsewhere_is_denied_naming_the_operators(tune_job: Job) -> None:
    _tune_container(tune_job, "Tuner")["env"] = [{"name": "TVM_TRACKER_HOST", "value": "other"}]
    message = _message(mutate(_request(tune_job)))
    assert "spec.mxReplicaSpecs.Tuner.template.spec.containers[0].env[0]" in message
    assert "TVM_TRACKER_HOST is set by the operator" in message
    assert 'set it to "auto-tuning-job-tunertracker-0" (got "other")' in message


def test_a_users_tracker_env_equal_to_the_operators_is_accepted(tune_job: Job) -> None:
    _tune_container(tune_job, "TunerServer")["env"] = [
        {"name": "TVM_TRACKER_KEY", "value": "2080ti"},
        {"name": "TVM_TRACKER_PORT", "value": "9091"},
    ]
    response = mutate(_request(tune_job))
    assert response["allowed"] is True, response
    assert _env(_patched(tune_job, response), "TunerServer")["TVM_TRACKER_KEY"] == "2080ti"


def test_a_tracker_key_on_the_tracker_or_a_train_replica_is_reserved(
    tune_job: Job, seed_job: Job
) -> None:
    key = {"name": "TVM_TRACKER_KEY", "value": "2080ti"}
    _tune_container(tune_job, "TunerTracker")["env"] = [key]
    message = _message(mutate(_request(tune_job)))
    assert "TVM_TRACKER_KEY is reserved for the operator" in message
    assert "TunerTracker in MXTune mode" in message
    seed_job["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["env"] = [key]
    assert "Worker in MXTrain mode" in _message(mutate(_request(seed_job)))


def test_mutate_and_validate_deny_with_every_violation(seed_job: Job) -> None:
    seed_job["metadata"]["name"] = "Not_A_DNS_Label"
    seed_job["spec"]["mxReplicaSpecs"]["Scheduler"]["replicas"] = 3
    seed_job["spec"]["mxReplicaSpecs"]["Server"]["restartPolicy"] = "Sometimes"
    seed_job["spec"]["mxReplicaSpecs"]["Tuner"] = seed_job["spec"]["mxReplicaSpecs"]["Server"]
    for decide in (mutate, validate):
        response = decide(_request(seed_job, uid="deny"))
        assert response["uid"] == "deny"
        assert response.get("status", {}).get("code") == 422
        message = _message(response)
        for path in (
            "metadata.name",
            "spec.mxReplicaSpecs.Scheduler.replicas",
            "spec.mxReplicaSpecs.Server.restartPolicy",
            "spec.mxReplicaSpecs.Tuner",
        ):
            assert path in message, (path, message)


def test_scaling_a_running_job_is_refused_by_both_webhooks(seed_job: Job) -> None:
    stored = _patched(seed_job, mutate(_request(seed_job)))
    scaled = copy.deepcopy(stored)
    scaled["spec"]["mxReplicaSpecs"]["Worker"]["replicas"] = 3
    for review in (mutate, validate):
        response = review(_request(scaled, operation="UPDATE", old=stored))
        assert response["allowed"] is False
        message = response["status"]["message"]
        assert "spec.mxReplicaSpecs.Worker.replicas: cannot change from 1 to 3" in message
        assert "suspend" in message


def test_an_update_that_scales_workers_recomputes_the_counts(seed_job: Job) -> None:
    stored = _patched(seed_job, mutate(_request(seed_job)))
    stored["spec"]["runPolicy"]["suspend"] = True  # counts change only while suspended
    scaled = copy.deepcopy(stored)
    scaled["spec"]["mxReplicaSpecs"]["Worker"]["replicas"] = 3  # the env still says 1
    response = mutate(_request(scaled, operation="UPDATE", old=stored))
    assert response["allowed"] is True, response
    patched = _patched(scaled, response)
    for replica_type in ("Scheduler", "Server", "Worker"):
        assert _env(patched, replica_type)["DMLC_NUM_WORKER"] == "3"
    final = validate(_request(patched, operation="UPDATE", old=stored, uid="v"))
    assert final == {"uid": "v", "allowed": True}


def test_stale_owned_env_is_only_accepted_on_an_update(seed_job: Job) -> None:
    stored = _patched(seed_job, mutate(_request(seed_job)))
    scaled = copy.deepcopy(stored)
    scaled["spec"]["mxReplicaSpecs"]["Worker"]["replicas"] = 3
    # The same object as a CREATE carries env the operator would not set: refused.
    assert mutate(_request(scaled))["allowed"] is False


def test_job_mode_cannot_change_on_update(seed_job: Job, tune_job: Job) -> None:
    stored = _patched(seed_job, mutate(_request(seed_job)))
    changed = copy.deepcopy(tune_job)
    changed["metadata"] = copy.deepcopy(stored["metadata"])
    for decide in (mutate, validate):
        message = _message(decide(_request(changed, operation="UPDATE", old=stored)))
        assert "spec.jobMode" in message


# --- Kueue's Workload route (--kueue-workloads) ------------------------------------------------

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
MULTIKUEUE = "kueue.x-k8s.io/multikueue"


def _queued(job: Job, queue: str = "team-a") -> Job:
    queued = copy.deepcopy(job)
    queued["metadata"]["labels"] = {QUEUE_LABEL: queue}
    return queued


def _suspend_of(job: Job, response: AdmissionResponse) -> object:
    assert response["allowed"] is True, response
    return _patched(job, response)["spec"]["runPolicy"].get("suspend")


def test_a_queued_job_is_created_suspended_on_the_workload_route(seed_job: Job) -> None:
    queued = _queued(seed_job)
    assert _suspend_of(queued, mutate(_request(queued), kueue_workloads=True)) is True


def test_only_a_queued_create_on_the_workload_route_is_suspended(seed_job: Job) -> None:
    queued = _queued(seed_job)
    assert _suspend_of(queued, mutate(_request(queued))) is None  # the flag is off
    assert _suspend_of(seed_job, mutate(_request(seed_job), kueue_workloads=True)) is None
    stored = _patched(queued, mutate(_request(queued)))  # created before the flag: running
    update = mutate(_request(stored, operation="UPDATE", old=stored), kueue_workloads=True)
    assert _suspend_of(stored, update) is None


def test_a_volcano_queue_on_a_kueue_queued_job_is_refused(seed_job: Job) -> None:
    queued = _queued(seed_job)
    queued["spec"]["runPolicy"]["schedulingPolicy"] = {"queue": "volcano-q"}
    for decide in (mutate, validate):
        message = _message(decide(_request(queued), kueue_workloads=True))
        assert "spec.runPolicy.schedulingPolicy.queue" in message
        assert decide(_request(queued))["allowed"] is True  # the flag is off


def test_the_queue_of_a_running_job_cannot_change(seed_job: Job) -> None:
    stored = _patched(_queued(seed_job), mutate(_request(_queued(seed_job))))
    moved = copy.deepcopy(stored)
    moved["metadata"]["labels"][QUEUE_LABEL] = "team-b"
    for decide in (mutate, validate):
        message = _message(
            decide(_request(moved, operation="UPDATE", old=stored), kueue_workloads=True)
        )
        assert f"metadata.labels[{QUEUE_LABEL}]" in message
    stored["spec"]["runPolicy"]["suspend"] = True
    moved["spec"]["runPolicy"]["suspend"] = True
    response = validate(_request(moved, operation="UPDATE", old=stored), kueue_workloads=True)
    assert response["allowed"] is True


def test_the_manager_cannot_change_on_update_in_either_place(seed_job: Job) -> None:
    stored = _patched(seed_job, mutate(_request(seed_job)))
    for where in ("spec", "runPolicy"):
        changed = copy.deepcopy(stored)
        target = changed["spec"] if where == "spec" else changed["spec"]["runPolicy"]
        target["managedBy"] = "example.com/other"
        for decide in (mutate, validate):
            message = _message(decide(_request(changed, operation="UPDATE", old=stored)))
            assert "managedBy: is immutable" in message, (where, message)


def test_multikueue_moving_from_run_policy_to_spec_is_not_a_manager_change(seed_job: Job) -> None:
    old = copy.deepcopy(seed_job)
    old["spec"]["runPolicy"]["managedBy"] = MULTIKUEUE  # as stored before defaulting moved it
    new = copy.deepcopy(seed_job)
    new["spec"]["managedBy"] = MULTIKUEUE
    for decide in (mutate, validate):
        assert decide(_request(new, operation="UPDATE", old=old))["allowed"] is True


def test_delete_connect_and_status_updates_are_allowed_untouched(seed_job: Job) -> None:
    garbage: Job = {"apiVersion": "v1", "kind": "Pod", "spec": "nonsense"}
    requests = [
        _request(None, operation="DELETE", old=garbage),
        _request(garbage, operation="CONNECT"),
        _request(garbage, operation="UPDATE", old=garbage, sub_resource="status"),
    ]
    for request in requests:
        for decide in (mutate, validate):
            assert decide(request) == {"uid": "uid-1", "allowed": True}


def test_objects_other_than_an_mxjob_are_refused_as_bad_requests() -> None:
    pod: Job = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}
    for decide in (mutate, validate):
        response = decide(_request(pod))
        assert response["allowed"] is False
        assert response.get("status", {}).get("code") == 400
        assert "MXJob" in _message(response)


def test_a_v1beta1_object_is_judged_as_v1_and_patched_in_its_own_version(
    seed_v1beta1: Job,
) -> None:
    response = mutate(_request(seed_v1beta1))
    assert response["allowed"] is True, response
    patched = _patched(seed_v1beta1, response)
    assert patched["apiVersion"] == "kubeflow.org/v1beta1"
    assert "runPolicy" not in patched["spec"]  # v1beta1 keeps run policy under spec
    assert {r["restartScope"] for r in patched["spec"]["mxReplicaSpecs"].values()} == {"Job"}
    assert convert(patched, "v1") == apply_defaults(convert(seed_v1beta1, "v1"))
    assert validate(_request(patched))["allowed"] is True


# --- properties over generated jobs -----------------------------------------------------------

_BREAKAGES = (
    "bad-name",
    "second-scheduler",
    "foreign-type",
    "no-image",
    "no-mxnet",
    "owned-env",
    "bad-restart",
    "negative-backoff",
    "bad-mode",
    "string-replicas",
)


@st.composite
def _jobs(draw: st.DrawFn) -> Job:
    """Valid MXJobs in the spellings the contract accepts, some with one or two rules broken."""
    mode = draw(st.sampled_from(["MXTrain", "MXTune"]))
    if mode == "MXTrain":
        single = draw(st.integers(0, 4)) == 0
        counts = (
            {"Worker": 1}
            if single
            else {
                "Scheduler": 1,
                "Server": draw(st.integers(0, 3)),
                "Worker": draw(st.integers(0, 4)),
            }
        )
    else:
        counts = {"TunerTracker": 1, "TunerServer": draw(st.integers(1, 3)), "Tuner": 1}
    replica_specs: Job = {}
    for canonical, count in counts.items():
        key = draw(st.sampled_from([canonical, canonical, canonical.lower()]))
        container: Job = {"image": "mxjob/mxnet:gpu"}
        if draw(st.integers(0, 3)):  # a sole unnamed container becomes mxnet
            container["name"] = "mxnet"
        if draw(st.integers(0, 3)) == 0:
            port = draw(st.integers(1024, 65535))
            container["ports"] = [{"name": "mxjob-port", "containerPort": port}]
        rspec: Job = {"template": {"spec": {"containers": [container]}}}
        if count != 1 or draw(st.booleans()):
            rspec["replicas"] = count
        policy = draw(st.sampled_from([None, "Never", "ExitCode", "OnFailure", "Always"]))
        if policy is not None:
            rspec["restartPolicy"] = policy
        if canonical == "TunerServer" and draw(st.booleans()):
            rspec["template"]["metadata"] = {"annotations": {"tuner-server-key": "gpu"}}
        replica_specs[key] = rspec
    spec: Job = {"jobMode": mode, "mxReplicaSpecs": replica_specs}
    for field, values in (
        ("cleanPodPolicy", ["All", "Running", "None"]),
        ("backoffLimit", [0, 3]),
        ("activeDeadlineSeconds", [60]),
    ):
        if draw(st.integers(0, 2)) == 0:
            where = spec if draw(st.booleans()) else spec.setdefault("runPolicy", {})
            where[field] = draw(st.sampled_from(values))
    job: Job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "MXJob",
        "metadata": {"name": draw(st.sampled_from(["job", "mxnet-job"])), "namespace": "ns"},
        "spec": spec,
    }
    for breakage in draw(st.lists(st.sampled_from(_BREAKAGES), max_size=2)):
        _break(job, breakage, draw)
    return job


def _break(job: Job, breakage: str, draw: st.DrawFn) -> None:
    spec = job["spec"]
    specs = spec["mxReplicaSpecs"]
    key = draw(st.sampled_from(sorted(specs)))
    container = specs[key]["template"]["spec"]["containers"][0]
    if breakage == "bad-name":
        job["metadata"]["name"] = draw(st.sampled_from(["Bad_Name", "a" * 70, "9job"]))
    elif breakage == "second-scheduler":
        specs["Scheduler"] = {"replicas": 2, "template": copy.deepcopy(specs[key]["template"])}
    elif breakage == "foreign-type":
        other = "Tuner" if spec["jobMode"] == "MXTrain" else "Server"
        specs[draw(st.sampled_from([other, "Chief"]))] = copy.deepcopy(specs[key])
    elif breakage == "no-image":
        container.pop("image", None)
    elif breakage == "no-mxnet":
        container["name"] = "main"
    elif breakage == "owned-env":
        container["env"] = [{"name": "DMLC_NUM_WORKER", "value": "99"}]
    elif breakage == "bad-restart":
        specs[key]["restartPolicy"] = "Sometimes"
    elif breakage == "negative-backoff":
        spec.setdefault("runPolicy", {})["backoffLimit"] = -1
    elif breakage == "bad-mode":
        spec["jobMode"] = "MXServe"
    elif breakage == "string-replicas":
        specs[key]["replicas"] = "2"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_jobs(), st.sampled_from([None, "mxjob-system"]))
def test_what_mutation_allows_validation_allows_and_a_second_pass_keeps(
    job: Job, progress: str | None
) -> None:
    response = mutate(_request(job), progress_namespace=progress)
    assert response["uid"] == "uid-1"
    if not response["allowed"]:
        assert _message(response)
        assert validate(_request(job))["allowed"] is False
        return
    patched = _patched(job, response)
    assert validate(_request(patched))["allowed"] is True
    again = mutate(_request(patched), progress_namespace=progress)
    assert again == {"uid": "uid-1", "allowed": True}


# --- make_patch ---------------------------------------------------------------------------------

_json_trees = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(["a", "b", "c/d", "e~f", ""]), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(source=st.dictionaries(st.text(max_size=3), _json_trees, max_size=4), data=st.data())
def test_a_patch_turns_the_source_into_the_target(source: Job, data: st.DataObject) -> None:
    target = data.draw(
        st.one_of(
            st.just(copy.deepcopy(source)),
            st.dictionaries(st.text(max_size=3), _json_trees, max_size=4),
            st.builds(
                lambda extra: {**copy.deepcopy(source), **extra},
                st.dictionaries(st.sampled_from(list(source) or ["x"]), _json_trees, max_size=2),
            ),
        )
    )
    patch = make_patch(source, target)
    assert jsonpatch.apply_patch(source, patch) == target
    if source == target:
        assert patch == []


def test_a_defaulted_sidecar_job_patches_only_the_mxnet_container() -> None:
    sidecar = mxjobs.container("log-shipper", image="shipper:1")
    scheduler = mxjobs.replica(None, containers=[sidecar, mxjobs.container(image="mxnet:1")])
    job = mxjobs.mxjob("sidecars", replicas={"Scheduler": scheduler})
    defaulted = apply_defaults(job)
    patch = make_patch(job, defaulted)
    assert jsonpatch.apply_patch(job, patch) == defaulted
    containers = "/spec/mxReplicaSpecs/Scheduler/template/spec/containers"
    touched = {op["path"] for op in patch if op["path"].startswith(containers)}
    assert touched == {f"{containers}/1/ports", f"{containers}/1/env"}


def test_a_list_that_changes_length_is_replaced_whole() -> None:
    patch = make_patch({"env": [{"name": "A"}]}, {"env": [{"name": "B"}, {"name": "A"}]})
    assert patch == [{"op": "replace", "path": "/env", "value": [{"name": "B"}, {"name": "A"}]}]


def test_keys_are_escaped_as_json_pointer_tokens() -> None:
    patch = make_patch({"a/b": 1, "c~d": 1}, {"a/b": 2, "c~d": 2})
    assert [op["path"] for op in patch] == ["/a~1b", "/c~0d"]
