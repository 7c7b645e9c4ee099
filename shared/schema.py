"""JSON Schema (Draft 2020-12) of the MXJob fields the operator reads.

Validation checks JSON types with this schema before any rule reads a field, so the rules
can assume the shapes and malformed input becomes a violation instead of an exception. Only
the fields we own are described; the rest of the pod template is the API server's business
(the CRD's structural schema and pod validation).

JSON Schema treats `1.0` as an integer and Python treats `True` as one; Kubernetes accepts
neither as a replica count, so the validator here uses a strict integer type.

Two validators over the one schema, because admission pays for every review:

- `conforms` is the schema compiled to Python code by fastjsonschema (the benchmark's
  three-template job: ~25 µs, where jsonschema's walk takes ~590 µs): a yes/no answer for the
  common case, a job that is well-formed.
- `VALIDATOR` (jsonschema) lists *every* violation with its path, for the refusal message; it
  only runs when `conforms` said no.

The compiled one reads the schema as Draft 4, whose `integer` excludes `1.0` (and, in
fastjsonschema, `True`), i.e. the same strict integer as `VALIDATOR`; every keyword the schema
uses means the same in Draft 4 and 2020-12. `tests/shared/test_schema.py` checks that the two
agree on generated jobs.
"""

from __future__ import annotations

from typing import Any

import fastjsonschema
from jsonschema import Draft202012Validator, validators
from jsonschema.protocols import Validator

from shared.constants import (
    CleanPodPolicy,
    DisruptionPolicy,
    JobMode,
    RestartPolicy,
    RestartScope,
    SuccessPolicy,
)
from shared.spec import is_int

_NON_NEGATIVE_INTEGER: dict[str, Any] = {"type": "integer", "minimum": 0}
_STRING_MAP: dict[str, Any] = {"type": "object", "additionalProperties": {"type": "string"}}

RUN_POLICY_PROPERTIES: dict[str, Any] = {
    "cleanPodPolicy": {"type": "string", "enum": [p.value for p in CleanPodPolicy]},
    "ttlSecondsAfterFinished": _NON_NEGATIVE_INTEGER,
    "activeDeadlineSeconds": _NON_NEGATIVE_INTEGER,
    "backoffLimit": _NON_NEGATIVE_INTEGER,
    "suspend": {"type": "boolean"},
    # Other fields of training-operator v1.8's SchedulingPolicy keep any value, as there; the
    # two that name objects are checked further in shared.scheduling_policy.
    "schedulingPolicy": {
        "type": "object",
        "properties": {"topologyKey": {"type": "string"}, "priorityClass": {"type": "string"}},
    },
    "managedBy": {"type": "string"},
}

SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["spec"],
    "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "generateName": {"type": "string"},
                "annotations": _STRING_MAP,
                "labels": _STRING_MAP,
            },
        },
        "spec": {
            "type": "object",
            "required": ["mxReplicaSpecs"],
            "properties": {
                # "" or absent: MXTrain (shared.defaults.DEFAULT_JOB_MODE), as
                # training-operator's SDK sends.
                "jobMode": {"type": "string", "enum": ["", *(m.value for m in JobMode)]},
                "mxReplicaSpecs": {
                    "type": "object",
                    "additionalProperties": {"$ref": "#/$defs/replicaSpec"},
                },
                "runPolicy": {
                    "type": "object",
                    "properties": {
                        **RUN_POLICY_PROPERTIES,
                        # v1's runPolicy only: the standalone shape never had them.
                        "disruptionPolicy": {
                            "type": "string",
                            "enum": [p.value for p in DisruptionPolicy],
                        },
                        "progressDeadlineSeconds": {"type": "integer", "minimum": 1},
                    },
                },
                "successPolicy": {"type": "string", "enum": [p.value for p in SuccessPolicy]},
                # The standalone mxnet-operator v1 shape; defaulting moves these to runPolicy.
                **RUN_POLICY_PROPERTIES,
            },
        },
    },
    "$defs": {
        "replicaSpec": {
            "type": "object",
            "required": ["template"],
            "properties": {
                "replicas": _NON_NEGATIVE_INTEGER,
                "restartPolicy": {"type": "string", "enum": [p.value for p in RestartPolicy]},
                "restartScope": {"type": "string", "enum": [s.value for s in RestartScope]},
                "template": {"$ref": "#/$defs/podTemplate"},
            },
        },
        "podTemplate": {
            "type": "object",
            "required": ["spec"],
            "properties": {
                "metadata": {
                    "type": "object",
                    "properties": {"annotations": _STRING_MAP, "labels": _STRING_MAP},
                },
                "spec": {
                    "type": "object",
                    "required": ["containers"],
                    "properties": {
                        "containers": {
                            "type": "array",
                            "minItems": 1,
                            "items": {"$ref": "#/$defs/container"},
                        },
                        "initContainers": {
                            "type": "array",
                            "items": {"$ref": "#/$defs/container"},
                        },
                    },
                },
            },
        },
        "container": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "image": {"type": "string"},
                "env": {"type": "array", "items": {"$ref": "#/$defs/envVar"}},
                "ports": {"type": "array", "items": {"$ref": "#/$defs/containerPort"}},
            },
        },
        "envVar": {
            "type": "object",
            "required": ["name"],
            "properties": {
                "name": {"type": "string"},
                "value": {"type": "string"},
                "valueFrom": {"type": "object"},
            },
        },
        "containerPort": {
            "type": "object",
            "required": ["containerPort"],
            "properties": {
                "name": {"type": "string"},
                "containerPort": {"type": "integer", "minimum": 1, "maximum": 65535},
            },
        },
    },
}

_STRICT_TYPES = Draft202012Validator.TYPE_CHECKER.redefine(
    "integer", lambda _checker, instance: is_int(instance)
)
# `extend` is the documented way to change a validator's types; its stub is untyped.
StrictValidator: type[Validator] = validators.extend(  # type: ignore[no-untyped-call]
    Draft202012Validator, type_checker=_STRICT_TYPES
)

VALIDATOR: Validator = StrictValidator(SCHEMA)


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with every `#/$defs/...` reference replaced by the definition it names.

    For the compiled check: fastjsonschema turns each `$ref` into a function call that formats
    the item's path into a string (`data.env[3]`) for a message we never show, once per array
    item; inlined, the same checks run in one function about 2.5x faster (a defaulted job of
    twelve container templates: 189 µs -> 66 µs). The schema has no recursive definitions.
    """
    definitions = schema.get("$defs", {})
    prefix = "#/$defs/"

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                if not ref.startswith(prefix) or ref[len(prefix) :] not in definitions:
                    raise ValueError(f"cannot inline the reference {ref!r}")
                return resolve(definitions[ref[len(prefix) :]])
            return {key: resolve(value) for key, value in node.items() if key != "$defs"}
        if isinstance(node, list):
            return [resolve(item) for item in node]
        return node

    result: dict[str, Any] = resolve(schema)
    return result


_COMPILED_SCHEMA = {**inline_refs(SCHEMA), "$schema": "http://json-schema.org/draft-04/schema#"}
# use_default=False: the schema has no defaults, and a check must never write into a job.
_fast_check = fastjsonschema.compile(_COMPILED_SCHEMA, use_default=False, detailed_exceptions=False)


def conforms(instance: object) -> bool:
    """Whether `instance` passes the schema (as `VALIDATOR` would), without listing why not."""
    try:
        _fast_check(instance)
    except fastjsonschema.JsonSchemaValueException:
        return False
    return True
