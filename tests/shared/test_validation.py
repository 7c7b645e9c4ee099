"""shared/validation.py: every rule, with its path and what is allowed; all at once; any input."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.conversion import convert
from shared.defaults import apply_defaults
from shared.validation import Violation, format_path, format_violations, validate
from tests.helpers.mxjobs import container, replica
from tests.shared.shared_samples import (
    job,
    json_objects,
    json_values,
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
W = "spec.mxReplicaSpecs.Worker"


def paths(found: Any, *, old: Any = None) -> list[str]:
    return [v.path for v in validate(found, old=old)]


def only(found: Any, *, old: Any = None) -> Violation:
    """The single violation of `found` (fails listing them all if there are more)."""
    violations = validate(found, old=old)
    assert len(violations) == 1, violations
    return violations[0]


# --- valid jobs ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "found",
    [
        train_job(),
        train_job(servers=0, workers=0),
        tune_job(),
        tune_job(key=None),
        single_node_job(),
        job("lower", "MXTrain", {"scheduler": replica(), "WORKER": replica(3)}),
        job("nocount", "MXTrain", {"Scheduler": replica(None), "Worker": replica(None)}),
        job("sole", "MXTrain", {"Worker": replica(containers=[container(None)])}),
    ],
    ids=["train", "train-no-workers", "tune", "tune-no-key", "single", "lower", "unset", "sole"],
)
def test_valid_jobs_have_no_violations(found: Job) -> None:
    assert validate(found) == []
    assert validate(apply_defaults(found)) == []


def test_the_seed_v1beta1_job_is_valid_after_conversion_and_defaulting() -> None:
    v1 = convert(seed_applied(), "kubeflow.org/v1")
    assert validate(v1) == []
    assert validate(apply_defaults(v1)) == []


@property_settings(200)
@given(valid_jobs())
def test_generated_valid_jobs_stay_valid_through_defaulting(found: Job) -> None:
    assert validate(found) == []
    defaulted = apply_defaults(found)
    assert validate(defaulted) == []
    assert validate(defaulted, old=defaulted) == []


# --- metadata.name ---------------------------------------------------------------------------


def test_more_than_1000_replicas_in_all_are_rejected_before_defaulting_could_run() -> None:
    assert validate(train_job(servers=500, workers=499)) == []
    too_many = train_job(servers=500, workers=500)
    found = only(too_many)
    assert found.path == "spec.mxReplicaSpecs"
    assert "at most 1000 replicas in all (got 1001)" in found.message
    huge = train_job(workers=2**31 - 1)  # defaulting this would build a 2**31-entry MX_CONFIG
    assert "spec.mxReplicaSpecs" in paths(huge)


def test_a_missing_name_is_required() -> None:
    found = train_job()
    del found["metadata"]["name"]
    assert only(found) == Violation("metadata.name", "is required")


def test_generate_name_without_name_is_rejected() -> None:
    found = train_job()
    del found["metadata"]["name"]
    found["metadata"]["generateName"] = "mnist-"
    violation = only(found)
    assert violation.path == "metadata.generateName"
    assert "set metadata.name" in violation.message


def test_generate_name_beside_a_name_is_fine() -> None:
    found = train_job()
    found["metadata"]["generateName"] = "mnist-"
    assert validate(found) == []


@pytest.mark.parametrize("name", ["Mnist", "1mnist", "mnist_1", "mnist-", "mn.ist"])
def test_a_name_that_is_not_a_dns1035_label_is_rejected(name: str) -> None:
    violation = only(train_job(name))
    assert violation.path == "metadata.name"
    assert "DNS-1035" in violation.message


def test_a_name_too_long_for_its_replica_names_is_rejected_with_the_limit() -> None:
    violation = only(train_job("a" * 52))
    assert violation.path == "metadata.name"
    assert "at most 51 characters" in violation.message
    assert validate(train_job("a" * 51)) == []


def test_the_name_limit_depends_on_the_replica_counts() -> None:
    assert validate(single_node_job("a" * 54)) == []  # "-worker-0" leaves 54
    assert paths(single_node_job("a" * 55)) == ["metadata.name"]


# --- jobMode ---------------------------------------------------------------------------------


@pytest.mark.parametrize("absent", ["", "missing"])
def test_an_absent_or_empty_job_mode_is_an_mxtrain_job(absent: str | None) -> None:
    """training-operator's CRD had jobMode optional and its SDK always sends ""."""
    found = train_job()
    if absent == "missing":
        del found["spec"]["jobMode"]
    else:
        found["spec"]["jobMode"] = absent
    assert validate(found) == []
    tune_shaped = tune_job()
    tune_shaped["spec"]["jobMode"] = ""
    assert "spec.mxReplicaSpecs.TunerTracker" in paths(tune_shaped)  # judged as MXTrain


