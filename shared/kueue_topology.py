"""Kueue's Topology Aware Scheduling for MXJob: a replica template's annotations → its podSet's
``topologyRequest``, and Kueue's rules for those annotations. Pure.

Kueue's own Kubeflow integrations read these annotations from each replica's pod template
(``jobframework.NewPodSetTopologyRequest`` in Kueue v0.19.2) and write what they ask for into
the podSet of that replica type, with the replica-index label as the pod index (Kueue then gives
ranks to pods by it). Under the Workload route this controller writes the Workload
(controller/integrations/kueue/workload.py), so it builds the same request; the webhook refuses
what Kueue's webhook refuses for its own kinds (``ValidateTASPodSetRequest``,
``ValidateSliceSizeAnnotationUpperBound`` and ``ValidatePodSetGroupingTopology``), naming the
field, because a request Kueue cannot read leaves the job waiting with no word why.

One podSet per replica type means Kueue places each type by itself: a required ``rack`` on every
template keeps each type in one rack, not the job. The podset-group annotation joins two podSets
into one placement, and Kueue allows it only for exactly two, one of them a single replica (the
Scheduler with the Workers, say); docs/how-to/queue-with-kueue.md says what that means for an
MXNet job.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from shared.constants import LABEL_REPLICA_INDEX
from shared.naming import label_key_problem
from shared.spec import as_mapping

REQUIRED: Final = "kueue.x-k8s.io/podset-required-topology"
PREFERRED: Final = "kueue.x-k8s.io/podset-preferred-topology"
UNCONSTRAINED: Final = "kueue.x-k8s.io/podset-unconstrained-topology"
SLICE_REQUIRED: Final = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE: Final = "kueue.x-k8s.io/podset-slice-size"
SLICE_CONSTRAINTS: Final = "kueue.x-k8s.io/podset-slice-required-topology-constraints"
GROUP_NAME: Final = "kueue.x-k8s.io/podset-group-name"
ANNOTATIONS: Final = (
    REQUIRED, PREFERRED, UNCONSTRAINED, SLICE_REQUIRED, SLICE_SIZE, SLICE_CONSTRAINTS, GROUP_NAME,
)  # fmt: skip
"""Every annotation Kueue's topology request reads from a pod template."""

MAX_SLICE_LAYERS: Final = 3
INT32_MAX: Final = 2**31 - 1

_BOOLS: Final = {
    "1": True, "t": True, "T": True, "TRUE": True, "true": True, "True": True,
    "0": False, "f": False, "F": False, "FALSE": False, "false": False, "False": False,
}  # fmt: skip
"""What Go's ``strconv.ParseBool`` accepts, which is what Kueue parses the flag with."""


def _int32(text: str) -> int | None:
    return int(text) if re.fullmatch(r"[+-]?\d+", text) and abs(int(text)) <= INT32_MAX else None


def topology_request(annotations: Mapping[str, Any]) -> dict[str, Any]:
    """The podSet's ``topologyRequest`` for a template with these annotations, as Kueue's
    Kubeflow integration builds it: the pod index always (the replica-index label), the one
    level asked for, the slice layer, and the group name with a required or preferred level.
    Call it on annotations that pass :func:`annotation_problems`."""
    request: dict[str, Any] = {}
    if REQUIRED in annotations:
        request["required"] = str(annotations[REQUIRED])
    elif PREFERRED in annotations:
        request["preferred"] = str(annotations[PREFERRED])
    elif UNCONSTRAINED in annotations:
        request["unconstrained"] = _BOOLS.get(str(annotations[UNCONSTRAINED]), False)
    if SLICE_CONSTRAINTS in annotations:
        request["podsetSliceRequiredTopologyConstraints"] = json.loads(
            str(annotations[SLICE_CONSTRAINTS])
        )
    elif SLICE_REQUIRED in annotations and SLICE_SIZE in annotations:
        request["podSetSliceRequiredTopology"] = str(annotations[SLICE_REQUIRED])
        request["podSetSliceSize"] = _int32(str(annotations[SLICE_SIZE]))
    request["podIndexLabel"] = LABEL_REPLICA_INDEX
    if GROUP_NAME in annotations and ("required" in request or "preferred" in request):
        request["podSetGroupName"] = str(annotations[GROUP_NAME])
    return request


@dataclass(frozen=True)
class TemplateTopology:
    """One replica type's template as the rules see it."""

    path: str
    """``spec.mxReplicaSpecs.<Type>.template.metadata.annotations``."""
    annotations: Mapping[str, Any]
    count: int


