"""The MXJob CRD's CEL rules (``x-kubernetes-validations`` on ``spec``): what the API server
checks even when the webhooks are not registered or fail open
(docs/explanation/architecture.md, step 3)."""

from __future__ import annotations

from typing import Any

from shared.constants import (
    MODE_REPLICA_TYPES,
    JobMode,
)


def _cel_list(values: list[str]) -> str:
    return "[" + ", ".join(f"'{v}'" for v in values) + "]"


def _effective_mode(var: str) -> str:
    """The job's mode as CEL: absent and "" both mean MXTrain (`shared.spec.job_mode`)."""
    return (
        f"(has({var}.jobMode) && {var}.jobMode != '' ? {var}.jobMode : '{JobMode.MXTRAIN.value}')"
    )


def spec_rules() -> list[dict[str, Any]]:
    """CEL rules the API server checks itself: defence in depth behind the validating webhook.

    Only rules that are cheap and exact as CEL, each also in `shared/validation.py` (which gives
    the fuller message when the webhook runs). They hold even when the webhook configurations are
    missing or set to failurePolicy Ignore. The API server evaluates them after the mutating
    webhook, so keys are already canonical then; they are compared case-insensitively anyway, as
    the controller reads them (`shared.spec.canonical_replica_type`).
    """
    tune = [t.value.lower() for t in MODE_REPLICA_TYPES[JobMode.MXTUNE]]
    train = [t.value.lower() for t in MODE_REPLICA_TYPES[JobMode.MXTRAIN]]
    mode = _effective_mode("self")
    return [
        {
            "rule": f"{mode} == {_effective_mode('oldSelf')}",
            "message": "jobMode is immutable",
            "fieldPath": ".jobMode",
            "reason": "FieldValueForbidden",
        },
        {
            "rule": (
                f"self.mxReplicaSpecs.all(k, k.lowerAscii() in ({mode} == "
                f"'{JobMode.MXTUNE.value}' ? {_cel_list(tune)} : {_cel_list(train)}))"
            ),
            "message": (
                "keys must be replica types of the job's mode: Scheduler, Server, Worker "
                "(MXTrain) or TunerTracker, TunerServer, Tuner (MXTune)"
            ),
            "fieldPath": ".mxReplicaSpecs",
        },
    ]