def test_job_mode_must_be_mxtrain_or_mxtune() -> None:
    found = train_job()
    found["spec"]["jobMode"] = "mxtrain"
    violation = only(found)
    assert violation == Violation(
        "spec.jobMode", 'must be one of "", "MXTrain", "MXTune" (got "mxtrain")'
    )


def test_job_mode_is_immutable_on_update() -> None:
    old = train_job()
    new = tune_job(old["metadata"]["name"])
    assert "spec.jobMode" in paths(new, old=old)
    immutability = [v for v in validate(new, old=old) if v.path == "spec.jobMode"]
    assert immutability[0].message == "is immutable: must stay 'MXTrain' (got 'MXTune')"
    assert validate(new) == []


def test_an_unchanged_job_mode_passes_on_update() -> None:
    old = train_job()
    new = train_job()
    new["metadata"]["labels"] = {"team": "vision"}
    assert validate(new, old=old) == []


def test_a_job_stored_without_a_mode_may_be_written_back_as_mxtrain_but_not_mxtune() -> None:
    old = train_job()
    del old["spec"]["jobMode"]
    assert validate(train_job(), old=old) == []
    tune = tune_job(old["metadata"]["name"])
    immutability = [v for v in validate(tune, old=old) if v.path == "spec.jobMode"]
    assert immutability[0].message == "is immutable: must stay 'MXTrain' (got 'MXTune')"


# --- replica counts on update ----------------------------------------------------------------


def test_scaling_a_job_that_is_not_suspended_is_refused_with_how_to_do_it() -> None:
    old = apply_defaults(train_job(servers=1, workers=2))
    new = copy.deepcopy(old)
    new["spec"]["mxReplicaSpecs"]["Worker"]["replicas"] = 3
    violation = only(new, old=old)
    assert violation.path == f"{W}.replicas"
    assert violation.message.startswith("cannot change from 2 to 3 while the job is not suspended")
    assert "spec.runPolicy.suspend: true" in violation.message
    assert "then resume" in violation.message


def test_adding_or_removing_a_replica_type_of_a_running_job_is_refused() -> None:
    old = apply_defaults(train_job(servers=1, workers=2))
    new = copy.deepcopy(old)
    del new["spec"]["mxReplicaSpecs"]["Server"]
    assert paths(new, old=old) == ["spec.mxReplicaSpecs.Server.replicas"]
    assert "from 1 to 0" in only(new, old=old).message


def test_scaling_a_suspended_job_is_accepted_and_so_is_resuming_it_in_the_same_update() -> None:
    old = apply_defaults(train_job(servers=1, workers=2))
    old["spec"]["runPolicy"]["suspend"] = True
    new = apply_defaults({**copy.deepcopy(old)})
    new["spec"]["mxReplicaSpecs"]["Worker"]["replicas"] = 4
    new["spec"]["runPolicy"]["suspend"] = False
    assert validate(apply_defaults(new), old=old) == []


def test_suspending_and_scaling_in_one_update_is_refused() -> None:
    """The pods of the running job still exist when this update arrives."""
    old = apply_defaults(train_job(servers=1, workers=2))
    new = copy.deepcopy(old)
    new["spec"]["runPolicy"]["suspend"] = True
    new["spec"]["mxReplicaSpecs"]["Worker"]["replicas"] = 4
    assert paths(apply_defaults(new), old=old) == [f"{W}.replicas"]


def test_a_lower_case_replica_key_is_named_as_written() -> None:
    old = apply_defaults(train_job(servers=1, workers=2))
    new = copy.deepcopy(old)
    replicas = new["spec"]["mxReplicaSpecs"]
    replicas["worker"] = replicas.pop("Worker")
    replicas["worker"]["replicas"] = 1
    assert "spec.mxReplicaSpecs.worker.replicas" in paths(new, old=old)


# --- replica types ---------------------------------------------------------------------------


def test_an_unknown_replica_type_is_rejected_with_the_allowed_ones() -> None:
    found = train_job()
    found["spec"]["mxReplicaSpecs"]["Chief"] = replica()
    violation = only(found)
    assert violation.path == "spec.mxReplicaSpecs.Chief"
    assert violation.message == ("is not a replica type (MXTrain allows Scheduler, Server, Worker)")


