"""The pod template's schema for the MXJob CRD, from the API server's OpenAPI: every ``$ref``
inlined into a structural schema (what ``hack/gen_crd.py`` embeds in each replica spec), with the
defaults the API server applies to a Pod kept and the extensions a CRD may carry."""

from __future__ import annotations

import copy
from typing import Any

SCHEMA_PREFIX = "#/components/schemas/"


QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"


INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"


OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


KEPT_EXTENSIONS = {"x-kubernetes-int-or-string", "x-kubernetes-preserve-unknown-fields"}


# Descriptions are kept this many levels below the pod template, so `kubectl explain` documents
# the fields users write (template.spec.containers[].env ...) while the CRD, as compact JSON, stays
# at about half of the 256 KiB a client-side `kubectl apply` may store in its annotation.
DESCRIPTION_DEPTH = 4


def _int_or_string(description: str | None) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "x-kubernetes-int-or-string": True,
    }
    if description:
        schema["description"] = description
    return schema


def _embedded_metadata() -> dict[str, Any]:
    """Template metadata: the fields a pod template may carry (as controller-gen emits them)."""
    string_map = {"type": "object", "additionalProperties": {"type": "string"}}
    return {
        "type": "object",
        "description": "Metadata of the pods created from this template: labels and annotations.",
        "properties": {
            "annotations": copy.deepcopy(string_map),
            "labels": copy.deepcopy(string_map),
            "name": {"type": "string"},
            "namespace": {"type": "string"},
            "finalizers": {"type": "array", "items": {"type": "string"}},
        },
    }


def _kept_default(schema: dict[str, Any], *, required: bool = True) -> dict[str, Any]:
    """The schema, with its ``default`` only where the API server would default a pod's field.

    The API server defaults a field of a Pod, so the CRD defaults the same field of the template:
    ``ports[].protocol: TCP``, an optional reference's ``name: ""`` and the like, as controller-gen
    writes them into training-operator's CRD and into Kueue's Workload CRD. A stored template then
    equals its copy in a Kueue Workload's pod set, which Kueue compares field by field (it deletes
    and re-creates a Workload that differs). The OpenAPI also puts a zero value on every required
    field and on list items; those defaults would only turn a missing field's "Required value"
    into an odd value, so they are left out.
    """
    default = schema.get("default")
    if "default" in schema and required and default in ("", 0, False):
        del schema["default"]
    return schema


class Inliner:
    """Turns the OpenAPI v3 component schemas into one self-contained structural schema."""

    def __init__(self, schemas: dict[str, Any]) -> None:
        self.schemas = schemas

    def inline(self, name: str) -> dict[str, Any]:
        return self._node(self.schemas[name], depth=0, stack=(name,))

    def _ref_name(self, node: dict[str, Any]) -> str | None:
        if "$ref" in node:
            return str(node["$ref"]).removeprefix(SCHEMA_PREFIX)
        all_of = node.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1 and "$ref" in all_of[0]:
            return str(all_of[0]["$ref"]).removeprefix(SCHEMA_PREFIX)
        return None

    def _node(self, node: dict[str, Any], *, depth: int, stack: tuple[str, ...]) -> dict[str, Any]:
        description = node.get("description") if depth <= DESCRIPTION_DEPTH else None
        ref = self._ref_name(node)
        if ref is not None:
            if ref in (QUANTITY, INT_OR_STRING):
                return _int_or_string(description)
            if ref == OBJECT_META:
                return _embedded_metadata()
            if ref in stack:
                raise ValueError(f"recursive schema {' -> '.join((*stack, ref))}")
            resolved = self._node(self.schemas[ref], depth=depth, stack=(*stack, ref))
            if description:
                resolved["description"] = description
            return resolved
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in ("$ref", "allOf", "description", "format"):
                continue
            if key.startswith("x-kubernetes-") and key not in KEPT_EXTENSIONS:
                continue
            if key == "properties":
                required = set(node.get("required") or ())
                out[key] = {
                    prop: _kept_default(
                        self._node(sub, depth=depth + 1, stack=stack), required=prop in required
                    )
                    for prop, sub in sorted(value.items())
                }
            elif key in ("items", "additionalProperties") and isinstance(value, dict):
                out[key] = _kept_default(self._node(value, depth=depth + 1, stack=stack))
            else:
                out[key] = copy.deepcopy(value)
        if node.get("format") in ("int32", "int64", "double"):
            out["format"] = node["format"]
        if description:
            out["description"] = description
        if "type" not in out and "anyOf" not in out:
            out["type"] = "object"
            out["x-kubernetes-preserve-unknown-fields"] = True
        return out
