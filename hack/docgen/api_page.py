"""docs/reference/api.md: the MXJob API, field by field, from the CRD.

The CRD (manifests/crd/mxjobs.kubeflow.org.yaml, written by ``hack/gen_crd.py``) is what the API
server validates against and what ``kubectl explain`` shows, so the page is that schema made
readable: each own field's path, type, default, allowed values and description. The pod template
is Kubernetes' own type and links to Kubernetes' reference instead of being expanded.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from docgen import crd
from docgen.api_defaults import CRD, UNSET, WEBHOOK, Defaults
from docgen.markdown import code, codes, header, link, page, prose, table
from shared.constants import CONTAINER_NAME, PORT_NAME, V1, V1BETA1
from shared.defaults import DEFAULT_PORT

MODULE = "hack/docgen/api_page.py"
OBJECT_META_REFERENCE = (
    "https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/object-meta/"
)
POD_TEMPLATE_REFERENCE = (
    "https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/pod-template-v1/"
)
SECTIONS = {
    "spec": "Spec",
    "status": "Status",
}


def type_name(schema: Mapping[str, Any]) -> str:
    """The field's type as a reader would say it: ``integer (int32)``, ``map of object``..."""
    if schema.get("x-kubernetes-int-or-string") or "anyOf" in schema:
        return "integer or string"
    kind = str(schema.get("type", "object"))
    if kind == "array" and isinstance(schema.get("items"), Mapping):
        return f"array of {type_name(schema['items'])}"
    if kind == "object" and isinstance(schema.get("additionalProperties"), Mapping):
        return f"map of {type_name(schema['additionalProperties'])}"
    fmt = schema.get("format")
    return f"{kind} ({fmt})" if fmt else kind


def allowed(schema: Mapping[str, Any]) -> str:
    """The Allowed values column: an enum, bounds, and whether unknown fields are kept."""
    found = []
    if "enum" in schema:
        found.append(codes(schema["enum"]))
    if "minimum" in schema:
        found.append(f"≥ {schema['minimum']}")
    if "maximum" in schema:
        found.append(f"≤ {schema['maximum']}")
    if schema.get("x-kubernetes-preserve-unknown-fields") and schema.get("properties"):
        found.append("other fields kept")
    return "; ".join(found)


def description(field: crd.Field) -> str:
    text = prose(str(field.schema.get("description", "")))
    if field.is_pod_template:
        text += " Kubernetes' " + link("PodTemplateSpec", POD_TEMPLATE_REFERENCE) + "."
    if field.is_object_meta:
        text = "Kubernetes' " + link("ObjectMeta", OBJECT_META_REFERENCE) + ": name, namespace, "
        text += "labels, annotations."
    return ("Required. " if field.required else "") + text


def _rows(fields: Iterable[crd.Field], defaults: Defaults | None) -> list[list[str]]:
    rows = []
    for field in fields:
        row = [code(field.path), type_name(field.schema)]
        if defaults is not None:
            row.append(defaults.cell(field.path, field.schema))
        rows += [[*row, allowed(field.schema), description(field)]]
    return rows


def field_tables(schema: Mapping[str, Any], defaults: Defaults) -> str:
    """The object's own fields, then a section per top-level field (spec, status)."""
    fields = list(crd.own_fields(schema))
    known = {f.path for f in fields}
    missing = sorted({*defaults.webhook, *defaults.read} - known)
    if missing:
        raise ValueError(f"defaults of fields the CRD does not have: {missing}")
    head = ["Field", "Type", "Default", "Allowed values", "Description"]
    top = [f for f in fields if "." not in f.path and f.path not in SECTIONS]
    parts = ["## Object", table(head, _rows(top, defaults))]
    for name, title in SECTIONS.items():
        below = [f for f in fields if f.path == name or f.path.startswith(name + ".")]
        with_default = name != "status"
        shown = head if with_default else [h for h in head if h != "Default"]
        parts += [f"## {title}", table(shown, _rows(below, defaults if with_default else None))]
    return page(*parts)