def test_a_replica_type_of_the_other_mode_is_rejected() -> None:
    found = train_job()
    found["spec"]["mxReplicaSpecs"]["Tuner"] = replica()
    violation = only(found)
    assert violation == Violation(
        "spec.mxReplicaSpecs.Tuner",
        "is not allowed in MXTrain mode (MXTrain allows Scheduler, Server, Worker)",
    )


def test_tune_mode_rejects_train_types() -> None:
    found = tune_job()
    found["spec"]["mxReplicaSpecs"]["worker"] = replica()
    assert paths(found) == ["spec.mxReplicaSpecs.worker"]


def test_replica_keys_are_matched_case_insensitively() -> None:
    found = job(
        "j", "MXTune", {"tunertracker": replica(), "TUNERSERVER": replica(2), "tuner": replica()}
    )
    assert validate(found) == []


def test_a_type_spelled_twice_is_rejected_at_the_non_canonical_key() -> None:
    found = train_job()
    found["spec"]["mxReplicaSpecs"]["worker"] = replica()
    violation = only(found)
    assert violation.path == "spec.mxReplicaSpecs.worker"
    assert "duplicates 'Worker'" in violation.message


def test_unknown_types_are_listed_for_both_modes_when_the_mode_is_invalid() -> None:
    found = train_job()
    found["spec"]["jobMode"] = "X"
    found["spec"]["mxReplicaSpecs"]["Chief"] = replica()
    chief = [v for v in validate(found) if v.path == "spec.mxReplicaSpecs.Chief"]
    assert "MXTrain: Scheduler, Server, Worker; MXTune: TunerTracker, TunerServer, Tuner" in (
        chief[0].message
    )


# --- replica counts per mode -----------------------------------------------------------------


def test_mxtrain_without_scheduler_is_rejected_unless_single_node() -> None:
    found = train_job()
    del found["spec"]["mxReplicaSpecs"]["Scheduler"]
    violation = only(found)
    assert violation.path == "spec.mxReplicaSpecs.Scheduler"
    assert "is required in MXTrain mode (exactly 1 replica)" in violation.message


@pytest.mark.parametrize("count", [0, 2, 3])
def test_mxtrain_needs_exactly_one_scheduler(count: int) -> None:
    found = train_job()
    found["spec"]["mxReplicaSpecs"]["Scheduler"]["replicas"] = count
    assert only(found) == Violation(
        "spec.mxReplicaSpecs.Scheduler.replicas",
        f"must be exactly 1 in MXTrain mode (got {count})",
    )


@pytest.mark.parametrize(("servers", "workers"), [(0, 0), (0, 7), (5, 0), (20, 30)])
def test_mxtrain_servers_and_workers_may_be_zero_to_n(servers: int, workers: int) -> None:
    assert validate(train_job(servers=servers, workers=workers)) == []


@pytest.mark.parametrize("count", [0, 2])
def test_single_node_form_needs_exactly_one_worker(count: int) -> None:
    violation = only(single_node_job(replicas=count))
    assert violation.path == f"{W}.replicas"
    assert violation.message.startswith(
        f"must be exactly 1 in the single-node form (a Worker without a Scheduler); "
        f"add a Scheduler to train distributed (got {count})"
    )


def test_a_server_without_scheduler_is_not_the_single_node_form() -> None:
    found = job("j", "MXTrain", {"Server": replica(), "Worker": replica()})
    assert paths(found) == ["spec.mxReplicaSpecs.Scheduler"]


@pytest.mark.parametrize("mode", ["MXTrain", "MXTune"])
def test_empty_replica_specs_name_the_form_the_mode_needs(mode: str) -> None:
    violation = only(job("j", mode, {}))
    assert violation.path == "spec.mxReplicaSpecs"
    assert f"must define the replicas of {mode} mode" in violation.message


@pytest.mark.parametrize("missing", ["TunerTracker", "TunerServer", "Tuner"])
def test_mxtune_needs_every_tune_type(missing: str) -> None:
    found = tune_job()
    del found["spec"]["mxReplicaSpecs"][missing]
    violation = only(found)
    assert violation.path == f"spec.mxReplicaSpecs.{missing}"
    assert violation.message.startswith("is required in MXTune mode")


