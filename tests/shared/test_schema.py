"""shared/schema.py: a valid Draft 2020-12 schema whose enums and integers match the API."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from shared.constants import CleanPodPolicy, JobMode, RestartPolicy, SuccessPolicy
from shared.defaults import apply_defaults
from shared.schema import RUN_POLICY_PROPERTIES, SCHEMA, VALIDATOR, conforms, inline_refs
from tests.fuzz.strategies import any_mxjobs, json_values
from tests.shared.shared_samples import property_settings, train_job


def test_schema_is_a_valid_draft_2020_12_schema() -> None:
    Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_schema_enums_are_the_constants() -> None:
    spec = SCHEMA["properties"]["spec"]["properties"]
    assert spec["jobMode"]["enum"] == ["", *(m.value for m in JobMode)]
    assert spec["successPolicy"]["enum"] == [p.value for p in SuccessPolicy]
    assert RUN_POLICY_PROPERTIES["cleanPodPolicy"]["enum"] == [p.value for p in CleanPodPolicy]
    replica = SCHEMA["$defs"]["replicaSpec"]["properties"]
    assert replica["restartPolicy"]["enum"] == [p.value for p in RestartPolicy]


def test_run_policy_fields_are_described_both_nested_and_under_spec() -> None:
    spec = SCHEMA["properties"]["spec"]["properties"]
    nested = dict(spec["runPolicy"]["properties"])
    # v1's own: the standalone shape under spec never had them.
    assert nested.pop("disruptionPolicy") == {"type": "string", "enum": ["Ignore", "Count"]}
    assert nested.pop("progressDeadlineSeconds") == {"type": "integer", "minimum": 1}
    assert nested == RUN_POLICY_PROPERTIES
    assert "disruptionPolicy" not in spec
    assert "progressDeadlineSeconds" not in spec
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


@pytest.mark.parametrize("replicas", [True, False, 1.0, 2.5, "1", None, -1])
def test_the_compiled_check_refuses_what_the_validator_refuses(replicas: Any) -> None:
    found = train_job()
    found["spec"]["mxReplicaSpecs"]["Worker"]["replicas"] = replicas
    assert not conforms(found)


def test_the_compiled_check_accepts_a_valid_job_and_its_defaulted_form() -> None:
    assert conforms(train_job())
    assert conforms(apply_defaults(train_job()))


def test_the_compiled_check_never_writes_into_the_job() -> None:
    found = train_job()
    before = repr(found)
    conforms(found)
    assert repr(found) == before


@property_settings(max_examples=400)
@given(document=st.one_of(any_mxjobs(), json_values))
def test_the_compiled_check_agrees_with_the_validator(document: Any) -> None:
    # Validation trusts `conforms` to skip the error listing: a disagreement would either let
    # a malformed job through unreported or refuse a job without saying why.
    assert conforms(document) == (not any(True for _ in VALIDATOR.iter_errors(document)))


def test_inlining_leaves_no_reference_and_keeps_every_check() -> None:
    inlined = inline_refs(SCHEMA)
    assert "$ref" not in json.dumps(inlined)
    assert "$defs" not in inlined
    replica = inlined["properties"]["spec"]["properties"]["mxReplicaSpecs"]["additionalProperties"]
    container = replica["properties"]["template"]["properties"]["spec"]["properties"]["containers"]
    assert container["items"] == SCHEMA["$defs"]["container"] | {
        "properties": {
            **SCHEMA["$defs"]["container"]["properties"],
            "env": {"type": "array", "items": SCHEMA["$defs"]["envVar"]},
            "ports": {"type": "array", "items": SCHEMA["$defs"]["containerPort"]},
        }
    }


def test_inlining_refuses_a_reference_it_cannot_resolve() -> None:
    with pytest.raises(ValueError, match="#/\\$defs/missing"):
        inline_refs({"$defs": {}, "properties": {"a": {"$ref": "#/$defs/missing"}}})
