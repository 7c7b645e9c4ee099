"""Katib Experiments whose trials are MXJobs, judged when the Experiment is created (pure).

Katib checks an Experiment's trial template only as far as a batch Job goes; an MXJob trial
template is created as it is, trial after trial. One this operator's webhook refuses would be
refused at every trial: Katib records a Warning Event on the Trial and retries for ever, and the
Experiment stays Running with nothing to show. So the Experiment itself is refused, at once,
naming the field under ``spec.trialTemplate.trialSpec`` and what is allowed, as it would be for
the MXJob.

The trial's MXJob is the template as Katib makes it (``pkg/controller.v1beta1/experiment/
manifest``): every ``${trialParameters.<name>}`` replaced in the JSON text by a value the
parameter can take (the lower bound of its feasible space, or the first of its list), the
``${trialSpec.<key>}`` keys by the trial's, and the trial's name (``<experiment>-<8 letters>``).
Katib's pod webhook refuses a pod that lacks a container named ``primaryContainerName``, so every
replica's template must have one.

A template in a ConfigMap (``trialTemplate.configMap``) is not judged here: it is not in the
request.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final

from shared import constants, defaults, validation
from shared.spec import as_mapping, replica_specs
from webhook.admission import (
    BAD_REQUEST,
    INVALID,
    NotAnMXJobError,
    allowed,
    as_v1,
    denied,
    judged_operation,
)
from webhook.reviews import AdmissionRequest, AdmissionResponse, JSONObject

TRIAL_SPEC_PATH: Final = "spec.trialTemplate.trialSpec"
SAMPLE_SUFFIX: Final = "-abcdefgh"
"""Katib names a trial ``<experiment>-<8 random lower-case letters and digits>``."""
_PLACEHOLDER: Final = re.compile(r"\$\{trialParameters\.([^}]*)\}")
_META_KEY: Final = re.compile(r"\$\{trialSpec\.([A-Za-z]+)(\[[^\]]*\])?\}")


def is_mxjob_trial(experiment: Mapping[str, Any]) -> bool:
    """Whether the Experiment's inline trial template is an MXJob."""
    spec = as_mapping(as_mapping(experiment.get("spec")).get("trialTemplate")).get("trialSpec")
    return as_mapping(spec).get("kind") == constants.KIND


def sample_values(experiment: Mapping[str, Any]) -> dict[str, str]:
    """A value each trial parameter can take, by its name in the template."""
    spec = as_mapping(experiment.get("spec"))
    parameters = {
        str(as_mapping(p).get("name")): as_mapping(as_mapping(p).get("feasibleSpace"))
        for p in spec.get("parameters") or []
    }
    values: dict[str, str] = {}
    for trial_parameter in as_mapping(spec.get("trialTemplate")).get("trialParameters") or []:
        name = str(as_mapping(trial_parameter).get("name"))
        space = parameters.get(str(as_mapping(trial_parameter).get("reference")), {})
        listed = space.get("list") or []
        value = space.get("min", listed[0] if listed else "1")
        values[name] = str(value)
    return values


def trial_job(experiment: Mapping[str, Any]) -> JSONObject:
    """The MXJob a trial of ``experiment`` would create, as far as the request says."""
    meta = as_mapping(experiment.get("metadata"))
    name = f"{meta.get('name') or meta.get('generateName') or 'experiment'}{SAMPLE_SUFFIX}"
    template = as_mapping(as_mapping(experiment.get("spec")).get("trialTemplate"))
    values = sample_values(experiment)
    text = json.dumps(template.get("trialSpec"))
    text = _PLACEHOLDER.sub(lambda m: _json_text(values.get(m.group(1), "1")), text)
    meta_values = {"Name": name, "Namespace": str(meta.get("namespace") or "default"),
                   "Kind": constants.KIND}  # fmt: skip
    text = _META_KEY.sub(lambda m: _json_text(meta_values.get(m.group(1), "sample")), text)
    job = json.loads(text)
    job.setdefault("metadata", {})["name"] = name
    return dict(job)


def _json_text(value: str) -> str:
    """``value`` as it may stand inside a JSON string."""
    return json.dumps(value)[1:-1]


def problems(experiment: Mapping[str, Any]) -> list[validation.Violation]:
    """Every reason the trials' MXJob would be refused, with paths from the Experiment (a
    trial name too long is the Experiment's name's fault)."""
    job, _ = as_v1(trial_job(experiment))
    found: list[validation.Violation] = []
    for violation in validation.validate(job):
        if violation.path.startswith("metadata.name"):
            found.append(
                validation.Violation(
                    "metadata.name", f"makes trial names that are invalid: {violation.message}"
                )
            )
        else:
            found.append(
                validation.Violation(f"{TRIAL_SPEC_PATH}.{violation.path}", violation.message)
            )
    if not found:
        found += _primary_container_problems(experiment, defaults.apply_defaults(job))
    return found  # fmt: skip


def _primary_container_problems(
    experiment: Mapping[str, Any], job: Mapping[str, Any]
) -> list[validation.Violation]:
    template = as_mapping(as_mapping(experiment.get("spec")).get("trialTemplate"))
    primary = template.get("primaryContainerName")
    missing = [
        str(rtype)
        for rtype, replica in replica_specs(job).items()
        if primary not in {
            as_mapping(c).get("name")
            for c in as_mapping(as_mapping(as_mapping(replica).get("template")).get("spec")).get(
                "containers") or []
        }
    ]  # fmt: skip
    if not missing:
        return []
    return [validation.Violation(
        "spec.trialTemplate.primaryContainerName",
        f"must name a container of every replica (Katib refuses a trial pod without it); "
        f"{primary!r} is not in {', '.join(missing)}: use {constants.CONTAINER_NAME!r}",
    )]  # fmt: skip


def validate_experiment(
    request: AdmissionRequest, *, kueue_workloads: bool = False
) -> AdmissionResponse:
    """Refuse an Experiment whose MXJob trials this operator would refuse; allow anything else
    (another trial kind, a template in a ConfigMap, a delete). ``kueue_workloads`` is accepted
    like the MXJob decisions' and changes nothing: a trial's queueing is judged on its MXJob."""
    uid = request["uid"]
    experiment = request.get("object")
    if not judged_operation(request):
        return allowed(uid)
    if not isinstance(experiment, dict) or not is_mxjob_trial(experiment):
        return allowed(uid)
    try:
        found = problems(experiment)
    except NotAnMXJobError as err:
        return denied(uid, f"{TRIAL_SPEC_PATH}: {err}", status=BAD_REQUEST)
    if not found:
        return allowed(uid)
    name = as_mapping(experiment.get("metadata")).get("name") or ""
    message = f'Experiment "{name}" is invalid: its trials would be refused: ' + "; ".join(
        str(v) for v in found
    )
    return denied(uid, message, status=INVALID)
