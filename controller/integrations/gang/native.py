"""kube-scheduler's own gang objects for a job: its Workload and PodGroup, in the shape of the API
version the cluster serves (pure).

One ``Workload`` per job with one pod-group template, one ``PodGroup`` made from that template,
every pod joined to it through ``spec.schedulingGroup.podGroupName``; both objects named after
the job and owned by it, so garbage collection removes them with it. Two versions of the API:

- ``scheduling.k8s.io/v1alpha2`` (Kubernetes v1.36): the PodGroup names its template with
  ``podGroupTemplateRef.workload``; ``disruptionMode`` is a string, ``Pod`` or ``PodGroup``.
- ``scheduling.k8s.io/v1alpha3`` (Kubernetes v1.37): ``workloadRef`` (``templateName``);
  ``disruptionMode`` is ``{single: {}}`` or ``{all: {}}``.

Beyond the gang's size (``minCount``: :func:`~controller.integrations.gang.podgroups.
min_available`), a job may ask for two things, both copied into the template and the PodGroup:

- ``runPolicy.schedulingPolicy.topologyKey`` (a node-label key, such as
  ``topology.kubernetes.io/rack``): ``schedulingConstraints.topology: [{key}]``, every pod of
  the gang in one domain of that label (kube-scheduler's ``TopologyAwareWorkloadScheduling``).
- ``runPolicy.schedulingPolicy.priorityClass`` (training-operator v1.8's field, also Volcano's):
  ``priorityClassName``, and with it the disruption mode that preempts the whole gang or none
  of it (``PodGroup``, ``{all: {}}``): a ps-lite job that loses one member stops as a whole, so
  preempting part of it frees the rest of its resources for nothing
  (``WorkloadAwarePreemption`` in v1.36; v1.37 serves the fields without a gate).

A job without them gets neither field, exactly as before they existed. An API server whose
feature gate is off drops a gated field silently (``dropDisabled…`` in its PodGroup strategy):
:func:`compare` tells such a missing field from a changed one, so the I/O
(:mod:`controller.integrations.gang.native_writes`) can say so instead of replacing the object
forever.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from controller.integrations.gang.podgroups import min_available
from controller.job.ownership import owner_reference
from controller.job.view import MXJobView
from shared.constants import GROUP, KIND
from shared.spec import as_mapping

GANG_GROUP: Final = "scheduling.k8s.io"
"""kube-scheduler's Workload and PodGroup (``native``); not Kueue's Workload."""

NativeVersion = Literal["v1alpha2", "v1alpha3"]
NATIVE_VERSIONS: Final[tuple[NativeVersion, ...]] = ("v1alpha3", "v1alpha2")
"""The versions this controller writes, the newest first: the first the cluster serves wins."""

POD_GROUP_TEMPLATE: Final = "replicas"
"""The one pod-group template of a job's gang Workload: every replica of the job is one gang."""

TOPOLOGY: Final = "schedulingConstraints"
PRIORITY_CLASS: Final = "priorityClassName"
DISRUPTION: Final = "disruptionMode"
OPTIONAL_FIELDS: Final = (TOPOLOGY, PRIORITY_CLASS, DISRUPTION)
"""What a job may add to its template and PodGroup beyond ``schedulingPolicy``."""

FEATURE_GATES: Final[Mapping[NativeVersion, Mapping[str, str]]] = {
    "v1alpha2": {
        TOPOLOGY: "TopologyAwareWorkloadScheduling",
        PRIORITY_CLASS: "WorkloadAwarePreemption",
        DISRUPTION: "WorkloadAwarePreemption",
    },
    "v1alpha3": {TOPOLOGY: "TopologyAwareWorkloadScheduling"},
}
"""The feature gate without which the API server drops a field (pkg/features/kube_features.go
and the ``+featureGate`` tags of k8s.io/api's scheduling types of that release)."""

_WHOLE_GANG: Final[Mapping[NativeVersion, object]] = {
    "v1alpha2": "PodGroup",
    "v1alpha3": {"all": {}},
}
"""The disruption mode that preempts every pod of the gang together."""
_DEFAULT_DISRUPTION: Final[Mapping[NativeVersion, object]] = {
    "v1alpha2": "Pod",
    "v1alpha3": {"single": {}},
}
"""What the API server stores when no disruption mode is given (``+default`` of the field)."""


def api_version(version: NativeVersion) -> str:
    return f"{GANG_GROUP}/{version}"


@dataclass(frozen=True)
class GangOptions:
    """What a job asks of its gang."""

    min_count: int
    topology_key: str = ""
    """A node-label key: every pod of the gang in one domain of it; "" for none."""
    priority_class: str = ""
    """The gang's PriorityClass, and with it whole-gang preemption; "" for none."""


def gang_options(job: MXJobView) -> GangOptions:
    policy = job.run_policy.scheduling_policy
    topology, priority = policy.get("topologyKey"), policy.get("priorityClass")
    return GangOptions(
        min_count=min_available(job),
        topology_key=topology if isinstance(topology, str) else "",
        priority_class=priority if isinstance(priority, str) else "",
    )


