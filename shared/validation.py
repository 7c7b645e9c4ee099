"""Every MXJob rule, checked at once, each violation with its field path and what is allowed.

Two passes. The JSON Schema in `shared.schema` checks the types of the fields we own, so a
string where an object belongs becomes a violation and never an exception. Then code checks
what a schema cannot say well: replica counts per mode, the mxnet container, images, name
length against the replica names, run-policy conflicts, owned env, immutability. The code
rules only look at fields whose shape is right, so one mistake is reported once.

Replica keys are matched case-insensitively, as defaulting rewrites them canonically; paths
use the keys as the user wrote them, so the message points at their YAML. What depends on the
counts and ports (name length, the owned env, replicas frozen while running, the total) is
judged on the job as defaulting would make it, read with ``invalid_as_unset`` (shared/defaults.py):
the readers of shared/spec.py hold no default of their own.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from jsonschema import ValidationError

from shared.constants import (
    CONTAINER_NAME,
    MAX_TOTAL_REPLICAS,
    MODE_REPLICA_TYPES,
    OWNED_ENV_NAMES,
    POD_START_TIMEOUT_ANNOTATION,
    RUN_POLICY_FIELDS,
    JobMode,
    ReplicaType,
    RestartScope,
    SuccessPolicy,
)
from shared.defaults import apply_defaults, replicas_as_read
from shared.env import (
    JobLayout,
    expected_owned_env,
    job_layout,
    normalize_env_entry,
    owned_entries,
)
from shared.naming import job_name_problem
from shared.queueing import MULTIKUEUE, manager
from shared.scheduling_policy import scheduling_policy_problems
from shared.schema import VALIDATOR, conforms
from shared.spec import (
    NotDefaultedError,
    as_mapping,
    canonical_replica_type,
    is_count,
    is_suspended,
    job_mode,
    mxnet_container,
    replica_spec,
    replica_specs,
    spec_replica_count,
)


@dataclass(frozen=True)
class Violation:
    """One broken rule: where (a field path such as `spec.mxReplicaSpecs.Worker.replicas`)
    and what is wrong, including what would be allowed."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


PathPart = str | int

_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_MAX_SHOWN = 60


def format_path(parts: Sequence[PathPart]) -> str:
    """`spec.mxReplicaSpecs.Worker.template.spec.containers[0].image`; keys that are not
    plain identifiers are quoted (`annotations["a.b/c"]`), the object itself is `object`."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _PLAIN_KEY.fullmatch(part):
            out += f".{part}" if out else part
        else:
            out += f"[{json.dumps(part)}]"
    return out or "object"


def _shown(value: object) -> str:
    """A short JSON rendering of a user's value for a message."""
    try:
        text = json.dumps(value, sort_keys=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 3] + "..."


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def _article(noun: str) -> str:
    return f"an {noun}" if noun[:1] in "aeiou" else f"a {noun}"


def _allowed(values: Sequence[object]) -> str:
    return ", ".join(_shown(v) for v in values)


def _schema_message(error: ValidationError) -> str:
    kind = error.validator
    if kind == "type":
        expected = error.validator_value
        names = expected if isinstance(expected, list) else [expected]
        wanted = " or ".join(_article(str(n)) for n in names)
        got = _json_type(error.instance)
        shown = "" if got in ("object", "array", "null") else f" {_shown(error.instance)}"
        return f"must be {wanted} (got {got}{shown})"
    if kind == "enum" and isinstance(error.validator_value, list):
        return f"must be one of {_allowed(error.validator_value)} (got {_shown(error.instance)})"
    if kind == "minimum":
        return f"must be at least {error.validator_value} (got {_shown(error.instance)})"
    if kind == "maximum":
        return f"must be at most {error.validator_value} (got {_shown(error.instance)})"
    if kind == "minItems":
        return f"must have at least {error.validator_value} item(s)"
    return error.message


