"""The MXJob CRD as the reference reads it: its versions and their own fields.

"Own" fields are the ones this project defines: everything but the Kubernetes PodTemplateSpec
each replica embeds, which Kubernetes documents (and whose schema ``hack/gen_crd.py`` copies from
the API server). The walk is shared by the API page and by the test that every own field has a
description (tests/hack/test_gen_crd.py).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
CRD_FILE = ROOT / "manifests" / "crd" / "mxjobs.kubeflow.org.yaml"
TEMPLATE_SUFFIX = ".template"
"""The pod template of a replica: ``spec.mxReplicaSpecs.<type>.template``."""
MAP_KEY = "<type>"
"""How a path names a map's key: both maps of the CRD are keyed by replica type."""


@dataclass(frozen=True)
class Field:
    """One named field: its dotted path (``[]`` for a list's items, ``<type>`` for a map's key),
    its schema, and whether its parent requires it."""

    path: str
    schema: Mapping[str, Any]
    required: bool

    @property
    def is_pod_template(self) -> bool:
        return self.path.startswith("spec.mxReplicaSpecs.") and self.path.endswith(TEMPLATE_SUFFIX)

    @property
    def is_object_meta(self) -> bool:
        """Kubernetes' ObjectMeta: the API server refuses a CRD whose schema describes it, so its
        description is Kubernetes' reference, not the CRD's."""
        return self.path == "metadata"


def load(path: Path = CRD_FILE) -> dict[str, Any]:
    loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(loaded, dict):
        raise ValueError(f"{path} is not a YAML mapping")
    return loaded


def versions(crd: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """Version name → its entry (``served``, ``storage``, ``schema``...), in the CRD's order."""
    return {str(v["name"]): v for v in crd["spec"]["versions"]}


def root_schema(version: Mapping[str, Any]) -> Mapping[str, Any]:
    schema: Mapping[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema


def own_fields(schema: Mapping[str, Any], path: str = "") -> Iterator[Field]:
    """Every named field below ``schema``, parents first, in the schema's order; the pod template
    is a field, its contents are not."""
    required = set(schema.get("required") or ())
    for name, sub in (schema.get("properties") or {}).items():
        field = Field(f"{path}.{name}" if path else name, sub, name in required)
        yield field
        if not field.is_pod_template:
            yield from _below(sub, field.path)


def _below(schema: Mapping[str, Any], path: str) -> Iterator[Field]:
    yield from own_fields(schema, path)
    items = schema.get("items")
    if isinstance(items, Mapping):
        yield from _below(items, f"{path}[]")
    values = schema.get("additionalProperties")
    if isinstance(values, Mapping):
        yield from _below(values, f"{path}.{MAP_KEY}")
