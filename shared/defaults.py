"""Defaulting of an MXJob (the mutating webhook): a new, complete object, idempotently.

Every default the operator applies is written here: the mutating webhook stores the result, and
the controller applies the same function to a job stored without it (one taken over from
training-operator, or stored before a default was added: controller/job/memory.py). So the
readers of shared/spec.py are given defaulted jobs, and those of the defaults never written
before (`restartScope`, `runPolicy.disruptionPolicy`) hold no copy of them.

The order matters. Structural defaults come first (canonical replica keys, replicas, the
mxnet container's name and port) because the env is computed from them: MX_CONFIG lists every
replica with its port, DMLC_NUM_WORKER counts workers. The env is then recomputed from the
result on every pass, so a second pass changes nothing and an UPDATE that scales a replica
type gets fresh counts.

Nothing here raises on malformed input: what cannot be defaulted is left for validation to
report with its path. A reader of a job that may be invalid asks for ``invalid_as_unset``: a
value the field does not allow is then replaced by the default, as if unset. Validation reads
the job so to judge names and env against the counts and ports defaulting would give
(shared/validation.py), and the controller to act on a stored job it fails
(controller/job/memory.py); neither result is ever stored.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from enum import StrEnum
from typing import Any, Final

from shared.constants import (
    CONTAINER_NAME,
    MODE_REPLICA_TYPES,
    OWNED_ENV_NAMES,
    PORT_NAME,
    RUN_POLICY_FIELDS,
    CleanPodPolicy,
    DisruptionPolicy,
    JobMode,
    RestartPolicy,
    RestartScope,
)
from shared.env import job_layout, layout_env, owned_entries
from shared.jsontree import copy_json
from shared.queueing import MULTIKUEUE
from shared.spec import (
    NotDefaultedError,
    canonical_replica_type,
    is_count,
    is_member,
    is_port,
    job_mode,
    mxnet_container,
)

DEFAULT_JOB_MODE: Final = JobMode.MXTRAIN
"""``spec.jobMode``."""
DEFAULT_REPLICAS: Final = 1
"""``mxReplicaSpecs.<type>.replicas``."""
DEFAULT_RESTART_POLICY: Final = RestartPolicy.EXIT_CODE
"""``mxReplicaSpecs.<type>.restartPolicy``: the exit code decides (docs/reference/exit-codes)."""
DEFAULT_PORT: Final = 9091
"""The ``containerPort`` of the mxnet container's ``mxjob-port``."""
DEFAULT_CLEAN_POD_POLICY: Final = CleanPodPolicy.RUNNING
"""``runPolicy.cleanPodPolicy``: finished pods stay, for ``kubectl logs``."""
DEFAULT_BACKOFF_LIMIT: Final = 6
"""``runPolicy.backoffLimit``."""

DEFAULT_DISRUPTION_POLICY: Final = DisruptionPolicy.IGNORE
"""``runPolicy.disruptionPolicy``: a restart a disruption caused does not count against
``backoffLimit``, as a batch Job's podFailurePolicy rule ``Ignore`` for ``DisruptionTarget``."""

_SCOPE_BY_MODE: Final = {JobMode.MXTRAIN: RestartScope.JOB, JobMode.MXTUNE: RestartScope.REPLICA}

DEFAULT_RESTART_SCOPES: Final = {
    rtype: _SCOPE_BY_MODE[mode] for mode, types in MODE_REPLICA_TYPES.items() for rtype in types
}
"""``mxReplicaSpecs.<type>.restartScope`` by replica type: what the real programs survive
(docs/explanation/recovery.md, "What a retry restarts"). ps-lite never readmits a scheduler, a
new server starts without the parameters and a new worker rejoins only through heartbeats and
then at step 0, so every MXTrain replica restarts the whole job (``Job``); TVM's tracker
re-registers servers that outlive it and takes a new server under its key, and a tuner is a
client of both, so every MXTune replica is replaced alone (``Replica``). Keyed by type rather
than by ``jobMode``: each type belongs to one mode, and a job whose mode is not one of them still
gets a scope for each of its types while validation reports the mode."""


def _unset(mapping: Mapping[str, Any], key: str) -> bool:
    """Kubernetes reads a missing field, null and (for strings) "" as unset."""
    return mapping.get(key) in (None, "")


def _wants_default(
    mapping: Mapping[str, Any], key: str, valid: Callable[[object], bool], *, invalid_as_unset: bool
) -> bool:
    """Unset, or (``invalid_as_unset``) set to a value ``valid`` refuses."""
    return _unset(mapping, key) or (invalid_as_unset and not valid(mapping[key]))