def _found(topology: TemplateTopology, key: str) -> bool:
    return key in topology.annotations


def _key_path(topology: TemplateTopology, key: str) -> str:
    return f"{topology.path}[{key}]"


def annotation_problems(topology: TemplateTopology) -> list[tuple[str, str]]:
    """(field path, message) for each of Kueue's rules one template's annotations break."""
    problems = _level_problems(topology) + _group_problems(topology)
    problems += _slice_problems(topology) + _constraint_problems(topology)
    return problems


def _level_problems(topology: TemplateTopology) -> list[tuple[str, str]]:
    problems = []
    if sum(_found(topology, key) for key in (REQUIRED, PREFERRED, UNCONSTRAINED)) > 1:
        problems.append(
            (
                topology.path,
                f"must not contain more than one topology annotation: "
                f"[{REQUIRED!r}, {PREFERRED!r}, {UNCONSTRAINED!r}]",
            )
        )
    for key in (REQUIRED, PREFERRED, SLICE_REQUIRED):
        if _found(topology, key):
            why = label_key_problem(str(topology.annotations[key]))
            if why:
                problems.append(
                    (
                        _key_path(topology, key),
                        f"{why}: the node label of a topology level "
                        f"(got {topology.annotations[key]!r})",
                    )
                )
    if _found(topology, UNCONSTRAINED) and str(topology.annotations[UNCONSTRAINED]) not in _BOOLS:
        problems.append(
            (
                _key_path(topology, UNCONSTRAINED),
                f"must be a boolean value (got {topology.annotations[UNCONSTRAINED]!r})",
            )
        )
    return problems


def _group_problems(topology: TemplateTopology) -> list[tuple[str, str]]:
    if not _found(topology, GROUP_NAME):
        return []
    path, name = _key_path(topology, GROUP_NAME), str(topology.annotations[GROUP_NAME])
    problems = []
    if name.isdigit():
        problems.append((path, f"must not be a number (got {name!r})"))
    for other in (SLICE_SIZE, SLICE_REQUIRED):
        if _found(topology, other):
            problems.append((path, f"may not be set when {other!r} is specified"))
    if not (_found(topology, PREFERRED) or _found(topology, REQUIRED)):
        problems.append(
            (path, f"may not be set when neither {PREFERRED!r} nor {REQUIRED!r} is specified")
        )
    return problems


def _slice_problems(topology: TemplateTopology) -> list[tuple[str, str]]:
    problems = []
    if _found(topology, SLICE_SIZE):
        path, text = _key_path(topology, SLICE_SIZE), str(topology.annotations[SLICE_SIZE])
        size = _int32(text)
        if size is None:
            problems.append((path, f"must be a numeric value (got {text!r})"))
        elif size < 1:
            problems.append((path, f"must be greater than or equal to 1 (got {text!r})"))
        elif size > topology.count:
            problems.append(
                (path, f"must not be greater than pod set count {topology.count} (got {text!r})")
            )
        if not _found(topology, SLICE_REQUIRED):
            problems.append((path, f"may not be set when {SLICE_REQUIRED!r} is not specified"))
    elif _found(topology, SLICE_REQUIRED):
        problems.append(
            (_key_path(topology, SLICE_SIZE), f"must be set when {SLICE_REQUIRED!r} is specified")
        )
    return problems