@pytest.mark.parametrize(
    ("rtype", "count"), [("TunerTracker", 2), ("TunerTracker", 0), ("Tuner", 2)]
)
def test_mxtune_needs_exactly_one_tracker_and_one_tuner(rtype: str, count: int) -> None:
    found = tune_job()
    found["spec"]["mxReplicaSpecs"][rtype]["replicas"] = count
    assert only(found) == Violation(
        f"spec.mxReplicaSpecs.{rtype}.replicas", f"must be exactly 1 in MXTune mode (got {count})"
    )


def test_mxtune_needs_at_least_one_tuner_server() -> None:
    assert only(tune_job(tuner_servers=0)) == Violation(
        "spec.mxReplicaSpecs.TunerServer.replicas", "must be at least 1 in MXTune mode (got 0)"
    )
    assert validate(tune_job(tuner_servers=9)) == []


@pytest.mark.parametrize(
    ("replicas", "message"),
    [
        (-1, "must be at least 0 (got -1)"),
        (True, "must be an integer (got boolean true)"),
        (1.0, "must be an integer (got number 1.0)"),
        ("2", 'must be an integer (got string "2")'),
        (None, "must be an integer (got null)"),
        ([1], "must be an integer (got array)"),
    ],
)
def test_replicas_must_be_a_non_negative_integer(replicas: Any, message: str) -> None:
    found = train_job()
    found["spec"]["mxReplicaSpecs"]["Worker"]["replicas"] = replicas
    assert only(found) == Violation(f"{W}.replicas", message)


# --- templates and containers ----------------------------------------------------------------


def test_a_replica_needs_a_template() -> None:
    found = train_job()
    del found["spec"]["mxReplicaSpecs"]["Worker"]["template"]
    assert only(found) == Violation(f"{W}.template", "is required")


def test_a_template_needs_containers() -> None:
    found = train_job()
    found["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"] = {}
    assert only(found) == Violation(f"{W}.template.spec.containers", "is required")


def test_an_empty_container_list_is_rejected() -> None:
    found = train_job()
    found["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"] = []
    assert only(found) == Violation(f"{W}.template.spec.containers", "must have at least 1 item(s)")


def test_a_template_without_an_mxnet_container_is_rejected_with_the_names_found() -> None:
    found = train_job()
    template = found["spec"]["mxReplicaSpecs"]["Worker"]["template"]
    template["spec"]["containers"] = [container("main"), container("sidecar")]
    violation = only(found)
    assert violation.path == f"{W}.template.spec.containers"
    assert violation.message.startswith("must include a container named 'mxnet'")
    assert '(got names: "main", "sidecar")' in violation.message


def test_several_unnamed_containers_have_no_mxnet_container() -> None:
    found = train_job()
    template = found["spec"]["mxReplicaSpecs"]["Worker"]["template"]
    template["spec"]["containers"] = [container(None), container(None)]
    assert paths(found) == [f"{W}.template.spec.containers"]


