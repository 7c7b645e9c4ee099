"""What admission adds to a job's pod templates and how stopping takes it away. Pure.

Kueue's ``podset`` package for MXJob: each podSet's info from the admitted flavors, the queue
labels and the admission checks' updates (:func:`admitted_infos`), merged into the replica
templates when the job starts (:func:`started`) and restored from the Workload's own copy of the
templates when it stops (:func:`stopped`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from controller.integrations.kueue.workload import (
    CLUSTER_QUEUE_LABEL,
    LOCAL_QUEUE_LABEL,
    MULTIKUEUE_ORIGIN_LABEL,
    MULTIKUEUE_POD_LABEL,
    PODSET_LABEL,
    TOPOLOGY_GATE,
    UNCONSTRAINED_TOPOLOGY_ANNOTATION,
    WORKLOAD_ANNOTATION,
    Obj,
)
from controller.job.view import MXJobView
from shared.jsontree import copy_json
from shared.spec import as_mapping

DNS1123_LABEL: Final = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


class PodSetConflictError(ValueError):
    """What admission asks for contradicts the job's own template (a node selector key with
    another value): starting cannot succeed, so the Workload is finished as failed to start."""


@dataclass
class PodSetInfo:
    """What admission adds to one podSet's pod template (Kueue's ``podset.PodSetInfo``)."""

    name: str
    count: int
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: list[Obj] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    scheduling_gates: list[Obj] = field(default_factory=list)

    def merge(self, other: PodSetInfo, *, where: str) -> None:
        for mine, theirs, what in (
            (self.node_selector, other.node_selector, "node selector"),
            (self.labels, other.labels, "label"),
            (self.annotations, other.annotations, "annotation"),
        ):
            for key, value in theirs.items():
                if key in mine and mine[key] != value:
                    raise PodSetConflictError(
                        f"{where}: {what} {key}={value!r} conflicts with {mine[key]!r} in "
                        f"podSet {self.name}"
                    )
                mine[key] = value
        self.tolerations += [t for t in other.tolerations if t not in self.tolerations]
        self.scheduling_gates += [
            g for g in other.scheduling_gates if g not in self.scheduling_gates
        ]


def admitted_infos(
    workload: Mapping[str, Any], flavors: Mapping[str, Mapping[str, Any]]
) -> list[PodSetInfo]:
    """Per podSet, what Kueue's admission asks of its pods (``getPodSetsInfoFromStatus``, with
    Kueue v0.19's default feature gates): the assigned flavors' node labels and tolerations,
    the topology gate of a TAS assignment, the podSet, queue and MultiKueue worker labels, the
    Workload annotation, and each admission check's podSetUpdates. ``flavors``: by name."""
    status = as_mapping(workload.get("status"))
    meta = as_mapping(workload.get("metadata"))
    spec_sets = {
        str(p.get("name")): as_mapping(p)
        for p in as_mapping(workload.get("spec")).get("podSets") or []
    }
    admission = as_mapping(status.get("admission"))
    infos = []
    for assignment in admission.get("podSetAssignments") or []:
        name = str(assignment.get("name"))
        podset = spec_sets.get(name, {})
        count = assignment.get("count")
        info = PodSetInfo(name, int(count if count is not None else podset.get("count") or 0))
        if assignment.get("topologyAssignment"):
            _topology_info(info, podset)
        for flavor_name in dict.fromkeys(as_mapping(assignment.get("flavors")).values()):
            flavor = as_mapping(as_mapping(flavors.get(str(flavor_name))).get("spec"))
            info.node_selector.update(as_mapping(flavor.get("nodeLabels")))
            info.tolerations += [dict(t) for t in flavor.get("tolerations") or []]
        info.annotations[WORKLOAD_ANNOTATION] = str(meta.get("name"))
        info.labels[PODSET_LABEL] = name
        if MULTIKUEUE_ORIGIN_LABEL in as_mapping(meta.get("labels")):
            info.labels[MULTIKUEUE_POD_LABEL] = "true"
        _queue_labels(info, workload)
        for check in status.get("admissionChecks") or []:
            for update in as_mapping(check).get("podSetUpdates") or []:
                if as_mapping(update).get("name") == name:
                    info.merge(
                        _from_update(name, update), where=f"admission check {check.get('name')}"
                    )
                    break  # Kueue reads the first update per podSet of a check
        infos.append(info)
    return infos