def _constraint_problems(topology: TemplateTopology) -> list[tuple[str, str]]:
    """The multi-layer slice annotation: a JSON list of 1 to 3 ``{topology, size}`` layers,
    coarsest first, each size dividing the one above it (Kueue's ``TASMultiLayerTopology``,
    on by default in v0.19)."""
    if not _found(topology, SLICE_CONSTRAINTS):
        return []
    path, text = (
        _key_path(topology, SLICE_CONSTRAINTS),
        str(topology.annotations[SLICE_CONSTRAINTS]),
    )
    problems = [
        (path, f"may not be set when {other!r} is specified")
        for other in (SLICE_REQUIRED, SLICE_SIZE)
        if _found(topology, other)
    ]
    if _found(topology, GROUP_NAME):
        problems.append(
            (
                _key_path(topology, GROUP_NAME),
                f"may not be set when {SLICE_CONSTRAINTS!r} is specified",
            )
        )
    layers = _layers(text)
    if layers is None:
        return [
            *problems,
            (
                path,
                'must be a valid JSON array of {"topology": <node label>, '
                f'"size": <int>}} (got {text!r})',
            ),
        ]
    if not 1 <= len(layers) <= MAX_SLICE_LAYERS:
        return [
            *problems,
            (path, f"must contain between 1 and {MAX_SLICE_LAYERS} entries (got {len(layers)})"),
        ]
    seen: dict[str, int] = {}
    for index, (level, size) in enumerate(layers):
        why = label_key_problem(level)
        if why:
            problems.append((f"{path}[{index}].topology", f"{why} (got {level!r})"))
        if size < 1:
            problems.append(
                (f"{path}[{index}].size", f"must be greater than or equal to 1 (got {size})")
            )
        if level in seen:
            problems.append(
                (f"{path}[{index}].topology", f"duplicate: {level} (also at index {seen[level]})")
            )
        seen.setdefault(level, index)
        if index and size > 0 and layers[index - 1][1] % size:
            problems.append(
                (
                    f"{path}[{index}].size",
                    f"must evenly divide the parent layer size {layers[index - 1][1]} (got {size})",
                )
            )
    if layers[0][1] > topology.count:
        problems.append(
            (
                path,
                f"the first layer's size must not be greater than pod set count "
                f"{topology.count} (got {layers[0][1]})",
            )
        )
    return problems


def _layers(text: str) -> list[tuple[str, int]] | None:
    try:
        parsed = json.loads(text)
    except ValueError:
        return None
    if not isinstance(parsed, list):
        return None
    layers = []
    for entry in parsed:
        if not isinstance(entry, dict):
            return None
        level, size = entry.get("topology", ""), entry.get("size", 0)
        if not isinstance(level, str) or not isinstance(size, int) or isinstance(size, bool):
            return None
        layers.append((level, size))
    return layers


def grouping_problems(topologies: Sequence[TemplateTopology]) -> list[tuple[str, str]]:
    """Kueue's rules for podset groups across a job: a group is exactly two podSets, one of
    them a single replica, both asking for the same required or preferred level."""
    groups: dict[str, list[TemplateTopology]] = {}
    for topology in topologies:
        if _found(topology, GROUP_NAME) and (
            _found(topology, REQUIRED) or _found(topology, PREFERRED)
        ):
            groups.setdefault(str(topology.annotations[GROUP_NAME]), []).append(topology)
    problems: list[tuple[str, str]] = []
    for name, members in groups.items():
        if len(members) != 2:
            problems += [
                (
                    _key_path(m, GROUP_NAME),
                    f"can only define groups of exactly 2 pod "
                    f"sets, got: {len(members)} pod set(s) in group {name!r}",
                )
                for m in members
            ]
            continue
        first, second = members
        if first.count != 1 and second.count != 1:
            message = (
                f"can only define groups where at least one pod set has only 1 replica, "
                f"got: {first.count} replica(s) and {second.count} replica(s) in group "
                f"{name!r}"
            )
            problems += [(_key_path(m, GROUP_NAME), message) for m in members]
        if _level(first) != _level(second):
            problems += [
                (
                    m.path,
                    f"must specify {REQUIRED!r} or {PREFERRED!r} topology "
                    f"consistent with {o.path} in group {name!r}",
                )
                for m, o in ((first, second), (second, first))
            ]
    return problems


def _level(topology: TemplateTopology) -> tuple[str, str]:
    for key in (REQUIRED, PREFERRED):
        if _found(topology, key):
            return key, str(topology.annotations[key])
    return "", ""


def job_topologies(job: Mapping[str, Any]) -> list[TemplateTopology]:
    """Each replica type's template annotations and replica count, for the rules above."""
    specs = as_mapping(as_mapping(job.get("spec")).get("mxReplicaSpecs"))
    found = []
    for rtype, rspec in specs.items():
        spec = as_mapping(rspec)
        annotations = as_mapping(
            as_mapping(as_mapping(spec.get("template")).get("metadata")).get("annotations")
        )
        replicas = spec.get("replicas", 1)
        found.append(
            TemplateTopology(
                path=f"spec.mxReplicaSpecs.{rtype}.template.metadata.annotations",
                annotations=annotations,
                count=replicas
                if isinstance(replicas, int) and not isinstance(replicas, bool)
                else 1,
            )
        )
    return found


def topology_problems(job: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Every rule of Kueue's a job's topology annotations break, per template then across."""
    topologies = job_topologies(job)
    problems = [p for t in topologies for p in annotation_problems(t)]
    return problems + grouping_problems(topologies)