def _count_wants_default(mapping: Mapping[str, Any], key: str, *, invalid_as_unset: bool) -> bool:
    """A count is unset only when missing or null: "" is a wrong type validation reports."""
    value = mapping.get(key)
    return value is None or (invalid_as_unset and not is_count(value))


def _member_of(kind: type[StrEnum]) -> Callable[[object], bool]:
    return lambda value: is_member(value, kind)


def canonicalize_replica_keys(spec: dict[str, Any]) -> None:
    """Rewrite `worker` as `Worker` etc., keeping order; a key whose canonical spelling is
    already taken stays as written so validation can report the duplicate."""
    replicas = spec.get("mxReplicaSpecs")
    if not isinstance(replicas, dict):
        return
    rewritten: dict[str, Any] = {}
    for key, value in replicas.items():
        rtype = canonical_replica_type(key)
        canonical = rtype.value if rtype is not None else key
        if canonical != key and (canonical in replicas or canonical in rewritten):
            canonical = key
        rewritten[canonical] = value
    spec["mxReplicaSpecs"] = rewritten


def move_run_policy(spec: dict[str, Any]) -> None:
    """Move run-policy fields written directly under `spec` into `spec.runPolicy`.

    A field set in both places with the same value is dropped from `spec`; with different
    values both stay, and validation reports the conflict rather than guessing which one the
    user meant.
    """
    if "runPolicy" in spec and not isinstance(spec["runPolicy"], dict):
        return
    policy: dict[str, Any] = spec.get("runPolicy") or {}
    place_multikueue_manager(spec, policy)
    for field in RUN_POLICY_FIELDS:
        if field not in spec or (field == "managedBy" and spec[field] == MULTIKUEUE):
            continue
        if field not in policy:
            policy[field] = spec.pop(field)
        elif policy[field] == spec[field]:
            del spec[field]
    spec["runPolicy"] = policy


def place_multikueue_manager(spec: dict[str, Any], policy: dict[str, Any]) -> None:
    """MultiKueue's ``managedBy`` value goes to ``spec.managedBy``, the one path MultiKueue
    reads (shared/queueing.py says why); ``runPolicy.managedBy`` keeps any other value."""
    if policy.get("managedBy") != MULTIKUEUE:
        return
    if "managedBy" not in spec:
        spec["managedBy"] = policy.pop("managedBy")
    elif spec["managedBy"] == MULTIKUEUE:
        del policy["managedBy"]


def default_run_policy(spec: dict[str, Any], *, invalid_as_unset: bool = False) -> None:
    """cleanPodPolicy, backoffLimit and disruptionPolicy: the DEFAULT_* above."""
    policy = spec.get("runPolicy")
    if not isinstance(policy, dict):
        return
    wants = functools.partial(_wants_default, policy, invalid_as_unset=invalid_as_unset)
    if wants("cleanPodPolicy", _member_of(CleanPodPolicy)):
        policy["cleanPodPolicy"] = DEFAULT_CLEAN_POD_POLICY.value
    if _count_wants_default(policy, "backoffLimit", invalid_as_unset=invalid_as_unset):
        policy["backoffLimit"] = DEFAULT_BACKOFF_LIMIT
    if wants("disruptionPolicy", _member_of(DisruptionPolicy)):
        policy["disruptionPolicy"] = DEFAULT_DISRUPTION_POLICY.value


def default_container(template: dict[str, Any], *, invalid_as_unset: bool = False) -> None:
    """Name a sole unnamed container `mxnet`; give the mxnet container its `mxjob-port`."""
    pod_spec = template.get("spec")
    if not isinstance(pod_spec, dict):
        return
    containers = pod_spec.get("containers")
    if not isinstance(containers, list):
        return
    if len(containers) == 1 and isinstance(containers[0], dict) and _unset(containers[0], "name"):
        containers[0]["name"] = CONTAINER_NAME
    container = mxnet_container(template)
    if container is None:
        return
    ports = container.get("ports")
    if ports is None:
        ports = container["ports"] = []
    if not isinstance(ports, list):
        return
    named = next((p for p in ports if isinstance(p, dict) and p.get("name") == PORT_NAME), None)
    if named is None:
        ports.append({"name": PORT_NAME, "containerPort": DEFAULT_PORT})
    elif invalid_as_unset and not is_port(named.get("containerPort")):
        named["containerPort"] = DEFAULT_PORT


