"""shared/schema.py: a valid Draft 2020-12 schema whose enums and integers match the API."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from shared.constants import CleanPodPolicy, JobMode, RestartPolicy, SuccessPolicy
from shared.schema import RUN_POLICY_PROPERTIES, SCHEMA, VALIDATOR
from tests.shared.shared_samples import train_job


def test_schema_is_a_valid_draft_2020_12_schema() -> None:
    Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_schema_enums_are_the_constants() -> None:
    spec = SCHEMA["properties"]["spec"]["properties"]
    assert spec["jobMode"]["enum"] == [m.value for m in JobMode]
    assert spec["successPolicy"]["enum"] == [p.value for p in SuccessPolicy]
    assert RUN_POLICY_PROPERTIES["cleanPodPolicy"]["enum"] == [p.value for p in CleanPodPolicy]
    replica = SCHEMA["$defs"]["replicaSpec"]["properties"]
    assert replica["restartPolicy"]["enum"] == [p.value for p in RestartPolicy]


def test_run_policy_fields_are_described_both_nested_and_under_spec() -> None:
    spec = SCHEMA["properties"]["spec"]["properties"]
    assert spec["runPolicy"]["properties"] == RUN_POLICY_PROPERTIES
    for field, schema in RUN_POLICY_PROPERTIES.items():
        assert spec[field] == schema


def test_a_valid_job_has_no_schema_errors() -> None:
    assert list(VALIDATOR.iter_errors(train_job())) == []


@pytest.mark.parametrize("replicas", [True, False, 1.0, 2.5, "1", None])
def test_integers_are_strict_json_integers(replicas: Any) -> None:
    found = train_job()
    found["spec"]["mxReplicaSpecs"]["Worker"]["replicas"] = replicas
    errors = list(VALIDATOR.iter_errors(found))
    assert [e.validator for e in errors] == ["type"]
    assert list(errors[0].absolute_path) == ["spec", "mxReplicaSpecs", "Worker", "replicas"]
