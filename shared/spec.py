"""Typed accessors over a plain-dict MXJob.

Two kinds of reader. The structural ones (which replica types, which container, which mode, the
run policy's optional fields) are total: the webhook walks MXJobs straight off the wire with
them, and on a malformed field they answer "none" and never raise; validation reports the
malformation.

The readers of a field defaulting writes (`replicas`, `restartPolicy`, `restartScope`, the mxnet
container's `mxjob-port`, `cleanPodPolicy`, `backoffLimit`, `disruptionPolicy`) take a defaulted
job and hold no default of their own: every default is written once, in shared/defaults.py. On a
job without the field, or with a value the field does not allow, they raise
:class:`NotDefaultedError`. Their callers read jobs defaulting made: the webhook validates a job
read through ``apply_defaults(job, env=False, invalid_as_unset=True)`` (shared/validation.py),
and the controller reads every stored job through ``apply_defaults`` (controller/job/memory.py).
The validity tests (:func:`is_count`, :func:`is_port`, :func:`is_member`) are the ones
defaulting's ``invalid_as_unset`` uses, so the two cannot disagree on what a value means.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Final, TypedDict, TypeGuard, TypeVar, cast

from shared.constants import (
    CONTAINER_NAME,
    POD_START_TIMEOUT_ANNOTATION,
    PORT_NAME,
    RUN_POLICY_FIELDS,
    TUNER_SERVER_KEY_ANNOTATION,
    CleanPodPolicy,
    DisruptionPolicy,
    JobMode,
    ReplicaType,
    RestartPolicy,
    RestartScope,
    SuccessPolicy,
)

_CANONICAL_BY_FOLDED: dict[str, ReplicaType] = {t.value.lower(): t for t in ReplicaType}

_Value = TypeVar("_Value", bound=StrEnum)


class NotDefaultedError(ValueError):
    """A reader that takes a defaulted job was given a job without the field it reads (or with
    a value the field does not allow): defaulting (shared.defaults.apply_defaults) was skipped,
    or the job is invalid and was not read with ``invalid_as_unset``."""


_READ_DEFAULTED: Final = (
    "read a job defaulted by shared.defaults.apply_defaults (invalid_as_unset for one that may "
    "be invalid)"
)


def is_member(value: object, kind: type[StrEnum]) -> bool:
    """True for a string that is one of ``kind``'s values."""
    return isinstance(value, str) and value in kind.__members__.values()


def is_count(value: object) -> TypeGuard[int]:
    """A non-negative JSON integer: what ``replicas`` and ``backoffLimit`` allow."""
    return is_int(value) and value >= 0


def is_port(value: object) -> TypeGuard[int]:
    """A JSON integer from 1 to 65535: what a ``containerPort`` allows."""
    return is_int(value) and 0 < value <= 65535


def _defaulted(value: object, kind: type[_Value], path: str) -> _Value:
    """``value`` as a member of ``kind``, as defaulting leaves it; else NotDefaultedError."""
    if is_member(value, kind):
        return kind(cast(str, value))
    raise NotDefaultedError(
        f"{path} is {value!r}, not one of {', '.join(m.value for m in kind)}: {_READ_DEFAULTED}"
    )


def _defaulted_count(value: object, path: str) -> int:
    """``value`` as a count, as defaulting leaves it; else NotDefaultedError."""
    if is_count(value):
        return value
    raise NotDefaultedError(f"{path} is {value!r}, not an integer of at least 0: {_READ_DEFAULTED}")


class RunPolicy(TypedDict, total=False):
    """`spec.runPolicy` of v1; every field optional, as in the API."""

    cleanPodPolicy: str
    ttlSecondsAfterFinished: int
    activeDeadlineSeconds: int
    backoffLimit: int
    suspend: bool
    schedulingPolicy: dict[str, Any]
    managedBy: str
    disruptionPolicy: str
    progressDeadlineSeconds: int


def is_int(value: object) -> TypeGuard[int]:
    """True for a JSON integer. `bool` is a subclass of `int` in Python but not in JSON."""
    return isinstance(value, int) and not isinstance(value, bool)


def as_mapping(value: object) -> Mapping[str, Any]:
    """`value` if it is a mapping, else an empty one: lets accessors walk malformed objects."""
    return value if isinstance(value, Mapping) else {}


def canonical_replica_type(key: object) -> ReplicaType | None:
    """The replica type a `mxReplicaSpecs` key names (case-insensitively), or None."""
    if not isinstance(key, str):
        return None
    return _CANONICAL_BY_FOLDED.get(key.lower())


def job_name(job: Mapping[str, Any]) -> str:
    """`metadata.name`, or "" when missing (then validation rejects the job)."""
    name = as_mapping(job.get("metadata")).get("name")
    return name if isinstance(name, str) else ""