def replicas_as_read(rspec: Mapping[str, Any]) -> int:
    """A replica spec's count as ``invalid_as_unset`` defaulting reads it, without a copy of
    the job: for a reader that needs only the counts (shared.validation.replica_total_violations,
    on every job the controller reads)."""
    if _count_wants_default(rspec, "replicas", invalid_as_unset=True):
        return DEFAULT_REPLICAS
    count: int = rspec["replicas"]
    return count


def default_replica(key: str, rspec: dict[str, Any], *, invalid_as_unset: bool = False) -> None:
    """replicas, restartPolicy, the restartScope of its type (an unknown key gets none:
    validation rejects it), then the template's container defaults."""
    wants = functools.partial(_wants_default, rspec, invalid_as_unset=invalid_as_unset)
    if _count_wants_default(rspec, "replicas", invalid_as_unset=invalid_as_unset):
        rspec["replicas"] = DEFAULT_REPLICAS
    if wants("restartPolicy", _member_of(RestartPolicy)):
        rspec["restartPolicy"] = DEFAULT_RESTART_POLICY.value
    rtype = canonical_replica_type(key)
    if rtype is not None and wants("restartScope", _member_of(RestartScope)):
        rspec["restartScope"] = DEFAULT_RESTART_SCOPES[rtype].value
    template = rspec.get("template")
    if isinstance(template, dict):
        default_container(template, invalid_as_unset=invalid_as_unset)


def inject_env(job: dict[str, Any]) -> None:
    """Put the computed env first in each mxnet container, replacing any owned entries.

    First, so that the user's own entries may refer to ours as `$(DMLC_ROLE)`. Only the
    mxnet container: sidecars and init containers are not MXNet processes. Only replica types
    of the job's mode: anything else is invalid and left for validation to report.
    """
    mode = job_mode(job)
    replicas = job["spec"].get("mxReplicaSpecs")
    if mode is None or not isinstance(replicas, dict):
        return
    try:
        layout = job_layout(job)  # read once: injecting env changes none of it
    except NotDefaultedError:
        return  # a count or port no replica can have: validation refuses the job
    for key, rspec in replicas.items():
        rtype = canonical_replica_type(key)
        if rtype is None or rtype not in MODE_REPLICA_TYPES[mode] or not isinstance(rspec, dict):
            continue
        if rtype.value != key:
            continue  # a duplicate spelling; validation rejects it
        template = rspec.get("template")
        container = mxnet_container(template) if isinstance(template, dict) else None
        if container is None:
            continue
        env = container.get("env")
        if env is None:
            env = []
        if not isinstance(env, list):
            continue
        owned = {i for i, _ in owned_entries(env, OWNED_ENV_NAMES)}
        kept = [entry for i, entry in enumerate(env) if i not in owned]
        container["env"] = layout_env(layout, rtype) + kept


def apply_defaults(
    job: Mapping[str, Any], *, env: bool = True, invalid_as_unset: bool = False
) -> dict[str, Any]:
    """The defaulted MXJob: a deep copy of `job` with every default and the owned env applied.

    Never modifies `job`; applying it to its own result returns an equal object. With
    ``env=False`` the owned env is left as it is: every other default, at a cost that does not
    grow with the replica counts (the env lists every replica), for a reader that needs the
    defaults of a job too large to default whole (shared.validation.replica_total_violations).
    With ``invalid_as_unset`` a value a defaulted field does not allow (and a ``runPolicy`` that
    is not an object) is defaulted as if unset: the job as read, never as stored (the module
    docstring says who reads it so).
    """
    if not isinstance(job, Mapping):
        raise TypeError(f"an MXJob must be a JSON object, not {type(job).__name__}")
    result: dict[str, Any] = copy_json(dict(job))
    spec = result.get("spec")
    if not isinstance(spec, dict):
        if not invalid_as_unset:
            return result
        spec = result["spec"] = {}
    if _unset(spec, "jobMode"):
        # training-operator's CRD had the field optional, its SDK always sends "", and jobs it
        # stored may carry either. A mode that is none of the modes stays, with invalid_as_unset
        # too: a job of no mode is judged by none.
        spec["jobMode"] = DEFAULT_JOB_MODE.value
    canonicalize_replica_keys(spec)
    if invalid_as_unset and not isinstance(spec.get("runPolicy", {}), dict):
        del spec["runPolicy"]
    move_run_policy(spec)
    default_run_policy(spec, invalid_as_unset=invalid_as_unset)
    replicas = spec.get("mxReplicaSpecs")
    if isinstance(replicas, dict):
        for key, rspec in replicas.items():
            if isinstance(rspec, dict):
                default_replica(key, rspec, invalid_as_unset=invalid_as_unset)
    if env:
        inject_env(result)
    return result
