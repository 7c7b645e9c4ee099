"""shared/spec.py: the structural accessors never raise on malformed jobs; the readers of
defaulted fields hold no default and refuse a job defaulting has not been applied to."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from hypothesis import given

from shared import spec as s
from shared.constants import (
    RUN_POLICY_FIELDS,
    CleanPodPolicy,
    DisruptionPolicy,
    JobMode,
    ReplicaType,
    RestartPolicy,
    RestartScope,
    SuccessPolicy,
)
from shared.defaults import apply_defaults
from tests.helpers.mxjobs import container, replica
from tests.shared.shared_samples import (
    job,
    json_objects,
    property_settings,
    single_node_job,
    train_job,
    tune_job,
    valid_jobs,
)


def test_is_int_excludes_bool_and_float() -> None:
    assert s.is_int(0)
    assert s.is_int(-3)
    assert not s.is_int(True)
    assert not s.is_int(1.0)
    assert not s.is_int("1")


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("Worker", ReplicaType.WORKER),
        ("worker", ReplicaType.WORKER),
        ("TUNERSERVER", ReplicaType.TUNER_SERVER),
        ("tunerServer", ReplicaType.TUNER_SERVER),
        ("Workers", None),
        ("", None),
        (3, None),
    ],
)
def test_canonical_replica_type_matches_case_insensitively(
    key: object, expected: ReplicaType | None
) -> None:
    assert s.canonical_replica_type(key) is expected


def test_job_name_and_mode_read_metadata_and_spec() -> None:
    found = train_job("mnist")
    assert s.job_name(found) == "mnist"
    assert s.job_mode(found) is JobMode.MXTRAIN
    assert s.job_mode(tune_job()) is JobMode.MXTUNE


@pytest.mark.parametrize("bad", [{"spec": {"jobMode": "mxtrain"}}, {"spec": {"jobMode": 1}}])
def test_job_mode_is_none_unless_one_of_the_modes(bad: dict[str, Any]) -> None:
    assert s.job_mode(bad) is None
    assert s.job_name(bad) == ""


@pytest.mark.parametrize(
    "unset",
    [{}, {"spec": []}, {"spec": {}}, {"spec": {"jobMode": ""}}, {"spec": {"jobMode": None}}],
)
def test_an_unset_job_mode_reads_as_defaulting_writes_it_mxtrain(unset: dict[str, Any]) -> None:
    assert s.job_mode(apply_defaults(unset, env=False, invalid_as_unset=True)) is JobMode.MXTRAIN
    assert s.job_mode(unset) is None  # no fallback in the reader


def test_replica_specs_are_keyed_canonically_in_canonical_order() -> None:
    found = job("j", "MXTrain", {"worker": replica(2), "SCHEDULER": replica(1), "Bogus": replica()})
    specs = s.replica_specs(found)
    assert list(specs) == ["Scheduler", "Worker"]
    assert specs["Worker"]["replicas"] == 2


def test_replica_specs_prefer_the_canonical_spelling_of_a_duplicated_type() -> None:
    found = job("j", "MXTrain", {"worker": replica(2), "Worker": replica(3), "WORKER": replica(4)})
    assert s.replica_specs(found)["Worker"]["replicas"] == 3
    assert s.replica_count(found, "worker") == 3


def test_replica_specs_skip_values_that_are_not_objects() -> None:
    found = {"spec": {"jobMode": "MXTrain", "mxReplicaSpecs": {"Worker": [1], "Server": None}}}
    assert s.replica_specs(found) == {}


def test_an_unknown_replica_type_has_no_spec_and_no_pods() -> None:
    assert s.replica_spec(train_job(), "Chief") is None
    assert s.replica_count(train_job(), "Chief") == 0
    assert s.replica_spec(train_job(), "worker") == train_job()["spec"]["mxReplicaSpecs"]["Worker"]


def test_replica_count_reads_the_defaulted_count_and_is_zero_for_an_absent_type() -> None:
    found = apply_defaults(job("j", "MXTrain", {"Worker": replica(None), "Server": replica(0)}))
    assert s.replica_count(found, "Worker") == 1
    assert s.replica_count(found, "Server") == 0
    assert s.replica_count(found, "Scheduler") == 0


@pytest.mark.parametrize("bad", [-1, True, 2.0, "3", None])
def test_a_malformed_count_is_refused_and_read_as_unset_only_when_asked(bad: object) -> None:
    """No fallback in the reader: defaulting says what an unset or invalid count means."""
    found = job("j", "MXTrain", {"Worker": {"replicas": bad, "template": {}}})
    with pytest.raises(s.NotDefaultedError, match=r"replicas is .*, not an integer of at least 0"):
        s.replica_count(found, "Worker")
    read = apply_defaults(found, env=False, invalid_as_unset=True)
    assert s.replica_count(read, "Worker") == 1


def test_replica_port_is_the_mxjob_port_of_the_mxnet_container() -> None:
    ports = [
        {"name": "metrics", "containerPort": 8080},
        {"name": "mxjob-port", "containerPort": 9999},
    ]
    found = job("j", "MXTrain", {"Worker": replica(containers=[container(ports=ports)])})
    assert s.replica_port(found, "Worker") == 9999


def test_replica_port_ignores_sidecar_ports_and_reads_the_port_defaulting_gave() -> None:
    sidecar = container("sidecar", ports=[{"name": "mxjob-port", "containerPort": 7777}])
    found = job("j", "MXTrain", {"Worker": replica(containers=[container(), sidecar])})
    with pytest.raises(s.NotDefaultedError, match="mxjob-port containerPort of the mxnet"):
        s.replica_port(found, "Worker")
    assert s.replica_port(apply_defaults(found), "Worker") == 9091
    with pytest.raises(s.NotDefaultedError):
        s.replica_port(apply_defaults(found), "Scheduler")  # no such replica, no port


@pytest.mark.parametrize("bad", ["9999", 0, 70000, True, None])
def test_an_invalid_port_is_refused_and_read_as_unset_only_when_asked(bad: object) -> None:
    ports = [{"name": "mxjob-port", "containerPort": bad}]
    found = job("j", "MXTrain", {"Worker": replica(containers=[container(ports=ports)])})
    with pytest.raises(s.NotDefaultedError, match="not an integer from 1 to 65535"):
        s.replica_port(apply_defaults(found), "Worker")
    assert s.replica_port(apply_defaults(found, invalid_as_unset=True), "Worker") == 9091


def test_mxnet_container_is_found_by_name_among_several() -> None:
    template = {"spec": {"containers": [container("sidecar"), container("mxnet", image="x")]}}
    assert s.mxnet_container(template) == container("mxnet", image="x")


def test_mxnet_container_is_the_sole_unnamed_container() -> None:
    template = {"spec": {"containers": [container(None)]}}
    assert s.mxnet_container(template) is template["spec"]["containers"][0]


def test_mxnet_container_is_none_without_a_candidate() -> None:
    assert s.mxnet_container({"spec": {"containers": [container("a"), container("b")]}}) is None
    assert s.mxnet_container({"spec": {"containers": [container(None), container(None)]}}) is None
    assert s.mxnet_container({"spec": {"containers": "mxnet"}}) is None
    assert s.mxnet_container(None) is None


def test_tuner_server_key_is_the_non_empty_template_annotation() -> None:
    assert s.tuner_server_key({"metadata": {"annotations": {"tuner-server-key": "k"}}}) == "k"
    assert s.tuner_server_key({"metadata": {"annotations": {"tuner-server-key": ""}}}) is None
    assert s.tuner_server_key({"metadata": {"annotations": {"tuner-server-key": 5}}}) is None
    assert s.tuner_server_key({"metadata": []}) is None


def test_restart_policy_reads_what_defaulting_wrote() -> None:
    found = job("j", "MXTrain", {"Worker": replica(restart_policy="Never"), "Server": replica()})
    with pytest.raises(s.NotDefaultedError, match=r"Server\.restartPolicy is None"):
        s.restart_policy(found, "Server")
    defaulted = apply_defaults(found)
    assert s.restart_policy(defaulted, "Worker") is RestartPolicy.NEVER
    assert s.restart_policy(defaulted, "Server") is RestartPolicy.EXIT_CODE


def test_a_policy_training_operator_stored_unchecked_reads_as_unset_only_when_asked() -> None:
    """v1.8.1's CRD has no enum for restartPolicy or cleanPodPolicy: the controller reads such a
    job with invalid_as_unset to fail it (controller/job/memory.py)."""
    found = train_job(runPolicy={"cleanPodPolicy": "Sometimes", "backoffLimit": -1})
    found["spec"]["mxReplicaSpecs"]["Worker"]["restartPolicy"] = "OnExitCode"
    defaulted = apply_defaults(found)
    with pytest.raises(s.NotDefaultedError, match="'OnExitCode', not one of"):
        s.restart_policy(defaulted, "Worker")
    with pytest.raises(s.NotDefaultedError, match="'Sometimes', not one of"):
        s.clean_pod_policy(defaulted)
    with pytest.raises(s.NotDefaultedError, match="backoffLimit is -1"):
        s.backoff_limit(defaulted)
    read = apply_defaults(found, invalid_as_unset=True)
    assert s.restart_policy(read, "Worker") is RestartPolicy.EXIT_CODE
    assert s.clean_pod_policy(read) is CleanPodPolicy.RUNNING
    assert s.backoff_limit(read) == 6


@pytest.mark.parametrize(
    ("found", "scope"),
    [(train_job(), RestartScope.JOB), (single_node_job(), RestartScope.JOB),
     (tune_job(), RestartScope.REPLICA)],
    ids=["train", "single-node", "tune"],
)  # fmt: skip
def test_the_defaulted_fields_read_as_defaulting_wrote_them(
    found: dict[str, Any], scope: RestartScope
) -> None:
    defaulted = apply_defaults(found)
    for rtype in s.replica_specs(defaulted):
        assert s.restart_scope(defaulted, rtype) is scope
    assert s.disruption_policy(defaulted) is DisruptionPolicy.IGNORE


def test_the_defaulted_fields_read_the_values_a_job_sets() -> None:
    found = train_job(runPolicy={"disruptionPolicy": "Count"})
    found["spec"]["mxReplicaSpecs"]["Worker"]["restartScope"] = "Replica"
    defaulted = apply_defaults(found)
    assert s.restart_scope(defaulted, "worker") is RestartScope.REPLICA
    assert s.restart_scope(defaulted, "Server") is RestartScope.JOB
    assert s.disruption_policy(defaulted) is DisruptionPolicy.COUNT


@pytest.mark.parametrize(
    "found",
    [train_job(), tune_job(), train_job(runPolicy={"backoffLimit": 2}), {}, {"spec": []}],
    ids=["train", "tune", "run-policy", "empty", "malformed"],
)
def test_the_defaulted_fields_are_not_read_from_a_job_defaulting_skipped(
    found: dict[str, Any],
) -> None:
    """No second copy of a default: a job stored before it existed is defaulted first
    (controller/job/memory.py), and a reader given it raw says so."""
    with pytest.raises(s.NotDefaultedError, match=r"spec\.runPolicy\.disruptionPolicy is None"):
        s.disruption_policy(found)
    with pytest.raises(s.NotDefaultedError, match=r"spec\.mxReplicaSpecs\.Worker\.restartScope"):
        s.restart_scope(found, "Worker")


def test_a_defaulted_field_of_another_value_is_refused_naming_the_allowed_ones() -> None:
    found = apply_defaults(train_job(runPolicy={"disruptionPolicy": "Sometimes"}))
    with pytest.raises(s.NotDefaultedError, match="'Sometimes', not one of Ignore, Count"):
        s.disruption_policy(found)
    found["spec"]["mxReplicaSpecs"]["Worker"]["restartScope"] = 1
    with pytest.raises(s.NotDefaultedError, match="is 1, not one of Job, Replica"):
        s.restart_scope(found, "Worker")
    with pytest.raises(s.NotDefaultedError, match=r"Chief\.restartScope is None"):
        s.restart_scope(found, "Chief")


@property_settings(200)
@given(valid_jobs())
def test_the_defaulted_fields_read_on_every_defaulted_valid_job(found: dict[str, Any]) -> None:
    """What lets the controller read a valid job's spec with no fallback (controller/job/view)."""
    defaulted = apply_defaults(found)
    assert s.disruption_policy(defaulted) in DisruptionPolicy
    assert s.clean_pod_policy(defaulted) in CleanPodPolicy
    assert s.backoff_limit(defaulted) >= 0
    for rtype in s.replica_specs(defaulted):
        assert s.restart_scope(defaulted, rtype) in RestartScope
        assert s.restart_policy(defaulted, rtype) in RestartPolicy
        assert s.replica_count(defaulted, rtype) >= 0
        assert 0 < s.replica_port(defaulted, rtype) <= 65535