def rules(schema: Mapping[str, Any]) -> str:
    """The CEL rules on ``spec``: checked by the API server even without the webhooks."""
    found = schema["properties"]["spec"].get("x-kubernetes-validations") or []
    rows = [
        [str(r.get("message", "")), code(r.get("fieldPath", "")), code(r["rule"])] for r in found
    ]
    return page(
        "## Rules the API server checks",
        "Besides the types and bounds above, the CRD carries CEL rules on `spec`. The API "
        "server checks them even when the operator's webhooks are not registered; the "
        "validating webhook checks these and more, with fuller messages.",
        table(["Message", "Field", "Rule"], rows),
    )


def columns(version: Mapping[str, Any]) -> str:
    rows = [
        [str(c["name"]).upper(), code(c["jsonPath"]), str(c.get("description", ""))]
        for c in version.get("additionalPrinterColumns") or []
    ]
    return page(
        "## Columns of kubectl get",
        table(["Column", "From", "Description"], rows),
    )


def v1beta1_note(versions: Mapping[str, Mapping[str, Any]]) -> str:
    """What v1beta1 has and v1 has not, and the other way round, from the two schemas."""
    paths = {
        name: {f.path for f in crd.own_fields(crd.root_schema(v))} for name, v in versions.items()
    }
    only_old = _tops(paths[V1BETA1] - paths[V1])
    only_new = _tops(paths[V1] - paths[V1BETA1])
    served = "served" if versions[V1BETA1].get("served") else "not served by default"
    return page(
        f"## {V1BETA1}",
        f"`kubeflow.org/{V1BETA1}` is the shape of the original mxnet-operator. The CRD keeps "
        f"it, {served}: the v1beta1 kustomize component or the chart's `v1beta1: true` serve it "
        f"beside {V1}. It converts to and from {V1}, the storage version, without loss. Its "
        "replica pod templates are kept whole and checked after conversion to v1.",
        f"Only in {V1BETA1}: {codes(only_old)}.",
        f"Only in {V1}: {codes(only_new)}.",
    )


def _tops(paths: set[str]) -> list[str]:
    """The paths whose parent is not among them: a subtree named once."""
    return sorted(p for p in paths if not any(p.startswith(q + ".") for q in paths if q != p))


def render() -> str:
    definition = crd.load()
    names = definition["spec"]["names"]
    versions = crd.versions(definition)
    v1 = versions[V1]
    return page(
        header(MODULE),
        "# MXJob API reference",
        f"`{definition['spec']['group']}/{V1}` `{names['kind']}`: a distributed MXNet training "
        "job (`jobMode: MXTrain`) or a TVM auto-tuning job (`jobMode: MXTune`). "
        f"Namespaced; plural `{names['plural']}`, short name "
        f"{codes(names.get('shortNames', []))}, category {codes(names.get('categories', []))}.",
        "This page is made from the CRD (manifests/crd/mxjobs.kubeflow.org.yaml), the schema "
        "`kubectl explain mxjob` shows. Paths use `[]` for the items of a list and `<type>` "
        "for a replica type (Scheduler, Server, Worker, TunerTracker, TunerServer, Tuner).",
        f"Defaults name who applies them: ({CRD}) the API server, from the CRD; ({WEBHOOK}) the "
        "mutating webhook, which writes the value into the stored job; "
        f"({UNSET}) nothing is written, the operator reads an absent field so. The webhook "
        f"also names a sole unnamed container {code(CONTAINER_NAME)} and gives the "
        f"{code(CONTAINER_NAME)} container the port {code(PORT_NAME)} ({DEFAULT_PORT}) and "
        "the env of the [job contract](job-contract.md).",
        field_tables(crd.root_schema(v1), Defaults.from_code()),
        rules(crd.root_schema(v1)),
        columns(v1),
        v1beta1_note(versions),
    )
