"""shared/naming.py: replica names, DNS-1035 labels, the job-name budget, job roles."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.constants import DNS1035_LABEL_MAX_LENGTH
from shared.defaults import apply_defaults
from shared.naming import (
    job_name_problem,
    job_role,
    label_key_problem,
    longest_replica_suffix,
    max_job_name_length,
    replica_name,
)
from tests.helpers.mxjobs import replica
from tests.shared.shared_samples import property_settings, train_job, tune_job

_DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")


def is_dns1035_label(value: str) -> bool:
    """A Service name Kubernetes accepts: the property the name budget exists for."""
    return len(value) <= DNS1035_LABEL_MAX_LENGTH and _DNS1035_LABEL.fullmatch(value) is not None


@pytest.mark.parametrize(
    ("job", "rtype", "index", "expected"),
    [
        ("mnist", "Scheduler", 0, "mnist-scheduler-0"),
        ("mnist", "Worker", 11, "mnist-worker-11"),
        ("tvm", "TunerServer", 3, "tvm-tunerserver-3"),
        ("tvm", "tunertracker", 0, "tvm-tunertracker-0"),
    ],
)
def test_replica_name_is_job_lower_type_index(
    job: str, rtype: str, index: int, expected: str
) -> None:
    assert replica_name(job, rtype, index) == expected


def test_max_job_name_length_leaves_room_for_the_longest_replica_suffix() -> None:
    # "-scheduler-0" (12) is longer than "-server-0" and "-worker-1".
    assert max_job_name_length(train_job()["spec"]) == 63 - len("-scheduler-0")
    assert longest_replica_suffix(train_job()["spec"]) == "-scheduler-0"


def test_max_job_name_length_counts_the_digits_of_the_highest_index() -> None:
    spec = train_job(workers=100_000)["spec"]
    assert longest_replica_suffix(spec) == "-worker-99999"
    assert max_job_name_length(spec) == 63 - len("-worker-99999")


def test_max_job_name_length_of_a_tune_job_is_bound_by_its_longest_type() -> None:
    # "-tunertracker-0" and "-tunerserver-11" are both 15 characters.
    assert max_job_name_length(tune_job(tuner_servers=12)["spec"]) == 48
    spec = tune_job(tuner_servers=1000)["spec"]
    assert longest_replica_suffix(spec) == "-tunerserver-999"
    assert max_job_name_length(spec) == 47


def test_max_job_name_length_ignores_replica_types_with_zero_replicas() -> None:
    spec = {"mxReplicaSpecs": {"TunerServer": replica(0), "Worker": replica(2)}}
    assert longest_replica_suffix(spec) == "-worker-1"


def test_max_job_name_length_counts_unset_or_malformed_replicas_as_defaulting_reads_them() -> None:
    spec = {"mxReplicaSpecs": {"Worker": replica(None), "Server": {"replicas": "7"}}}
    read = apply_defaults({"spec": spec}, env=False, invalid_as_unset=True)["spec"]
    assert longest_replica_suffix(read) == "-server-0"


def test_max_job_name_length_of_a_malformed_spec_is_the_label_limit() -> None:
    assert max_job_name_length(None) == 63
    assert max_job_name_length({"mxReplicaSpecs": []}) == 63


@property_settings()
@given(
    st.dictionaries(
        st.sampled_from(["Scheduler", "Server", "Worker", "TunerTracker", "TunerServer", "Tuner"]),
        st.integers(min_value=0, max_value=5000),
    )
)
def test_a_name_of_the_maximum_length_keeps_every_replica_name_a_label(
    counts: dict[str, int],
) -> None:
    spec = {"mxReplicaSpecs": {t: {"replicas": n} for t, n in counts.items()}}
    name = "a" * max_job_name_length(spec)
    for rtype, count in counts.items():
        for index in {0, count - 1} if count else set():
            assert is_dns1035_label(replica_name(name, rtype, index))
    assert job_name_problem(name, spec) is None
    assert job_name_problem(name + "a", spec) is not None


@pytest.mark.parametrize(
    ("mode", "rtype", "single", "role"),
    [
        ("MXTrain", "Scheduler", False, "master"),
        ("MXTrain", "Server", False, "worker"),
        ("MXTrain", "Worker", False, "worker"),
        ("MXTrain", "Worker", True, "master"),
        ("MXTrain", "worker", True, "master"),
        ("MXTrain", "Scheduler", True, "worker"),
        ("MXTune", "Tuner", False, "master"),
        ("MXTune", "TunerServer", False, "worker"),
        ("MXTune", "TunerTracker", False, "worker"),
        ("Other", "Scheduler", False, "worker"),
    ],
)
def test_job_role_marks_the_replica_whose_exit_decides_success_as_master(
    mode: str, rtype: str, single: bool, role: str
) -> None:
    assert job_role(mode, rtype, single) == role


def test_job_name_problem_requires_a_name() -> None:
    assert job_name_problem(None, {}) == "is required"
    assert job_name_problem("", {}) == "is required"


def test_job_name_problem_explains_the_dns1035_rule() -> None:
    problem = job_name_problem("My_Job", train_job()["spec"])
    assert problem is not None
    assert "DNS-1035" in problem
    assert "'My_Job'" in problem


def test_job_name_problem_states_the_limit_and_the_longest_replica_name() -> None:
    spec = train_job()["spec"]
    name = "a" * 52
    problem = job_name_problem(name, spec)
    assert problem is not None
    assert "at most 51 characters" in problem
    assert "got 52" in problem
    assert f"{name}-scheduler-0" in problem
    assert job_name_problem("a" * 51, spec) is None


@pytest.mark.parametrize(
    ("key", "why"),
    [
        ("rack", None),
        ("topology.kubernetes.io/zone", None),
        ("a" * 63, None),
        ("a" * 64, "at most 63 characters"),
        ("/rack", "must not start with '/'"),
        ("UPPER.example/rack", "DNS subdomain"),
        ("rack-", "starting and ending with a letter or digit"),
        ("", "must have a name"),
    ],
)
def test_label_keys_are_kubernetes_qualified_names(key: str, why: str | None) -> None:
    found = label_key_problem(key)
    assert (found is None) if why is None else (found is not None and why in found)