def test_run_policy_reads_runpolicy_then_fields_still_under_spec() -> None:
    found = train_job(runPolicy={"backoffLimit": 2}, backoffLimit=9, cleanPodPolicy="All")
    assert s.run_policy(found) == {"backoffLimit": 2, "cleanPodPolicy": "All"}


def test_run_policy_accessors_read_the_defaults() -> None:
    found = apply_defaults(train_job())
    assert s.clean_pod_policy(found) is CleanPodPolicy.RUNNING
    assert s.backoff_limit(found) == 6
    assert s.active_deadline_seconds(found) is None
    assert s.ttl_seconds_after_finished(found) is None
    assert not s.is_suspended(found)
    assert s.success_policy(found) is SuccessPolicy.DEFAULT


def test_run_policy_accessors_read_set_values() -> None:
    policy = {
        "cleanPodPolicy": "None",
        "backoffLimit": 0,
        "activeDeadlineSeconds": 60,
        "ttlSecondsAfterFinished": 0,
        "suspend": True,
    }
    found = train_job(runPolicy=policy, successPolicy="AllWorkers")
    assert s.clean_pod_policy(found) is CleanPodPolicy.NONE
    assert s.backoff_limit(found) == 0
    assert s.active_deadline_seconds(found) == 60
    assert s.ttl_seconds_after_finished(found) == 0
    assert s.is_suspended(found)
    assert s.success_policy(found) is SuccessPolicy.ALL_WORKERS