def _schema_violations(job: object) -> list[Violation]:
    """Type errors of the fields we own; one report per field (a wrong type hides the rest)."""
    if conforms(job):
        return []  # the compiled check: no error list to build for a well-formed job
    by_path: dict[tuple[PathPart, ...], list[ValidationError]] = {}
    instance: Any = job  # any JSON value; the schema's first check is that it is an object
    for error in VALIDATOR.iter_errors(instance):
        by_path.setdefault(tuple(error.absolute_path), []).append(error)
    violations: list[Violation] = []
    for parts, errors in by_path.items():
        type_errors = [e for e in errors if e.validator == "type"]
        for error in type_errors or errors:
            if error.validator == "required":
                required = error.validator_value
                instance = as_mapping(error.instance)
                for missing in required if isinstance(required, list) else []:
                    if missing not in instance:
                        violations.append(Violation(format_path([*parts, missing]), "is required"))
            else:
                violations.append(Violation(format_path(parts), _schema_message(error)))
    return list(dict.fromkeys(violations))


def _read(job: Mapping[str, Any]) -> dict[str, Any]:
    """``job`` as the controller reads it: defaulted, an invalid value as unset, and without
    its containers' env. No rule reads the env from it (the owned env is judged on the job as
    sent), and in a defaulted job the env is most of what a copy would cost."""
    return apply_defaults(_without_env(job), env=False, invalid_as_unset=True)


def _without_env(job: Mapping[str, Any]) -> dict[str, Any]:
    """``job`` with each replica's containers' ``env`` left out; shares every other value (the
    caller copies it)."""
    spec = job.get("spec")
    replicas = as_mapping(spec).get("mxReplicaSpecs")
    if not isinstance(replicas, Mapping):
        return dict(job)
    slim: dict[str, Any] = {}
    for key, rspec in replicas.items():
        template = as_mapping(rspec).get("template")
        pod_spec = as_mapping(template).get("spec")
        found = as_mapping(pod_spec).get("containers")
        if not isinstance(found, list):
            slim[key] = rspec
            continue
        containers = [
            {k: v for k, v in c.items() if k != "env"} if isinstance(c, Mapping) else c
            for c in found
        ]
        slim_spec = {**as_mapping(pod_spec), "containers": containers}
        slim[key] = {**as_mapping(rspec), "template": {**as_mapping(template), "spec": slim_spec}}
    return {**job, "spec": {**as_mapping(spec), "mxReplicaSpecs": slim}}