@pytest.mark.parametrize("field", ["containers", "initContainers"])
def test_every_container_needs_an_image(field: str) -> None:
    found = train_job()
    pod = found["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]
    pod.setdefault(field, []).append({"name": "noimage"})
    pod[field].append({"name": "empty", "image": ""})
    index = len(pod[field]) - 2
    assert validate(found) == [
        Violation(
            f"{W}.template.spec.{field}[{index}].image", "is required: every container needs one"
        ),
        Violation(
            f"{W}.template.spec.{field}[{index + 1}].image",
            "is required: every container needs one",
        ),
    ]


def test_an_image_that_is_not_a_string_is_a_type_error() -> None:
    found = train_job()
    mxnet_of(found, "Worker")["image"] = 7
    assert only(found) == Violation(
        f"{W}.template.spec.containers[0].image", "must be a string (got integer 7)"
    )


@pytest.mark.parametrize("policy", ["Always", "OnFailure", "Never", "ExitCode"])
def test_each_restart_policy_is_accepted(policy: str) -> None:
    found = train_job()
    found["spec"]["mxReplicaSpecs"]["Worker"]["restartPolicy"] = policy
    assert validate(found) == []


def test_an_unknown_restart_policy_is_rejected_with_the_allowed_ones() -> None:
    found = train_job()
    found["spec"]["mxReplicaSpecs"]["Worker"]["restartPolicy"] = "Sometimes"
    assert only(found) == Violation(
        f"{W}.restartPolicy",
        'must be one of "Always", "OnFailure", "Never", "ExitCode" (got "Sometimes")',
    )


# --- run policy and success policy -----------------------------------------------------------


@pytest.mark.parametrize("where", ["runPolicy", "spec"])
def test_clean_pod_policy_must_be_all_running_or_none(where: str) -> None:
    found = (
        train_job(runPolicy={"cleanPodPolicy": "Some"})
        if where == "runPolicy"
        else train_job(cleanPodPolicy="Some")
    )
    prefix = "spec.runPolicy" if where == "runPolicy" else "spec"
    assert only(found) == Violation(
        f"{prefix}.cleanPodPolicy", 'must be one of "All", "Running", "None" (got "Some")'
    )


@pytest.mark.parametrize(
    "field", ["backoffLimit", "activeDeadlineSeconds", "ttlSecondsAfterFinished"]
)
@pytest.mark.parametrize(
    ("value", "message"),
    [
        (-1, "must be at least 0 (got -1)"),
        (True, "must be an integer (got boolean true)"),
        ("5", 'must be an integer (got string "5")'),
        (2.5, "must be an integer (got number 2.5)"),
    ],
)
@pytest.mark.parametrize("where", ["runPolicy", "spec"])
def test_run_policy_numbers_must_be_non_negative_integers(
    field: str, value: Any, message: str, where: str
) -> None:
    found = (
        train_job(runPolicy={field: value}) if where == "runPolicy" else train_job(**{field: value})
    )
    prefix = "spec.runPolicy" if where == "runPolicy" else "spec"
    assert only(found) == Violation(f"{prefix}.{field}", message)


@pytest.mark.parametrize(
    "field", ["backoffLimit", "activeDeadlineSeconds", "ttlSecondsAfterFinished"]
)
def test_zero_is_a_valid_run_policy_number(field: str) -> None:
    assert validate(train_job(runPolicy={field: 0})) == []


def test_suspend_must_be_a_boolean() -> None:
    assert only(train_job(runPolicy={"suspend": "yes"})) == Violation(
        "spec.runPolicy.suspend", 'must be a boolean (got string "yes")'
    )


def test_run_policy_must_be_an_object() -> None:
    assert only(train_job(runPolicy=[])) == Violation(
        "spec.runPolicy", "must be an object (got array)"
    )


def test_a_field_under_spec_conflicting_with_run_policy_is_rejected() -> None:
    found = train_job(backoffLimit=3, runPolicy={"backoffLimit": 4})
    assert only(found) == Violation(
        "spec.backoffLimit",
        "conflicts with spec.runPolicy.backoffLimit (3 vs 4); set it only under spec.runPolicy",
    )


def test_the_same_value_under_spec_and_run_policy_is_fine() -> None:
    assert validate(train_job(backoffLimit=3, runPolicy={"backoffLimit": 3})) == []


@pytest.mark.parametrize("policy", ["", "AllWorkers"])
def test_success_policy_empty_or_all_workers_is_accepted(policy: str) -> None:
    assert validate(train_job(successPolicy=policy)) == []


def test_an_unknown_success_policy_is_rejected() -> None:
    assert only(train_job(successPolicy="AnyWorker")) == Violation(
        "spec.successPolicy", 'must be one of "", "AllWorkers" (got "AnyWorker")'
    )


def test_all_workers_success_policy_is_rejected_in_mxtune() -> None:
    found = tune_job()
    found["spec"]["successPolicy"] = "AllWorkers"
    assert paths(found) == ["spec.successPolicy"]


# --- owned env -------------------------------------------------------------------------------


def _with_env(found: Job, rtype: str, *entries: Job) -> Job:
    mxnet_of(found, rtype)["env"] = list(entries)
    return found


def test_a_user_set_owned_env_value_is_rejected_with_the_expected_value() -> None:
    found = _with_env(
        train_job(), "Worker", {"name": "A", "value": "1"}, {"name": "DMLC_ROLE", "value": "server"}
    )
    assert only(found) == Violation(
        f"{W}.template.spec.containers[0].env[1]",
        'DMLC_ROLE is set by the operator; remove it or set it to "worker" (got "server")',
    )


def test_owned_env_equal_to_what_the_operator_computes_is_accepted() -> None:
    found = apply_defaults(train_job())
    assert validate(found) == []
    raw = _with_env(train_job(), "Worker", *mxnet_of(found, "Worker")["env"])
    assert validate(raw) == []


def test_the_index_entry_without_field_ref_api_version_is_the_same_entry() -> None:
    entry = {
        "name": "MXJOB_REPLICA_INDEX",
        "valueFrom": {
            "fieldRef": {"fieldPath": "metadata.labels['training.kubeflow.org/replica-index']"}
        },
    }
    assert validate(_with_env(train_job(), "Worker", entry)) == []


def test_the_index_entry_from_another_field_is_rejected() -> None:
    entry = {
        "name": "MXJOB_REPLICA_INDEX",
        "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}},
    }
    assert paths(_with_env(train_job(), "Worker", entry)) == [
        f"{W}.template.spec.containers[0].env[0]"
    ]


def test_worker_id_on_a_scheduler_is_reserved() -> None:
    found = _with_env(train_job(), "Scheduler", {"name": "DMLC_WORKER_ID", "value": "0"})
    violation = only(found)
    assert violation.path == "spec.mxReplicaSpecs.Scheduler.template.spec.containers[0].env[0]"
    assert violation.message == (
        "DMLC_WORKER_ID is reserved for the operator, which does not set it for a Scheduler "
        "in MXTrain mode; remove it"
    )


def test_dmlc_env_in_mxtune_is_reserved() -> None:
    found = _with_env(tune_job(), "Tuner", {"name": "DMLC_ROLE", "value": "tuner"})
    assert paths(found) == ["spec.mxReplicaSpecs.Tuner.template.spec.containers[0].env[0]"]


def test_a_sidecar_may_set_dmlc_env() -> None:
    found = train_job()
    sidecar = container("sidecar", env=[{"name": "DMLC_ROLE", "value": "anything"}])
    found["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"].append(sidecar)
    assert validate(found) == []


def test_stale_injected_env_on_an_update_that_scales_is_accepted() -> None:
    old = apply_defaults(train_job(workers=2))
    old["spec"]["runPolicy"]["suspend"] = True
    new = copy.deepcopy(old)
    new["spec"]["mxReplicaSpecs"]["Worker"]["replicas"] = 3
    assert validate(new, old=old) == []
    assert {v.path for v in validate(new)} >= {f"{W}.template.spec.containers[0].env[5]"}


def test_an_update_may_not_invent_an_owned_value() -> None:
    old = apply_defaults(train_job(workers=2))
    new = copy.deepcopy(old)
    env = mxnet_of(new, "Worker")["env"]
    env[5] = {"name": "DMLC_NUM_WORKER", "value": "99"}
    assert paths(new, old=old) == [f"{W}.template.spec.containers[0].env[5]"]


def test_the_sole_unnamed_container_is_checked_as_the_mxnet_container() -> None:
    found = job(
        "j",
        "MXTrain",
        {
            "Worker": replica(
                containers=[container(None, env=[{"name": "MX_CONFIG", "value": "{}"}])]
            )
        },
    )
    assert paths(found) == [f"{W}.template.spec.containers[0].env[0]"]


# --- wrong JSON types ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("found", "expected"),
    [
        ([], [Violation("object", "must be an object (got array)")]),
        ("x", [Violation("object", 'must be an object (got string "x")')]),
        ({}, [Violation("metadata.name", "is required"), Violation("spec", "is required")]),
        (
            {"metadata": {"name": "j"}, "spec": "train"},
            [Violation("spec", 'must be an object (got string "train")')],
        ),
        (
            {"metadata": [], "spec": {"jobMode": "MXTrain", "mxReplicaSpecs": []}},
            [
                Violation("metadata", "must be an object (got array)"),
                Violation("spec.mxReplicaSpecs", "must be an object (got array)"),
            ],
        ),
    ],
)
def test_wrong_json_types_are_violations_not_exceptions(
    found: Any, expected: list[Violation]
) -> None:
    assert validate(found) == expected


