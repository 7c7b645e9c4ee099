"""The defaults of the MXJob fields, as the code applies them (for docs/reference/api.md).

Three places default a field, and the reference says which: the CRD (the API server writes the
``default`` of its schema), the mutating webhook (``shared/defaults.py`` writes the value into
the stored job) and the readers (``shared/spec.py``: nothing is written, an absent field reads as
its default). The webhook's are found by defaulting sample jobs and seeing what appeared, the
readers' by asking the readers about those samples: a changed default changes the page.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from docgen.crd import MAP_KEY
from docgen.markdown import code
from shared.constants import API_VERSION_V1, KIND, JobMode, ReplicaType
from shared.defaults import apply_defaults
from shared.spec import is_suspended, success_policy

WEBHOOK = "webhook"
UNSET = "when unset"
CRD = "CRD"


def _template() -> dict[str, Any]:
    return {"spec": {"containers": [{"image": "example"}]}}


def sample_job(mode: JobMode) -> dict[str, Any]:
    """A job with nothing but what validation requires: one of each replica type of ``mode``
    (MXTrain: its single-node form, which has the fewest types). jobMode is left out for MXTrain,
    so its default shows."""
    spec: dict[str, Any] = {}
    types: tuple[ReplicaType, ...]
    if mode is JobMode.MXTUNE:
        spec["jobMode"] = mode.value
        types = (ReplicaType.TUNER_TRACKER, ReplicaType.TUNER_SERVER, ReplicaType.TUNER)
    else:
        types = (ReplicaType.WORKER,)
    spec["mxReplicaSpecs"] = {t.value: {"template": _template()} for t in types}
    return {
        "apiVersion": API_VERSION_V1,
        "kind": KIND,
        "metadata": {"name": "sample", "namespace": "default"},
        "spec": spec,
    }


def _added(
    before: Mapping[str, Any], after: Mapping[str, Any], path: str
) -> Iterator[tuple[str, object]]:
    """(path, value) of each scalar ``after`` has and ``before`` has not; lists and pod
    templates are not walked (the template is Kubernetes' to document)."""
    for key, value in after.items():
        where = f"{path}.{key}" if path else key
        if key == "template":
            continue
        if isinstance(value, Mapping):
            old = before.get(key)
            yield from _added(old if isinstance(old, Mapping) else {}, value, where)
        elif key not in before and not isinstance(value, list):
            yield where, value


def _generic(path: str) -> str:
    """``spec.mxReplicaSpecs.Worker.replicas`` → ``spec.mxReplicaSpecs.<type>.replicas``."""
    parts = path.split(".")
    for i, part in enumerate(parts[:-1]):
        if part == "mxReplicaSpecs" and i + 1 < len(parts):
            parts[i + 1] = MAP_KEY
    return ".".join(parts)


def webhook_defaults() -> dict[str, str]:
    """Path → the value the mutating webhook writes when the field is unset (for each mode,
    when the modes' values differ)."""
    found: dict[str, dict[JobMode, str]] = {}
    for mode in JobMode:
        job = sample_job(mode)
        for path, value in _added(job, apply_defaults(job), ""):
            found.setdefault(_generic(path), {}).setdefault(mode, code(_json_text(value)))
    return {path: _per_mode(values) for path, values in found.items()}


def _per_mode(values: Mapping[JobMode, str]) -> str:
    """``Job`` when every mode writes it; ``Job`` for MXTrain, ``Replica`` for MXTune else."""
    if len(set(values.values())) == 1:
        return next(iter(values.values()))
    return ", ".join(f"{value} for {mode.value}" for mode, value in values.items())


def _json_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def read_defaults() -> dict[str, str]:
    """Path → what the operator reads an unset field as (nothing is written)."""
    train = apply_defaults(sample_job(JobMode.MXTRAIN))
    return {
        "spec.successPolicy": code(success_policy(train).value),
        "spec.runPolicy.suspend": code(_json_text(is_suspended(train))),
    }


@dataclass(frozen=True)
class Defaults:
    """Both kinds of code defaults, computed once per page."""

    webhook: Mapping[str, str]
    read: Mapping[str, str]

    @classmethod
    def from_code(cls) -> Defaults:
        return cls(webhook=webhook_defaults(), read=read_defaults())

    def cell(self, path: str, schema: Mapping[str, Any]) -> str:
        """The Default column: the value, and who applies it (the CRD's first: it wins)."""
        if "default" in schema:
            return f"{code(_json_text(schema['default']))} ({CRD})"
        if path in self.webhook:
            return f"{self.webhook[path]} ({WEBHOOK})"
        if path in self.read:
            return f"{self.read[path]} ({UNSET})"
        return ""