class _Rules:
    """The cross-field rules over a job whose owned fields have been type-checked."""

    def __init__(self, job: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
        self.job = job
        self.old = old
        self.spec = as_mapping(job.get("spec"))
        self.mode = job_mode(self.reading)
        self.violations: list[Violation] = []

    @functools.cached_property
    def reading(self) -> dict[str, Any]:
        """The job read with its defaults (module docstring): what counts and ports come from."""
        return _read(self.job)

    @functools.cached_property
    def replica_total_problems(self) -> list[Violation]:
        """`replica_total_violations`, added up once: two rules need it."""
        return replica_total_violations(self.job)

    @functools.cached_property
    def layout(self) -> JobLayout | None:
        """What the owned env is computed from; read once, on first need. None when a replica
        has no port to read (no mxnet container: reported on its own)."""
        try:
            return job_layout(self.reading)
        except NotDefaultedError:
            return None

    def add(self, parts: Sequence[PathPart], message: str) -> None:
        self.violations.append(Violation(format_path(parts), message))

    def run(self) -> list[Violation]:
        self.check_name()
        self.check_job_mode_immutable()
        self.check_replica_counts_frozen()
        self.check_run_policy_conflicts()
        self.check_manager_immutable()
        self.check_success_policy()
        self.check_pod_start_timeout()
        self.check_scheduling_policy()
        replicas = self.spec.get("mxReplicaSpecs")
        if isinstance(replicas, Mapping):
            self.check_replica_types(replicas)
            self.check_replica_counts(replicas)
            for key, rspec in replicas.items():
                if isinstance(rspec, Mapping):
                    self.check_restart_scope(key, rspec)
                    self.check_template(key, rspec)
        return self.violations

    def check_name(self) -> None:
        if "metadata" in self.job and not isinstance(self.job["metadata"], Mapping):
            return  # reported by the schema
        metadata = as_mapping(self.job.get("metadata"))
        name = metadata.get("name")
        if not name and metadata.get("generateName"):
            self.add(
                ["metadata", "generateName"],
                "is not supported without metadata.name: the job's name is part of every "
                "replica's env and address, so it must be known up front; set metadata.name",
            )
            return
        if name is not None and not isinstance(name, str):
            return  # reported by the schema
        problem = job_name_problem(name, self.reading.get("spec"))
        if problem is not None:
            self.add(["metadata", "name"], problem)

    def check_pod_start_timeout(self) -> None:
        annotations = as_mapping(as_mapping(self.job.get("metadata")).get("annotations"))
        raw = annotations.get(POD_START_TIMEOUT_ANNOTATION)
        if raw is not None and not (isinstance(raw, str) and raw.isdigit()):
            self.add(
                ["metadata", "annotations", POD_START_TIMEOUT_ANNOTATION],
                f"must be a whole number of seconds (0: never), not {raw!r}",
            )

    def check_scheduling_policy(self) -> None:
        """Names in ``schedulingPolicy`` (under ``runPolicy``, or training-operator's older
        place directly under ``spec``) that no Kubernetes object can have."""
        places = (
            (["spec", "runPolicy"], as_mapping(self.spec.get("runPolicy"))),
            (["spec"], self.spec),
        )
        for where, owner in places:
            policy = owner.get("schedulingPolicy")
            if isinstance(policy, Mapping):
                for field, message in scheduling_policy_problems(policy):
                    self.add([*where, "schedulingPolicy", field], message)

    def check_job_mode_immutable(self) -> None:
        if self.old is None:
            return
        # Compared as modes: a job stored with jobMode "" or none (training-operator's) is an
        # MXTrain job, and may be written back as "MXTrain".
        old_mode = job_mode(_read(self.old))
        if old_mode is not None and self.mode is not None and self.mode is not old_mode:
            self.add(
                ["spec", "jobMode"],
                f"is immutable: must stay {old_mode.value!r} (got {self.mode.value!r})",
            )

    def check_replica_counts_frozen(self) -> None:
        """Replica counts change only while the stored job is suspended.

        ps-lite fixes its membership when the cluster forms: every process was started with the
        same DMLC_NUM_WORKER and DMLC_NUM_SERVER, and a pod added later (or one left waiting
        for a peer that was removed) cannot join. Suspending deletes the pods; the job then
        resumes as a new cluster with the new counts.
        """
        if self.old is None or is_suspended(self.old):
            return
        old_counts = {t: spec_replica_count(r) for t, r in replica_specs(_read(self.old)).items()}
        new_counts = {t: spec_replica_count(r) for t, r in replica_specs(self.reading).items()}
        for rtype in dict.fromkeys([*old_counts, *new_counts]):
            before, after = old_counts.get(rtype, 0), new_counts.get(rtype, 0)
            if before == after:
                continue
            written = as_mapping(self.spec.get("mxReplicaSpecs"))
            key = next((k for k in written if canonical_replica_type(k) == rtype), rtype)
            self.add(
                ["spec", "mxReplicaSpecs", key, "replicas"],
                f"cannot change from {before} to {after} while the job is not suspended: every "
                "replica was started with the old counts and ps-lite cannot take a new member; "
                "suspend the job (spec.runPolicy.suspend: true), change replicas, then resume it "
                "(suspend: false) to start it again with the new counts",
            )

    def check_run_policy_conflicts(self) -> None:
        nested = self.spec.get("runPolicy")
        if not isinstance(nested, Mapping):
            return
        for field in RUN_POLICY_FIELDS:
            if field in self.spec and field in nested and self.spec[field] != nested[field]:
                where = (
                    f"set it only under spec.runPolicy, or {MULTIKUEUE!r} only as spec.managedBy"
                    if field == "managedBy"
                    else "set it only under spec.runPolicy"
                )
                self.add(
                    ["spec", field],
                    f"conflicts with spec.runPolicy.{field} ({_shown(self.spec[field])} vs "
                    f"{_shown(nested[field])}); {where}",
                )

    def check_manager_immutable(self) -> None:
        """Who runs a job is decided once: a job handed over midway would be run twice or by
        nobody (MultiKueue's copy in a worker cluster and this cluster's pods, for one)."""
        if self.old is None:
            return
        before, after = manager(self.old), manager(self.job)
        if before != after:
            field = "managedBy" if "managedBy" in self.spec else "runPolicy.managedBy"
            self.add(
                ["spec", *field.split(".")],
                f"is immutable: must stay {before!r} (got {after!r}); delete and recreate the "
                "job to hand it to another controller",
            )

    def check_success_policy(self) -> None:
        if (
            self.mode is JobMode.MXTUNE
            and self.spec.get("successPolicy") == SuccessPolicy.ALL_WORKERS
        ):
            self.add(
                ["spec", "successPolicy"],
                "must be '' in MXTune mode (got 'AllWorkers'; MXTune has no Workers: "
                "the Tuner decides success)",
            )

    def _mode_types_text(self) -> str:
        if self.mode is None:
            return "; ".join(
                f"{mode}: {', '.join(types)}" for mode, types in MODE_REPLICA_TYPES.items()
            )
        return f"{self.mode} allows {', '.join(MODE_REPLICA_TYPES[self.mode])}"

    def check_replica_types(self, replicas: Mapping[str, Any]) -> None:
        seen: dict[ReplicaType, list[str]] = {}
        for key in replicas:
            rtype = canonical_replica_type(key)
            if rtype is None:
                self.add(
                    ["spec", "mxReplicaSpecs", key],
                    f"is not a replica type ({self._mode_types_text()})",
                )
                continue
            seen.setdefault(rtype, []).append(key)
            if self.mode is not None and rtype not in MODE_REPLICA_TYPES[self.mode]:
                self.add(
                    ["spec", "mxReplicaSpecs", key],
                    f"is not allowed in {self.mode} mode ({self._mode_types_text()})",
                )
        for rtype, keys in seen.items():
            if len(keys) < 2:
                continue
            keep = rtype.value if rtype.value in keys else keys[0]
            for key in keys:
                if key != keep:
                    self.add(
                        ["spec", "mxReplicaSpecs", key],
                        f"duplicates {keep!r}: replica types are case-insensitive, "
                        "define each once",
                    )

    def _present(self, replicas: Mapping[str, Any]) -> dict[ReplicaType, str]:
        """Replica types of the mode present in the spec -> the key used (canonical first)."""
        present: dict[ReplicaType, str] = {}
        assert self.mode is not None
        for key in replicas:
            rtype = canonical_replica_type(key)
            if (
                rtype is not None
                and rtype in MODE_REPLICA_TYPES[self.mode]
                and (rtype not in present or key == rtype.value)
            ):
                present[rtype] = key
        return present

    def _count(self, replicas: Mapping[str, Any], key: str) -> int | None:
        """The replica count of a key, or None when malformed (the schema reported it)."""
        rspec = replicas.get(key)
        if not isinstance(rspec, Mapping):
            return None
        written = rspec.get("replicas")
        if written is not None:
            return written if is_count(written) else None
        # Defaulting writes the count under the key, or under its canonical spelling when that
        # is free (shared.defaults.canonicalize_replica_keys).
        read = as_mapping(as_mapping(self.reading.get("spec")).get("mxReplicaSpecs"))
        found = read.get(key, read.get(str(canonical_replica_type(key))))
        return spec_replica_count(as_mapping(found))

    def _exactly(self, replicas: Mapping[str, Any], key: str, wanted: int, why: str) -> None:
        count = self._count(replicas, key)
        if count is not None and count != wanted:
            self.add(
                ["spec", "mxReplicaSpecs", key, "replicas"],
                f"must be exactly {wanted} {why} (got {count})",
            )

    def check_replica_counts(self, replicas: Mapping[str, Any]) -> None:
        self.violations += self.replica_total_problems
        if self.mode is None:
            return
        present = self._present(replicas)
        if not present:
            forms = (
                "a Scheduler with Servers and Workers, or a single Worker (single-node)"
                if self.mode is JobMode.MXTRAIN
                else "a TunerTracker, TunerServers and a Tuner"
            )
            self.add(
                ["spec", "mxReplicaSpecs"],
                f"must define the replicas of {self.mode} mode: {forms}",
            )
            return
        if self.mode is JobMode.MXTRAIN:
            self._check_train(replicas, present)
        else:
            self._check_tune(replicas, present)

    def _check_train(self, replicas: Mapping[str, Any], present: dict[ReplicaType, str]) -> None:
        if set(present) == {ReplicaType.WORKER}:
            self._exactly(
                replicas,
                present[ReplicaType.WORKER],
                1,
                "in the single-node form (a Worker without a Scheduler); "
                "add a Scheduler to train distributed",
            )
            return
        scheduler = present.get(ReplicaType.SCHEDULER)
        if scheduler is None:
            self.add(
                ["spec", "mxReplicaSpecs", ReplicaType.SCHEDULER.value],
                "is required in MXTrain mode (exactly 1 replica), unless the job is "
                "single-node (only a Worker, with replicas 1)",
            )
        else:
            self._exactly(replicas, scheduler, 1, "in MXTrain mode")

    def _check_tune(self, replicas: Mapping[str, Any], present: dict[ReplicaType, str]) -> None:
        for rtype in (ReplicaType.TUNER_TRACKER, ReplicaType.TUNER):
            key = present.get(rtype)
            if key is None:
                self.add(
                    ["spec", "mxReplicaSpecs", rtype.value],
                    "is required in MXTune mode (exactly 1 replica)",
                )
            else:
                self._exactly(replicas, key, 1, "in MXTune mode")
        key = present.get(ReplicaType.TUNER_SERVER)
        if key is None:
            self.add(
                ["spec", "mxReplicaSpecs", ReplicaType.TUNER_SERVER.value],
                "is required in MXTune mode (at least 1 replica)",
            )
            return
        count = self._count(replicas, key)
        if count == 0:
            self.add(
                ["spec", "mxReplicaSpecs", key, "replicas"],
                "must be at least 1 in MXTune mode (got 0)",
            )

    def check_restart_scope(self, key: str, rspec: Mapping[str, Any]) -> None:
        """ps-lite never readmits a scheduler: a lone new one could only hang (the schema
        checks the value itself)."""
        if (
            rspec.get("restartScope") == RestartScope.REPLICA
            and canonical_replica_type(key) is ReplicaType.SCHEDULER
        ):
            self.add(
                ["spec", "mxReplicaSpecs", key, "restartScope"],
                "must be 'Job' for the Scheduler (got 'Replica'): ps-lite cannot take a new "
                "scheduler into a running cluster, so a lone replacement would wait forever",
            )

    def check_template(self, key: str, rspec: Mapping[str, Any]) -> None:
        template = rspec.get("template")
        if not isinstance(template, Mapping):
            return
        pod_spec = template.get("spec")
        if not isinstance(pod_spec, Mapping):
            return
        base: list[PathPart] = ["spec", "mxReplicaSpecs", key, "template", "spec"]
        for field in ("initContainers", "containers"):
            items = pod_spec.get(field)
            if not isinstance(items, list):
                continue
            for i, container in enumerate(items):
                # A non-string image is a type error the schema reports.
                if isinstance(container, Mapping) and container.get("image", "") == "":
                    self.add([*base, field, i, "image"], "is required: every container needs one")
        items = pod_spec.get("containers")
        if not isinstance(items, list) or not items:
            return
        mxnet = mxnet_container(template)
        if mxnet is None:
            names = [c.get("name") for c in items if isinstance(c, Mapping)]
            self.add(
                [*base, "containers"],
                f"must include a container named {CONTAINER_NAME!r}: the operator reads its "
                f"exit code and port and sets its env (got names: {_allowed(names)})",
            )
            return
        position = next(i for i, c in enumerate(items) if c is mxnet)
        self.check_owned_env(key, [*base, "containers", position], mxnet)

    def check_owned_env(self, key: str, path: list[PathPart], container: Mapping[str, Any]) -> None:
        rtype = canonical_replica_type(key)
        env = container.get("env")
        if (
            self.mode is None
            or rtype is None
            or rtype not in MODE_REPLICA_TYPES[self.mode]
            or not isinstance(env, list)
            # The expected env lists every replica: with too many (reported on their own) it
            # would exhaust memory rather than tell the user anything more.
            or self.replica_total_problems
            or self.layout is None
        ):
            return
        owned = owned_entries(env, OWNED_ENV_NAMES)
        if not owned:
            return  # a job as users write it: nothing to compare, no env to compute
        expected = expected_owned_env(self.layout, rtype)
        previous = self._old_owned_env(rtype)
        for j, entry in owned:
            name = entry["name"]
            wanted = expected.get(name)
            if wanted is not None and entry == wanted:
                continue  # as injected: the usual case, decided without normalizing
            mine = normalize_env_entry(entry)
            if wanted is not None and mine == normalize_env_entry(wanted):
                continue
            if mine in previous.get(name, []):
                continue  # stale injected env on an update: defaulting recomputes it
            if wanted is None:
                self.add(
                    [*path, "env", j],
                    f"{name} is reserved for the operator, which does not set it for a "
                    f"{rtype} in {self.mode} mode; remove it",
                )
            else:
                self.add(
                    [*path, "env", j],
                    f"{name} is set by the operator; remove it or set it to "
                    f"{_shown(_env_source(wanted))} (got {_shown(_env_source(entry))})",
                )

    def _old_owned_env(self, rtype: ReplicaType) -> dict[str, list[dict[str, Any]]]:
        if self.old is None:
            return {}
        container = mxnet_container(as_mapping(replica_spec(self.old, rtype)).get("template"))
        env = as_mapping(container).get("env")
        found: dict[str, list[dict[str, Any]]] = {}
        for _, entry in owned_entries(env if isinstance(env, list) else [], OWNED_ENV_NAMES):
            found.setdefault(entry["name"], []).append(normalize_env_entry(entry))
        return found


def _env_source(entry: Mapping[str, Any]) -> object:
    if "valueFrom" in entry:
        return {"valueFrom": entry["valueFrom"]}
    return entry.get("value", "")


def replica_total_violations(job: Mapping[str, Any]) -> list[Violation]:
    """The one rule that must hold before defaulting may run: at most `MAX_TOTAL_REPLICAS`.

    Defaulting builds env whose size grows with the replica count, so a caller that defaults
    before validating (the controller, to judge the env it owns) checks this first. Cheap: it
    reads the counts as defaulting would (shared.defaults.replicas_as_read), copying nothing.
    """
    total = sum(replicas_as_read(rspec) for rspec in replica_specs(job).values())
    if total <= MAX_TOTAL_REPLICAS:
        return []
    return [
        Violation(
            format_path(["spec", "mxReplicaSpecs"]),
            f"must have at most {MAX_TOTAL_REPLICAS} replicas in all (got {total}): every "
            "replica's address is written into each replica's env",
        )
    ]


def validate(job: Mapping[str, Any], *, old: Mapping[str, Any] | None = None) -> list[Violation]:
    """All violations of an MXJob (empty when valid), sorted by field path.

    `old` is the stored object on an UPDATE: it makes `spec.jobMode` immutable, and an owned
    env entry equal to the old object's (stale after scaling) is accepted, since defaulting
    recomputes it. Any JSON value is accepted as input; nothing here raises.
    """
    violations = _schema_violations(job)
    if isinstance(job, Mapping):
        old_job = old if isinstance(old, Mapping) else None
        violations += _Rules(job, old_job).run()
    unique = list(dict.fromkeys(violations))
    return sorted(unique, key=lambda v: v.path)


def format_violations(violations: Sequence[Violation], *, name: str = "") -> str:
    """One message for an admission response: `MXJob "x" is invalid: path: message; ...`."""
    subject = f'MXJob "{name}"' if name else "MXJob"
    return f"{subject} is invalid: " + "; ".join(str(v) for v in violations)