def test_python_values_that_are_not_json_are_described_not_fatal() -> None:
    found = train_job()
    found["spec"]["jobMode"] = {"MXTrain"}
    found["metadata"] = ("mnist",)
    assert validate(found) == [
        Violation("metadata", 'must be an object (got tuple ["mnist"])'),
        Violation("spec.jobMode", "must be a string (got set {'MXTrain'})"),
    ]


def test_wrong_types_deep_in_a_template_are_reported_with_their_path() -> None:
    found = train_job()
    worker = found["spec"]["mxReplicaSpecs"]["Worker"]
    worker["template"]["spec"]["containers"][0]["env"] = [{"name": "A", "value": 1}, "B"]
    worker["template"]["spec"]["containers"][0]["ports"] = [
        {"name": "mxjob-port", "containerPort": 70000}
    ]
    found["spec"]["mxReplicaSpecs"]["Server"]["template"] = "pod"
    found["spec"]["mxReplicaSpecs"]["Scheduler"] = 1
    assert validate(found) == [
        Violation("spec.mxReplicaSpecs.Scheduler", "must be an object (got integer 1)"),
        Violation("spec.mxReplicaSpecs.Server.template", 'must be an object (got string "pod")'),
        Violation(
            f"{W}.template.spec.containers[0].env[0].value", "must be a string (got integer 1)"
        ),
        Violation(f"{W}.template.spec.containers[0].env[1]", 'must be an object (got string "B")'),
        Violation(
            f"{W}.template.spec.containers[0].ports[0].containerPort",
            "must be at most 65535 (got 70000)",
        ),
    ]