def gang_fields(options: GangOptions, version: NativeVersion) -> dict[str, Any]:
    """The gang part of the template and of the PodGroup: ``schedulingPolicy`` and what the
    job adds to it (nothing when it asks for nothing)."""
    fields: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": options.min_count}}}
    if options.topology_key:
        fields[TOPOLOGY] = {"topology": [{"key": options.topology_key}]}
    if options.priority_class:
        fields[PRIORITY_CLASS] = options.priority_class
        fields[DISRUPTION] = _WHOLE_GANG[version]
    return fields


def _metadata(job: MXJobView, labels: Mapping[str, str]) -> dict[str, Any]:
    return {
        "name": job.name,
        "namespace": job.namespace,
        "labels": dict(labels),
        "ownerReferences": [owner_reference(job)],
    }


def build_gang_workload(
    job: MXJobView, *, labels: Mapping[str, str], version: NativeVersion = "v1alpha2"
) -> dict[str, Any]:
    """The job's kube-scheduler Workload: who the pods belong to, and that they form one gang."""
    template = {"name": POD_GROUP_TEMPLATE, **gang_fields(gang_options(job), version)}
    return {
        "apiVersion": api_version(version),
        "kind": "Workload",
        "metadata": _metadata(job, labels),
        "spec": {
            "controllerRef": {"apiGroup": GROUP, "kind": KIND, "name": job.name},
            "podGroupTemplates": [template],
        },
    }


def _template_ref(job: MXJobView, version: NativeVersion) -> dict[str, Any]:
    if version == "v1alpha2":
        workload = {"workloadName": job.name, "podGroupTemplateName": POD_GROUP_TEMPLATE}
        return {"podGroupTemplateRef": {"workload": workload}}
    return {"workloadRef": {"workloadName": job.name, "templateName": POD_GROUP_TEMPLATE}}


def build_pod_group(
    job: MXJobView, *, labels: Mapping[str, str], version: NativeVersion = "v1alpha2"
) -> dict[str, Any]:
    """The job's PodGroup, the runtime instance of its gang Workload's template the pods join."""
    return {
        "apiVersion": api_version(version),
        "kind": "PodGroup",
        "metadata": _metadata(job, labels),
        "spec": {**_template_ref(job, version), **gang_fields(gang_options(job), version)},
    }


def gang_part(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """Where the gang fields sit: a PodGroup's spec, a Workload's (first) template."""
    spec = as_mapping(obj.get("spec"))
    if obj.get("kind") == "Workload":
        templates = spec.get("podGroupTemplates") or [{}]
        return as_mapping(templates[0]) if isinstance(templates, list) else {}
    return spec


@dataclass(frozen=True)
class Comparison:
    """How a stored Workload or PodGroup stands to the one the job wants now."""

    changed: tuple[str, ...]
    """Fields that differ (or the owner): the object must be replaced (its spec is immutable)."""
    missing: tuple[str, ...]
    """Fields the job asks for that the stored object lacks: a field the API server drops (its
    feature gate is off), or one the job gained while suspended."""


def compare(wanted: Mapping[str, Any], stored: Mapping[str, Any]) -> Comparison:
    """Compare the gang fields this controller writes; what the API server adds is not a
    change: the default disruption mode, the ``priority`` (and a default class) the Priority
    admission plugin fills in. Who owns the object is the caller's to check."""
    version = version_of(wanted)
    want, have = gang_part(wanted), gang_part(stored)
    changed: list[str] = []
    if as_mapping(want.get("schedulingPolicy")) != as_mapping(have.get("schedulingPolicy")):
        changed.append("schedulingPolicy")
    missing: list[str] = []
    for field in OPTIONAL_FIELDS:
        wanted_value, stored_value = want.get(field), have.get(field)
        if field == DISRUPTION and stored_value == _DEFAULT_DISRUPTION[version]:
            stored_value = None
        if field == PRIORITY_CLASS and wanted_value is None:
            continue  # admission may have given it the cluster's default class
        if wanted_value == stored_value:
            continue
        (missing if stored_value is None else changed).append(field)
    return Comparison(tuple(changed), tuple(missing))


def asked_fields(obj: Mapping[str, Any]) -> tuple[str, ...]:
    """The optional fields a built object carries."""
    part = gang_part(obj)
    return tuple(f for f in OPTIONAL_FIELDS if f in part)


def version_of(obj: Mapping[str, Any]) -> NativeVersion:
    """The API version a gang object was built for or read in."""
    return "v1alpha3" if str(obj.get("apiVersion", "")).endswith("/v1alpha3") else "v1alpha2"


def not_kept_message(
    kinds: tuple[str, ...], fields: tuple[str, ...], version: NativeVersion
) -> str:
    """The Event and log line for fields the API server did not keep."""
    gates = FEATURE_GATES[version]
    named = ", ".join(f"{f} (feature gate {gates[f]})" if f in gates else f for f in fields)
    return (
        f"The API server did not keep {named} of the job's {' and '.join(kinds)} "
        f"({api_version(version)}): it drops a field whose feature gate is off, so "
        "kube-scheduler places this gang without it; docs/how-to/gang-scheduling.md lists the "
        "gates."
    )