def job_mode(job: Mapping[str, Any]) -> JobMode | None:
    """`spec.jobMode` of a defaulted job if it is one of the modes, else None (no mode: the job
    is invalid). Defaulting writes MXTrain for an unset one (shared.defaults.apply_defaults)."""
    mode = as_mapping(job.get("spec")).get("jobMode")
    return JobMode(cast(str, mode)) if is_member(mode, JobMode) else None


def spec_replica_specs(spec: object) -> dict[str, dict[str, Any]]:
    """The replica specs of a job *spec*, keyed by canonical replica type, in canonical order.

    Keys are matched case-insensitively because defaulting rewrites them canonically; when a
    spec has both `Worker` and `worker`, the canonical spelling wins (validation reports the
    duplicate). Unknown keys and non-object values are left out.
    """
    raw = as_mapping(as_mapping(spec).get("mxReplicaSpecs"))
    found: dict[ReplicaType, dict[str, Any]] = {}
    for key, value in raw.items():
        rtype = canonical_replica_type(key)
        if rtype is None or not isinstance(value, dict):
            continue
        if rtype in found and key != rtype.value:
            continue
        found[rtype] = value
    return {rtype: found[rtype] for rtype in ReplicaType if rtype in found}


def replica_specs(job: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The job's replica specs keyed by canonical replica type (see `spec_replica_specs`)."""
    return spec_replica_specs(job.get("spec"))


def replica_spec(job: Mapping[str, Any], replica_type: str) -> dict[str, Any] | None:
    """One replica spec, looked up case-insensitively; None when the job has no such type."""
    rtype = canonical_replica_type(replica_type)
    if rtype is None:
        return None
    return replica_specs(job).get(rtype)


def spec_replica_count(rspec: Mapping[str, Any] | None) -> int:
    """`replicas` of one defaulted replica spec, 0 if the type is absent (None).

    Raises NotDefaultedError when the count is not set or not a count."""
    if rspec is None:
        return 0
    return _defaulted_count(rspec.get("replicas"), "spec.mxReplicaSpecs[*].replicas")


def replica_count(job: Mapping[str, Any], replica_type: str) -> int:
    """How many pods of this replica type the job runs (0 when the type is absent)."""
    return spec_replica_count(replica_spec(job, replica_type))


def replica_template(job: Mapping[str, Any], replica_type: str) -> dict[str, Any] | None:
    """The pod template of a replica type, if it is an object."""
    template = as_mapping(replica_spec(job, replica_type)).get("template")
    return template if isinstance(template, dict) else None


def containers(template: Mapping[str, Any] | None) -> list[Any]:
    """`template.spec.containers` as a list (empty when missing or malformed)."""
    found = as_mapping(as_mapping(template).get("spec")).get("containers")
    return found if isinstance(found, list) else []


def mxnet_container(template: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The container named `mxnet`, or the sole unnamed container (which defaulting names so).

    Recognising the sole unnamed container keeps the raw job and its defaulted form in
    agreement about ports and env, so validation can run before or after defaulting.
    """
    found = containers(template)
    for container in found:
        if isinstance(container, dict) and container.get("name") == CONTAINER_NAME:
            return container
    if len(found) == 1 and isinstance(found[0], dict) and not found[0].get("name"):
        return found[0]
    return None


def container_port(container: Mapping[str, Any] | None) -> int:
    """The `containerPort` of the defaulted mxnet container's port named `mxjob-port`.

    Raises NotDefaultedError when there is no such container or port, or no valid number."""
    ports = as_mapping(container).get("ports")
    number: object = None
    if isinstance(ports, list):
        named = (p for p in ports if isinstance(p, Mapping) and p.get("name") == PORT_NAME)
        number = as_mapping(next(named, None)).get("containerPort")
    if is_port(number):
        return number
    raise NotDefaultedError(
        f"the {PORT_NAME} containerPort of the {CONTAINER_NAME} container is {number!r}, not "
        f"an integer from 1 to 65535: {_READ_DEFAULTED}"
    )


def replica_port(job: Mapping[str, Any], replica_type: str) -> int:
    """The port a replica type listens on: its mxnet container's `mxjob-port`, in a defaulted
    job (raises NotDefaultedError otherwise, as :func:`container_port`)."""
    return container_port(mxnet_container(replica_template(job, replica_type)))


def tuner_server_key(template: Mapping[str, Any] | None) -> str | None:
    """The TVM tuner-server key annotated on a pod template, when set to a non-empty string."""
    annotations = as_mapping(as_mapping(as_mapping(template).get("metadata")).get("annotations"))
    key = annotations.get(TUNER_SERVER_KEY_ANNOTATION)
    return key if isinstance(key, str) and key else None


def restart_policy(job: Mapping[str, Any], replica_type: str) -> RestartPolicy:
    """A replica type's `restartPolicy` in a defaulted job. Raises NotDefaultedError when it is
    not set or not a policy: training-operator v1.8.1's CRD has no enum, so a job it stored may
    carry another value, and the controller reads such a job with ``invalid_as_unset`` to fail
    it (controller/job/memory.py)."""
    value = as_mapping(replica_spec(job, replica_type)).get("restartPolicy")
    return _defaulted(value, RestartPolicy, f"spec.mxReplicaSpecs.{replica_type}.restartPolicy")


def restart_scope(job: Mapping[str, Any], replica_type: str) -> RestartScope:
    """What a retryable end of this replica type restarts (`restartScope`), in a defaulted job
    (the default of each type, and why: shared.defaults.DEFAULT_RESTART_SCOPES).

    Raises NotDefaultedError when the job has no such replica type or the field is not set."""
    value = as_mapping(replica_spec(job, replica_type)).get("restartScope")
    return _defaulted(value, RestartScope, f"spec.mxReplicaSpecs.{replica_type}.restartScope")


def disruption_policy(job: Mapping[str, Any]) -> DisruptionPolicy:
    """`runPolicy.disruptionPolicy` of a defaulted job: whether a restart a disruption caused
    counts against backoffLimit. Raises NotDefaultedError when the field is not set."""
    value = as_mapping(as_mapping(job.get("spec")).get("runPolicy")).get("disruptionPolicy")
    return _defaulted(value, DisruptionPolicy, "spec.runPolicy.disruptionPolicy")


def run_policy(job: Mapping[str, Any]) -> RunPolicy:
    """The effective run policy: `spec.runPolicy`, plus fields still written under `spec`.

    Defaulting moves top-level fields under `runPolicy`; reading both lets the controller act
    on a job that was stored without passing through the mutating webhook.
    """
    spec = as_mapping(job.get("spec"))
    nested = as_mapping(spec.get("runPolicy"))
    policy: dict[str, Any] = {}
    for field in RUN_POLICY_FIELDS:
        if nested.get(field) is not None:
            policy[field] = nested[field]
        elif spec.get(field) is not None:
            policy[field] = spec[field]
    return cast(RunPolicy, policy)


def clean_pod_policy(job: Mapping[str, Any]) -> CleanPodPolicy:
    """`runPolicy.cleanPodPolicy` of a defaulted job (raises NotDefaultedError otherwise)."""
    value = run_policy(job).get("cleanPodPolicy")
    return _defaulted(value, CleanPodPolicy, "spec.runPolicy.cleanPodPolicy")


def backoff_limit(job: Mapping[str, Any]) -> int:
    """`runPolicy.backoffLimit` of a defaulted job (raises NotDefaultedError otherwise)."""
    return _defaulted_count(run_policy(job).get("backoffLimit"), "spec.runPolicy.backoffLimit")


def _optional_seconds(value: object) -> int | None:
    return value if is_int(value) and value >= 0 else None


def active_deadline_seconds(job: Mapping[str, Any]) -> int | None:
    """`runPolicy.activeDeadlineSeconds`, None when unset (no deadline)."""
    return _optional_seconds(run_policy(job).get("activeDeadlineSeconds"))


def progress_deadline_seconds(job: Mapping[str, Any]) -> int | None:
    """`runPolicy.progressDeadlineSeconds` (v1's runPolicy only), None when unset: the job is
    never restarted for a lack of progress reports."""
    value = as_mapping(as_mapping(job.get("spec")).get("runPolicy")).get("progressDeadlineSeconds")
    return value if is_int(value) and value >= 1 else None


def pod_start_timeout_override(job: Mapping[str, Any]) -> int | None:
    """The job's :data:`~shared.constants.POD_START_TIMEOUT_ANNOTATION` in seconds; None when
    absent or not a non-negative integer (the webhook refuses such a value)."""
    annotations = as_mapping(as_mapping(job.get("metadata")).get("annotations"))
    raw = annotations.get(POD_START_TIMEOUT_ANNOTATION)
    return int(raw) if isinstance(raw, str) and raw.isdigit() else None


def ttl_seconds_after_finished(job: Mapping[str, Any]) -> int | None:
    """`runPolicy.ttlSecondsAfterFinished`, None when unset (keep the finished job)."""
    return _optional_seconds(run_policy(job).get("ttlSecondsAfterFinished"))


def is_suspended(job: Mapping[str, Any]) -> bool:
    """`runPolicy.suspend` is true."""
    return run_policy(job).get("suspend") is True


def success_policy(job: Mapping[str, Any]) -> SuccessPolicy:
    """`spec.successPolicy` (default "": the Scheduler, Tuner or single Worker decides)."""
    value = as_mapping(job.get("spec")).get("successPolicy")
    if isinstance(value, str) and value in SuccessPolicy.__members__.values():
        return SuccessPolicy(value)
    return SuccessPolicy.DEFAULT