def test_all_violations_are_reported_at_once_sorted_by_path() -> None:
    found = train_job("Bad_Name", servers=-1)
    found["spec"]["mxReplicaSpecs"]["Scheduler"]["replicas"] = 2
    found["spec"]["mxReplicaSpecs"]["Chief"] = replica()
    found["spec"]["runPolicy"] = {"cleanPodPolicy": "Some", "backoffLimit": -1}
    mxnet_of(found, "Worker")["image"] = ""
    assert paths(found) == [
        "metadata.name",
        "spec.mxReplicaSpecs.Chief",
        "spec.mxReplicaSpecs.Scheduler.replicas",
        "spec.mxReplicaSpecs.Server.replicas",
        f"{W}.template.spec.containers[0].image",
        "spec.runPolicy.backoffLimit",
        "spec.runPolicy.cleanPodPolicy",
    ]


def test_a_long_value_is_shortened_in_the_message() -> None:
    found = train_job()
    found["spec"]["jobMode"] = "x" * 500
    # The JSON string is cut to 60 characters: its quote, 56 x's and "...".
    expected = 'must be one of "", "MXTrain", "MXTune" (got "' + "x" * 56 + "...)"
    assert only(found).message == expected


# --- paths and the message -------------------------------------------------------------------


def test_format_path_quotes_keys_that_are_not_identifiers() -> None:
    assert format_path(["spec", "mxReplicaSpecs", "Worker", "replicas"]) == W + ".replicas"
    assert format_path(["a", 0, "b", 12]) == "a[0].b[12]"
    assert format_path(["metadata", "annotations", "a.b/c"]) == 'metadata.annotations["a.b/c"]'
    assert format_path(["x", ""]) == 'x[""]'
    assert format_path([]) == "object"


def test_format_violations_makes_one_message_naming_the_job() -> None:
    violations = [
        Violation(
            "spec.mxReplicaSpecs.Scheduler.replicas", "must be exactly 1 in MXTrain mode (got 2)"
        ),
        Violation("metadata.name", "is required"),
    ]
    assert format_violations(violations, name="x") == (
        'MXJob "x" is invalid: spec.mxReplicaSpecs.Scheduler.replicas: must be exactly 1 in '
        "MXTrain mode (got 2); metadata.name: is required"
    )
    assert format_violations(violations[1:]) == "MXJob is invalid: metadata.name: is required"


def test_a_violation_reads_as_path_colon_message() -> None:
    assert str(Violation("spec.jobMode", "is required")) == "spec.jobMode: is required"


# --- robustness ------------------------------------------------------------------------------


@property_settings(300)
@given(st.one_of(json_values(), json_objects()), st.none() | json_objects(10))
def test_validate_never_raises_on_arbitrary_json(found: Any, old: Any) -> None:
    violations = validate(found, old=old)
    assert all(isinstance(v, Violation) and v.path and v.message for v in violations)
    if not isinstance(found, dict):
        assert violations == [Violation("object", violations[0].message)]


@property_settings(300)
@given(mutated_jobs(), mutated_jobs())
def test_validate_never_raises_on_jobs_with_one_field_mangled(found: Job, old: Job) -> None:
    violations = validate(found, old=old)
    assert all(isinstance(v, Violation) and v.path and v.message for v in violations)
    assert violations == sorted(violations, key=lambda v: v.path)
    assert len(set(violations)) == len(violations)


@pytest.mark.parametrize("value", ["0", "30", "86400"])
def test_a_pod_start_timeout_annotation_of_whole_seconds_is_accepted(value: str) -> None:
    found = train_job()
    found["metadata"]["annotations"] = {
        "mxjob-operator.kubeflow.org/pod-start-timeout-seconds": value
    }
    assert validate(found) == []


