"""shared/defaults.py: every default, the env injection, idempotence, and malformed input."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given

from shared.conversion import convert
from shared.defaults import apply_defaults
from shared.env import replica_env, resolve_env
from shared.validation import validate
from tests.helpers.mxjobs import container, replica
from tests.shared.shared_samples import (
    env_names,
    job,
    json_objects,
    mutated_jobs,
    mxnet_of,
    property_settings,
    seed_applied,
    single_node_job,
    train_job,
    tune_job,
    valid_jobs,
)

Job = dict[str, Any]

INJECTED_WORKER = [
    "MXJOB_REPLICA_INDEX",
    "DMLC_ROLE",
    "DMLC_PS_ROOT_URI",
    "DMLC_PS_ROOT_PORT",
    "DMLC_NUM_SERVER",
    "DMLC_NUM_WORKER",
    "DMLC_USE_KUBERNETES",
    "DMLC_WORKER_ID",
    "MX_CONFIG",
]


def replicas_of(found: Job) -> dict[str, Job]:
    result: dict[str, Job] = found["spec"]["mxReplicaSpecs"]
    return result


# --- a new object, idempotently ---------------------------------------------------------------


def test_apply_defaults_returns_a_new_object_and_leaves_the_input_alone() -> None:
    found = train_job()
    before = copy.deepcopy(found)
    defaulted = apply_defaults(found)
    assert found == before
    assert defaulted is not found
    mxnet_of(defaulted, "Worker")["env"].clear()
    assert found == before  # nothing is shared with the input


@pytest.mark.parametrize(
    "found", [train_job(), tune_job(), single_node_job(), train_job(backoffLimit=2, suspend=True)]
)
def test_applying_defaults_twice_changes_nothing(found: Job) -> None:
    once = apply_defaults(found)
    assert apply_defaults(once) == once


@property_settings(200)
@given(valid_jobs())
def test_defaulting_generated_jobs_is_idempotent(found: Job) -> None:
    once = apply_defaults(found)
    assert apply_defaults(once) == once


@property_settings(300)
@given(json_objects())
def test_apply_defaults_never_raises_on_arbitrary_json_objects(found: Job) -> None:
    before = copy.deepcopy(found)
    once = apply_defaults(found)
    assert found == before
    assert apply_defaults(once) == once


@property_settings(300)
@given(mutated_jobs())
def test_apply_defaults_never_raises_on_jobs_with_one_field_mangled(found: Job) -> None:
    once = apply_defaults(found)
    assert apply_defaults(once) == once


@property_settings(200)
@given(valid_jobs())
def test_every_defaulted_job_shows_its_restart_scopes_and_disruption_policy(found: Job) -> None:
    defaulted = apply_defaults(found)
    assert all(r["restartScope"] in ("Job", "Replica") for r in replicas_of(defaulted).values())
    assert defaulted["spec"]["runPolicy"]["disruptionPolicy"] in ("Ignore", "Count")


def test_apply_defaults_refuses_what_is_not_an_object() -> None:
    with pytest.raises(TypeError, match="JSON object"):
        apply_defaults([])  # type: ignore[arg-type]


def test_a_job_without_a_spec_object_is_returned_unchanged() -> None:
    assert apply_defaults({"metadata": {"name": "x"}}) == {"metadata": {"name": "x"}}
    assert apply_defaults({"spec": "x"}) == {"spec": "x"}


# --- replica keys ------------------------------------------------------------------------------


def test_replica_keys_are_rewritten_canonically_in_order() -> None:
    found = job("j", "MXTrain", {"worker": replica(2), "SCHEDULER": replica(), "sErVeR": replica()})
    assert list(replicas_of(apply_defaults(found))) == ["Worker", "Scheduler", "Server"]


def test_a_duplicated_type_keeps_its_second_spelling_for_validation_to_report() -> None:
    found = job(
        "j", "MXTrain", {"Scheduler": replica(), "worker": replica(1), "Worker": replica(2)}
    )
    defaulted = apply_defaults(found)
    assert list(replicas_of(defaulted)) == ["Scheduler", "worker", "Worker"]
    assert "env" not in mxnet_of(defaulted, "worker")  # only the canonical one is injected
    assert [v.path for v in validate(defaulted)] == ["spec.mxReplicaSpecs.worker"]


def test_unknown_replica_keys_are_left_as_written() -> None:
    found = train_job()
    replicas_of(found)["Chief"] = replica()
    defaulted = apply_defaults(found)
    assert "Chief" in replicas_of(defaulted)
    assert "env" not in mxnet_of(defaulted, "Chief")


# --- run policy --------------------------------------------------------------------------------


RUN_POLICY_DEFAULTS = {"cleanPodPolicy": "Running", "backoffLimit": 6, "disruptionPolicy": "Ignore"}


@pytest.mark.parametrize("found", [train_job(), single_node_job(), tune_job()])
def test_run_policy_defaults_are_clean_running_backoff_six_and_disruptions_ignored(
    found: Job,
) -> None:
    assert apply_defaults(found)["spec"]["runPolicy"] == RUN_POLICY_DEFAULTS


def test_deadline_and_ttl_stay_unset() -> None:
    policy = apply_defaults(train_job())["spec"]["runPolicy"]
    assert "activeDeadlineSeconds" not in policy
    assert "ttlSecondsAfterFinished" not in policy
    assert "suspend" not in policy


def test_set_run_policy_values_are_kept() -> None:
    policy = {
        "cleanPodPolicy": "None",
        "backoffLimit": 0,
        "activeDeadlineSeconds": 30,
        "disruptionPolicy": "Count",
    }
    assert apply_defaults(train_job(runPolicy=policy))["spec"]["runPolicy"] == policy


def test_null_run_policy_values_are_defaulted() -> None:
    policy = {"cleanPodPolicy": None, "backoffLimit": None, "disruptionPolicy": None}
    defaulted = apply_defaults(train_job(runPolicy=policy))
    assert defaulted["spec"]["runPolicy"] == RUN_POLICY_DEFAULTS
    empty = apply_defaults(train_job(runPolicy={"disruptionPolicy": ""}))
    assert empty["spec"]["runPolicy"] == RUN_POLICY_DEFAULTS


def test_a_malformed_disruption_policy_is_left_for_validation() -> None:
    defaulted = apply_defaults(train_job(runPolicy={"disruptionPolicy": "Sometimes"}))
    assert defaulted["spec"]["runPolicy"]["disruptionPolicy"] == "Sometimes"
    assert [v.path for v in validate(defaulted)] == ["spec.runPolicy.disruptionPolicy"]


def test_invalid_values_read_as_unset_only_when_asked_and_only_invalid_ones() -> None:
    """The controller reads a job it fails so (controller/job/memory.py), validation to judge
    names and env (shared/validation.py); the webhook never stores such a reading."""
    found = train_job(
        runPolicy={"cleanPodPolicy": "Sometimes", "backoffLimit": -1, "disruptionPolicy": 3}
    )
    worker = replicas_of(found)["Worker"]
    worker.update(replicas="two", restartPolicy="OnExitCode", restartScope="Pod")
    worker["template"]["spec"]["containers"][0]["ports"] = [
        {"name": "mxjob-port", "containerPort": 0}
    ]
    kept = apply_defaults(found, env=False)
    assert kept["spec"]["runPolicy"] == found["spec"]["runPolicy"]
    assert replicas_of(kept)["Worker"]["replicas"] == "two"
    read = apply_defaults(found, env=False, invalid_as_unset=True)
    assert read["spec"]["runPolicy"] == RUN_POLICY_DEFAULTS
    read_worker = replicas_of(read)["Worker"]
    assert (read_worker["replicas"], read_worker["restartPolicy"]) == (1, "ExitCode")
    assert read_worker["restartScope"] == "Job"
    assert mxnet_of(read, "Worker")["ports"] == [{"name": "mxjob-port", "containerPort": 9091}]
    assert (
        replicas_of(read)["Server"] == replicas_of(apply_defaults(train_job(), env=False))["Server"]
    )


def test_a_spec_or_run_policy_that_is_not_an_object_reads_as_empty_when_asked() -> None:
    assert apply_defaults({"spec": 5}, invalid_as_unset=True)["spec"]["runPolicy"] == (
        RUN_POLICY_DEFAULTS
    )
    read = apply_defaults(train_job(runPolicy="fast"), env=False, invalid_as_unset=True)
    assert read["spec"]["runPolicy"] == RUN_POLICY_DEFAULTS


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("cleanPodPolicy", "All"),
        ("ttlSecondsAfterFinished", 100),
        ("activeDeadlineSeconds", 3600),
        ("backoffLimit", 2),
        ("suspend", True),
        ("schedulingPolicy", {"minAvailable": 3}),
        ("managedBy", "example.com/another-controller"),
    ],
)
def test_run_policy_fields_under_spec_move_under_run_policy(field: str, value: Any) -> None:
    defaulted = apply_defaults(train_job(**{field: value}))
    assert field not in defaulted["spec"]
    assert defaulted["spec"]["runPolicy"][field] == value


def test_multikueue_as_manager_stays_at_spec_managed_by_where_multikueue_reads_it() -> None:
    defaulted = apply_defaults(train_job(managedBy="kueue.x-k8s.io/multikueue"))
    assert defaulted["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue"
    assert "managedBy" not in defaulted["spec"]["runPolicy"]


def test_multikueue_as_manager_under_run_policy_moves_up_to_spec_managed_by() -> None:
    job = train_job(runPolicy={"managedBy": "kueue.x-k8s.io/multikueue"})
    defaulted = apply_defaults(job)
    assert defaulted["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue"
    assert "managedBy" not in defaulted["spec"]["runPolicy"]
    assert apply_defaults(defaulted) == defaulted


def test_a_field_set_in_both_places_with_the_same_value_is_dropped_from_spec() -> None:
    defaulted = apply_defaults(train_job(backoffLimit=2, runPolicy={"backoffLimit": 2}))
    assert "backoffLimit" not in defaulted["spec"]
    assert defaulted["spec"]["runPolicy"]["backoffLimit"] == 2


def test_a_conflicting_field_stays_in_both_places_for_validation_to_report() -> None:
    defaulted = apply_defaults(train_job(backoffLimit=2, runPolicy={"backoffLimit": 3}))
    assert defaulted["spec"]["backoffLimit"] == 2
    assert defaulted["spec"]["runPolicy"]["backoffLimit"] == 3
    assert [v.path for v in validate(defaulted)] == ["spec.backoffLimit"]


def test_a_malformed_run_policy_is_left_for_validation() -> None:
    defaulted = apply_defaults(train_job(runPolicy="x", backoffLimit=1))
    assert defaulted["spec"]["runPolicy"] == "x"
    assert defaulted["spec"]["backoffLimit"] == 1


# --- replicas ----------------------------------------------------------------------------------


def test_replicas_default_to_one_and_restart_policy_to_exit_code() -> None:
    found = job("j", "MXTrain", {"Scheduler": replica(None), "Worker": replica(None)})
    for rspec in replicas_of(apply_defaults(found)).values():
        assert rspec["replicas"] == 1
        assert rspec["restartPolicy"] == "ExitCode"


def test_set_replicas_and_restart_policy_are_kept() -> None:
    found = job(
        "j", "MXTrain", {"Scheduler": replica(1), "Worker": replica(0, restart_policy="Never")}
    )
    worker = replicas_of(apply_defaults(found))["Worker"]
    assert worker["replicas"] == 0
    assert worker["restartPolicy"] == "Never"


@pytest.mark.parametrize(
    ("found", "scope"),
    [(train_job(), "Job"), (single_node_job(), "Job"), (tune_job(), "Replica")],
    ids=["train", "single-node", "tune"],
)
def test_every_replica_gets_the_restart_scope_of_its_mode(found: Job, scope: str) -> None:
    defaulted = apply_defaults(found)
    assert {t: r["restartScope"] for t, r in replicas_of(defaulted).items()} == dict.fromkeys(
        replicas_of(found), scope
    )
    assert validate(defaulted) == []


def test_a_set_restart_scope_is_kept_and_an_empty_one_defaulted() -> None:
    found = train_job()
    replicas_of(found)["Worker"]["restartScope"] = "Replica"
    replicas_of(found)["Server"]["restartScope"] = ""
    replicas_of(found)["Scheduler"]["restartScope"] = None
    scopes = {t: r["restartScope"] for t, r in replicas_of(apply_defaults(found)).items()}
    assert scopes == {"Scheduler": "Job", "Server": "Job", "Worker": "Replica"}


def test_the_restart_scope_follows_the_replica_type_whatever_the_mode_says() -> None:
    # An invalid mode, or a type of the other mode: validation reports them; each type still
    # reads as a scope (a Scheduler never as Replica, which would add a second violation).
    found = job("j", "Other", {"Scheduler": replica(), "Tuner": replica()})
    scopes = {t: r["restartScope"] for t, r in replicas_of(apply_defaults(found)).items()}
    assert scopes == {"Scheduler": "Job", "Tuner": "Replica"}
    wrong = job("j", "MXTune", {"Scheduler": replica(), "TunerTracker": replica()})
    paths = [v.path for v in validate(apply_defaults(wrong))]
    assert "spec.mxReplicaSpecs.Scheduler.restartScope" not in paths


def test_unknown_keys_get_no_restart_scope_and_malformed_ones_are_kept() -> None:
    found = train_job()
    replicas_of(found)["Chief"] = replica()
    replicas_of(found)["Worker"]["restartScope"] = "Pod"
    defaulted = apply_defaults(found)
    assert "restartScope" not in replicas_of(defaulted)["Chief"]
    assert replicas_of(defaulted)["Worker"]["restartScope"] == "Pod"


def test_without_env_every_other_default_is_applied() -> None:
    found = train_job()
    bare = apply_defaults(found, env=False)
    full = apply_defaults(found)
    assert "env" not in mxnet_of(bare, "Worker")
    for rtype in ("Scheduler", "Server", "Worker"):
        mxnet_of(full, rtype).pop("env")
    assert bare == full
    assert apply_defaults(apply_defaults(found), env=False) == apply_defaults(found)


def test_malformed_replicas_are_not_overwritten() -> None:
    found = train_job()
    replicas_of(found)["Worker"]["replicas"] = "3"
    assert replicas_of(apply_defaults(found))["Worker"]["replicas"] == "3"


# --- containers --------------------------------------------------------------------------------


def test_a_sole_unnamed_container_is_named_mxnet() -> None:
    found = job("j", "MXTrain", {"Worker": replica(containers=[container(None)])})
    containers = replicas_of(apply_defaults(found))["Worker"]["template"]["spec"]["containers"]
    assert containers[0]["name"] == "mxnet"


def test_unnamed_containers_among_several_are_not_named() -> None:
    found = job(
        "j", "MXTrain", {"Worker": replica(containers=[container(None), container("side")])}
    )
    containers = replicas_of(apply_defaults(found))["Worker"]["template"]["spec"]["containers"]
    assert "name" not in containers[0]


def test_the_mxnet_container_gets_the_mxjob_port() -> None:
    defaulted = apply_defaults(train_job())
    for rtype in ("Scheduler", "Server", "Worker"):
        assert mxnet_of(defaulted, rtype)["ports"] == [
            {"name": "mxjob-port", "containerPort": 9091}
        ]


def test_an_existing_mxjob_port_is_kept_and_used_everywhere() -> None:
    ports = [{"name": "mxjob-port", "containerPort": 9999, "protocol": "TCP"}]
    found = job(
        "p",
        "MXTrain",
        {"Scheduler": replica(containers=[container(ports=ports)]), "Worker": replica()},
    )
    defaulted = apply_defaults(found)
    assert mxnet_of(defaulted, "Scheduler")["ports"] == ports
    seen = resolve_env(
        mxnet_of(defaulted, "Worker")["env"],
        pod_metadata={"labels": {"training.kubeflow.org/replica-index": "0"}},
    )
    assert seen["DMLC_PS_ROOT_PORT"] == "9999"
    assert json.loads(seen["MX_CONFIG"])["cluster"]["scheduler"][0]["port"] == 9999


def test_other_ports_are_kept_and_the_mxjob_port_is_added() -> None:
    ports = [{"name": "metrics", "containerPort": 8080}]
    found = job("p", "MXTrain", {"Worker": replica(containers=[container(ports=ports)])})
    assert mxnet_of(apply_defaults(found), "Worker")["ports"] == [
        {"name": "metrics", "containerPort": 8080},
        {"name": "mxjob-port", "containerPort": 9091},
    ]


def test_malformed_ports_are_left_for_validation() -> None:
    found = single_node_job()
    mxnet_of(found, "Worker")["ports"] = "9091"
    defaulted = apply_defaults(found)
    assert mxnet_of(defaulted, "Worker")["ports"] == "9091"
    assert [v.path for v in validate(defaulted)] == [
        "spec.mxReplicaSpecs.Worker.template.spec.containers[0].ports"
    ]


def test_a_sidecar_gets_neither_port_nor_env() -> None:
    sidecar = container("sidecar", image="busybox", env=[{"name": "X", "value": "1"}])
    found = job("j", "MXTrain", {"Worker": replica(containers=[container(), sidecar])})
    containers = replicas_of(apply_defaults(found))["Worker"]["template"]["spec"]["containers"]
    assert containers[1] == sidecar


def test_init_containers_get_no_env() -> None:
    found = single_node_job()
    init = container("init", image="busybox")
    replicas_of(found)["Worker"]["template"]["spec"]["initContainers"] = [init]
    defaulted = apply_defaults(found)
    assert replicas_of(defaulted)["Worker"]["template"]["spec"]["initContainers"] == [init]


# --- env ---------------------------------------------------------------------------------------


def test_each_mxnet_container_gets_its_replicas_env() -> None:
    found = train_job()
    defaulted = apply_defaults(found)
    for rtype in ("Scheduler", "Server", "Worker"):
        assert mxnet_of(defaulted, rtype)["env"] == replica_env(defaulted, rtype)
    assert env_names(mxnet_of(defaulted, "Worker")["env"]) == INJECTED_WORKER


def test_injected_env_comes_first_so_user_env_can_refer_to_it() -> None:
    found = single_node_job()
    mxnet_of(found, "Worker")["env"] = [
        {"name": "ROLE_COPY", "value": "$(DMLC_ROLE)-$(MXJOB_REPLICA_INDEX)"}
    ]
    env = mxnet_of(apply_defaults(found), "Worker")["env"]
    assert env_names(env) == [*INJECTED_WORKER, "ROLE_COPY"]
    seen = resolve_env(env, pod_metadata={"labels": {"training.kubeflow.org/replica-index": "0"}})
    assert seen["ROLE_COPY"] == "worker-0"


def test_user_entries_with_owned_names_are_replaced_by_the_computed_ones() -> None:
    found = single_node_job()
    mxnet_of(found, "Worker")["env"] = [
        {"name": "A", "value": "1"},
        {"name": "DMLC_NUM_WORKER", "value": "7"},
        {"name": "B", "value": "2"},
        {"name": "MX_CONFIG", "value": "{}"},
    ]
    env = mxnet_of(apply_defaults(found), "Worker")["env"]
    assert env_names(env) == [*INJECTED_WORKER, "A", "B"]
    assert {"name": "DMLC_NUM_WORKER", "value": "1"} in env


def test_tune_env_is_injected_with_the_tuner_server_key() -> None:
    defaulted = apply_defaults(tune_job("tvm", key="k1"))
    for rtype in ("TunerTracker", "TunerServer", "Tuner"):
        env = mxnet_of(defaulted, rtype)["env"]
        key = [] if rtype == "TunerTracker" else ["TVM_TRACKER_KEY"]
        assert env_names(env) == [
            "MXJOB_REPLICA_INDEX", "TVM_TRACKER_HOST", "TVM_TRACKER_PORT", *key, "MX_CONFIG"
        ]  # fmt: skip
        assert '"labels":{"tunertracker":"","tunerserver":"k1","tuner":""}' in env[-1]["value"]
        assert key == [] or {"name": "TVM_TRACKER_KEY", "value": "k1"} in env


def test_an_update_that_scales_recomputes_the_counts() -> None:
    stored = apply_defaults(train_job("mnist", servers=1, workers=2))
    stored["spec"]["runPolicy"]["suspend"] = True  # counts change only while suspended
    update = copy.deepcopy(stored)
    replicas_of(update)["Worker"]["replicas"] = 4
    replicas_of(update)["Server"]["replicas"] = 2
    defaulted = apply_defaults(update)
    for rtype in ("Scheduler", "Server", "Worker"):
        seen = resolve_env(
            mxnet_of(defaulted, rtype)["env"],
            pod_metadata={"labels": {"training.kubeflow.org/replica-index": "0"}},
        )
        assert seen["DMLC_NUM_WORKER"] == "4"
        assert seen["DMLC_NUM_SERVER"] == "2"
        cluster = json.loads(seen["MX_CONFIG"])["cluster"]
        assert [w["url"] for w in cluster["worker"]] == [f"mnist-worker-{i}" for i in range(4)]
    assert validate(defaulted, old=stored) == []


@pytest.mark.parametrize("absent", [None, "", "missing"])
def test_an_absent_or_empty_job_mode_defaults_to_mxtrain(absent: str | None) -> None:
    found = train_job()
    if absent == "missing":
        del found["spec"]["jobMode"]
    else:
        found["spec"]["jobMode"] = absent
    defaulted = apply_defaults(found)
    assert defaulted["spec"]["jobMode"] == "MXTrain"
    assert defaulted == apply_defaults(train_job())


def test_no_env_is_injected_without_a_valid_mode() -> None:
    found = train_job()
    found["spec"]["jobMode"] = "Other"
    defaulted = apply_defaults(found)
    assert "env" not in mxnet_of(defaulted, "Worker")


def test_malformed_env_is_left_for_validation() -> None:
    found = single_node_job()
    mxnet_of(found, "Worker")["env"] = "X=1"
    assert mxnet_of(apply_defaults(found), "Worker")["env"] == "X=1"


# --- the seed ----------------------------------------------------------------------------------


def test_the_seed_job_converts_and_defaults_to_a_complete_v1_job() -> None:
    defaulted = apply_defaults(convert(seed_applied(), "kubeflow.org/v1"))
    assert defaulted["apiVersion"] == "kubeflow.org/v1"
    assert defaulted["spec"]["runPolicy"] == {
        "cleanPodPolicy": "All",
        "backoffLimit": 6,
        "disruptionPolicy": "Ignore",
    }
    assert "cleanPodPolicy" not in defaulted["spec"]
    for rtype in ("Scheduler", "Server", "Worker"):
        rspec = replicas_of(defaulted)[rtype]
        assert rspec["restartPolicy"] == "Never"
        assert rspec["restartScope"] == "Job"
        assert rspec["replicas"] == 1
        assert mxnet_of(defaulted, rtype)["ports"] == [
            {"containerPort": 9091, "name": "mxjob-port"}
        ]
    worker = mxnet_of(defaulted, "Worker")
    assert worker["command"] == ["python"]
    assert worker["resources"] == {"limits": {"nvidia.com/gpu": "1"}}
    seen = resolve_env(
        worker["env"], pod_metadata={"labels": {"training.kubeflow.org/replica-index": "0"}}
    )
    assert seen == {
        "MXJOB_REPLICA_INDEX": "0",
        "DMLC_ROLE": "worker",
        "DMLC_PS_ROOT_URI": "mxnet-job-scheduler-0",
        "DMLC_PS_ROOT_PORT": "9091",
        "DMLC_NUM_SERVER": "1",
        "DMLC_NUM_WORKER": "1",
        "DMLC_USE_KUBERNETES": "1",
        "DMLC_WORKER_ID": "0",
        "MX_CONFIG": (
            '{"cluster":{"scheduler":[{"url":"mxnet-job-scheduler-0","port":9091}],'
            '"server":[{"url":"mxnet-job-server-0","port":9091}],'
            '"worker":[{"url":"mxnet-job-worker-0","port":9091}]},'
            '"labels":{"scheduler":"","server":"","worker":""},"task":{"type":"worker","index":0}}'
        ),
    }
    assert validate(defaulted) == []
    assert apply_defaults(defaulted) == defaulted