def _topology_info(info: PodSetInfo, podset: Mapping[str, Any]) -> None:
    """A Topology Aware Scheduling assignment: pods wait behind Kueue's topology gate (Kueue's
    TAS ungater places them); a podSet that asked for no topology runs unconstrained."""
    request = as_mapping(podset.get("topologyRequest"))
    if not any(request.get(key) is not None for key in ("required", "preferred", "unconstrained")):
        info.annotations[UNCONSTRAINED_TOPOLOGY_ANNOTATION] = "true"
    info.scheduling_gates.append({"name": TOPOLOGY_GATE})


def _queue_labels(info: PodSetInfo, workload: Mapping[str, Any]) -> None:
    """Kueue's ``AssignQueueLabelsForPods`` (on by default): the LocalQueue, and the
    ClusterQueue when its name is a valid label value."""
    info.labels[LOCAL_QUEUE_LABEL] = str(as_mapping(workload.get("spec")).get("queueName") or "")
    cluster_queue = as_mapping(as_mapping(workload.get("status")).get("admission")).get(
        "clusterQueue"
    )
    if isinstance(cluster_queue, str) and DNS1123_LABEL.fullmatch(cluster_queue):
        info.labels[CLUSTER_QUEUE_LABEL] = cluster_queue


def _from_update(name: str, update: Mapping[str, Any]) -> PodSetInfo:
    return PodSetInfo(
        name, 0, node_selector=dict(as_mapping(update.get("nodeSelector"))),
        tolerations=[dict(t) for t in update.get("tolerations") or []],
        labels=dict(as_mapping(update.get("labels"))),
        annotations=dict(as_mapping(update.get("annotations"))),
    )  # fmt: skip


def _templates(stored: Obj) -> dict[str, Obj]:
    """podSet name → the stored job's own replica template (in place, for editing it)."""
    return {
        rtype.lower(): rspec.setdefault("template", {})
        for rtype, rspec in stored["spec"]["mxReplicaSpecs"].items()
        if isinstance(rspec, dict)
    }


def _suspend(stored: Obj, *, suspend: bool) -> None:
    stored["spec"].setdefault("runPolicy", {})["suspend"] = suspend


def started(job: MXJobView, infos: Sequence[PodSetInfo]) -> Obj:
    """The job as stored (``job.raw``, what a PUT sends back) as it starts: unsuspended, each
    template merged with its podSet's info (Kueue's ``RunWithPodSetsInfo``);
    ``PodSetConflictError`` when they contradict."""
    result: Obj = copy_json(dict(job.raw))
    templates = _templates(result)
    for info in infos:
        template = templates.get(info.name)
        if template is None:
            raise PodSetConflictError(f"the job has no replica type for podSet {info.name}")
        meta, spec = template.setdefault("metadata", {}), template.setdefault("spec", {})
        own = PodSetInfo(
            info.name, info.count, dict(spec.get("nodeSelector") or {}),
            list(spec.get("tolerations") or []), dict(meta.get("labels") or {}),
            dict(meta.get("annotations") or {}), list(spec.get("schedulingGates") or []),
        )  # fmt: skip
        own.merge(info, where="admission")
        _write(meta, "labels", own.labels)
        _write(meta, "annotations", own.annotations)
        _write(spec, "nodeSelector", own.node_selector)
        _write(spec, "tolerations", own.tolerations)
        _write(spec, "schedulingGates", own.scheduling_gates)
    _suspend(result, suspend=False)
    return result


def stopped(job: MXJobView, workload: Mapping[str, Any] | None) -> Obj:
    """The job as stored (``job.raw``) as it stops: suspended, and each template's labels,
    annotations, node selector, tolerations and scheduling gates as the Workload recorded them
    before admission (Kueue's ``RestorePodSetsInfo``); without a Workload only suspended."""
    result: Obj = copy_json(dict(job.raw))
    _suspend(result, suspend=True)
    if workload is None:
        return result
    templates = _templates(result)
    for podset in as_mapping(workload.get("spec")).get("podSets") or []:
        template = templates.get(str(podset.get("name")))
        if template is None:
            continue
        original = as_mapping(podset.get("template"))
        old_meta, old_spec = as_mapping(original.get("metadata")), as_mapping(original.get("spec"))
        meta, spec = template.setdefault("metadata", {}), template.setdefault("spec", {})
        for target, source, key in (
            (meta, old_meta, "labels"), (meta, old_meta, "annotations"),
            (spec, old_spec, "nodeSelector"), (spec, old_spec, "tolerations"),
            (spec, old_spec, "schedulingGates"),
        ):  # fmt: skip
            _write(target, key, copy_json(source.get(key)))
        if not meta:
            del template["metadata"]  # what starting added, nothing the job had
    return result


def _write(target: Obj, key: str, value: Any) -> None:
    if value:
        target[key] = value
    else:
        target.pop(key, None)