@pytest.mark.parametrize("value", ["-1", "10m", "1.5", ""])
def test_a_pod_start_timeout_annotation_that_is_not_whole_seconds_is_refused_by_name(
    value: str,
) -> None:
    found = train_job()
    found["metadata"]["annotations"] = {
        "mxjob-operator.kubeflow.org/pod-start-timeout-seconds": value
    }
    violation = only(found)
    assert violation.path == (
        'metadata.annotations["mxjob-operator.kubeflow.org/pod-start-timeout-seconds"]'
    )
    assert "whole number of seconds" in violation.message and repr(value) in violation.message


def test_restart_scope_and_disruption_policy_name_their_allowed_values() -> None:
    bad = train_job(runPolicy={"disruptionPolicy": "Sometimes"})
    bad["spec"]["mxReplicaSpecs"]["Worker"]["restartScope"] = "Pod"
    paths = {v.path: v.message for v in validate(bad)}
    assert '"Job", "Replica" (got "Pod")' in paths["spec.mxReplicaSpecs.Worker.restartScope"]
    assert '"Ignore", "Count"' in paths["spec.runPolicy.disruptionPolicy"]


def test_a_scheduler_restarted_alone_is_refused_naming_why() -> None:
    found = train_job()
    found["spec"]["mxReplicaSpecs"]["Scheduler"]["restartScope"] = "Replica"
    [violation] = validate(found)
    assert violation.path == "spec.mxReplicaSpecs.Scheduler.restartScope"
    assert "must be 'Job'" in violation.message and "ps-lite" in violation.message


def test_every_replica_may_choose_its_scope_but_the_scheduler() -> None:
    found = train_job(runPolicy={"disruptionPolicy": "Count"})
    for rtype, scope in (("Scheduler", "Job"), ("Server", "Replica"), ("Worker", "Replica")):
        found["spec"]["mxReplicaSpecs"][rtype]["restartScope"] = scope
    assert validate(found) == []
    tune = tune_job()
    tune["spec"]["mxReplicaSpecs"]["TunerTracker"]["restartScope"] = "Job"
    assert validate(tune) == []


# --- schedulingPolicy: the names it gives ----------------------------------------------------


@pytest.mark.parametrize(
    "key", ["topology.kubernetes.io/rack", "kubernetes.io/hostname", "rack", "example.com/Rack_1"]
)
def test_a_node_label_key_is_a_valid_topology_key(key: str) -> None:
    assert validate(train_job(runPolicy={"schedulingPolicy": {"topologyKey": key}})) == []


@pytest.mark.parametrize(
    ("key", "why"),
    [
        ("rack key", "must have a name ('rack key') of letters, digits"),
        ("/rack", "must not start with '/'"),
        ("Example.com/rack", "has a prefix ('Example.com') that must be a DNS subdomain"),
        ("example.com/", "must have a name (after the '/' of a prefix)"),
        ("r" * 64, "must have a name of at most 63 characters (got 64)"),
        ("-rack", "must have a name ('-rack')"),
    ],
)
def test_a_topology_key_that_no_node_label_can_have_is_refused(key: str, why: str) -> None:
    violation = only(train_job(runPolicy={"schedulingPolicy": {"topologyKey": key}}))
    assert violation.path == "spec.runPolicy.schedulingPolicy.topologyKey"
    assert violation.message.startswith(why), violation.message
    assert f"(got {key!r})" in violation.message
    assert "node-label key such as 'topology.kubernetes.io/rack'" in violation.message


def test_a_topology_key_must_be_a_string() -> None:
    assert only(train_job(runPolicy={"schedulingPolicy": {"topologyKey": 7}})) == Violation(
        "spec.runPolicy.schedulingPolicy.topologyKey", "must be a string (got integer 7)"
    )


def test_a_priority_class_must_be_a_name_a_priority_class_can_have() -> None:
    assert validate(train_job(runPolicy={"schedulingPolicy": {"priorityClass": "high-1"}})) == []
    violation = only(train_job(runPolicy={"schedulingPolicy": {"priorityClass": "High"}}))
    assert violation.path == "spec.runPolicy.schedulingPolicy.priorityClass"
    assert "must be a DNS subdomain" in violation.message and "PriorityClass" in violation.message


def test_the_legacy_place_of_scheduling_policy_is_checked_too() -> None:
    violation = only(train_job(schedulingPolicy={"topologyKey": "a b"}))
    assert violation.path == "spec.schedulingPolicy.topologyKey"