@property_settings()
@given(json_objects())
def test_structural_accessors_never_raise_on_arbitrary_json(found: dict[str, Any]) -> None:
    assert set(s.replica_specs(found)) <= set(ReplicaType)
    assert set(s.run_policy(found)) <= set(RUN_POLICY_FIELDS)
    assert (s.active_deadline_seconds(found) or 0) >= 0
    assert (s.ttl_seconds_after_finished(found) or 0) >= 0
    assert isinstance(s.is_suspended(found), bool)
    assert s.success_policy(found) in SuccessPolicy


@property_settings()
@given(json_objects())
def test_the_defaulted_fields_read_or_refuse_arbitrary_json(found: dict[str, Any]) -> None:
    """A member of the field's values, or NotDefaultedError: nothing else, whatever the job."""
    for rtype in ReplicaType:
        with contextlib.suppress(s.NotDefaultedError):
            assert s.restart_scope(found, rtype) in RestartScope
        with contextlib.suppress(s.NotDefaultedError):
            assert s.restart_policy(found, rtype) in RestartPolicy
        with contextlib.suppress(s.NotDefaultedError):
            assert s.replica_count(found, rtype) >= 0
        with contextlib.suppress(s.NotDefaultedError):
            assert 0 < s.replica_port(found, rtype) <= 65535
    with contextlib.suppress(s.NotDefaultedError):
        assert s.clean_pod_policy(found) in CleanPodPolicy
    with contextlib.suppress(s.NotDefaultedError):
        assert s.backoff_limit(found) >= 0
    with contextlib.suppress(s.NotDefaultedError):
        assert s.disruption_policy(found) in DisruptionPolicy


@property_settings()
@given(json_objects())
def test_read_with_invalid_values_as_unset_any_job_gives_every_defaulted_field(
    found: dict[str, Any],
) -> None:
    """How the controller reads a job it fails (controller/job/view.py, read_invalid_spec): the
    run policy and each replica's fields always read; a port only where an mxnet container is."""
    read = apply_defaults(found, env=False, invalid_as_unset=True)
    assert s.clean_pod_policy(read) in CleanPodPolicy
    assert s.backoff_limit(read) >= 0
    assert s.disruption_policy(read) in DisruptionPolicy
    for rtype in s.replica_specs(read):
        assert s.replica_count(read, rtype) >= 0
        assert s.restart_policy(read, rtype) in RestartPolicy
        assert s.restart_scope(read, rtype) in RestartScope
        if s.mxnet_container(s.replica_template(read, rtype)) is not None:
            assert 0 < s.replica_port(read, rtype) <= 65535
