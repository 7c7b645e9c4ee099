"""The CRD hack/gen_crd.py writes documents itself: every field the project defines has a
description (``kubectl explain`` and docs/reference/api.md show nothing else). The chart's copy of
it is generated (hack/chartsync.py; tests/hack/test_chartsync.py fails when it is stale)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from docgen import crd


def undescribed(definition: Mapping[str, Any]) -> list[str]:
    """``<version>: <path>`` of every own field without a description."""
    return [
        f"{name}: {field.path}"
        for name, version in crd.versions(definition).items()
        for field in crd.own_fields(crd.root_schema(version))
        if not field.is_object_meta and not str(field.schema.get("description", "")).strip()
    ]


def test_every_own_field_of_the_crd_has_a_description() -> None:
    missing = undescribed(crd.load())
    assert missing == [], "describe them in hack/gen_crd*.py, then run make crd"


def test_the_crd_says_nothing_of_metadata_but_its_type() -> None:
    """The API server refuses a CRD whose schema specifies anything of ``metadata`` ("must not
    specify anything other than name and generateName"), a description included."""
    for name, version in crd.versions(crd.load()).items():
        assert crd.root_schema(version)["properties"]["metadata"] == {"type": "object"}, name


def test_the_walk_reaches_the_deepest_own_fields_and_stops_at_the_pod_template() -> None:
    paths = [f.path for f in crd.own_fields(crd.root_schema(crd.versions(crd.load())["v1"]))]
    assert "status.restarts[].exitCode" in paths
    assert "status.replicaStatuses.<type>.active" in paths
    assert "spec.mxReplicaSpecs.<type>.template" in paths
    assert not [p for p in paths if p.startswith("spec.mxReplicaSpecs.<type>.template.")]


def test_the_check_names_a_field_without_a_description() -> None:
    schema = {
        "properties": {
            "spec": {"description": "What to run.", "properties": {"x": {"type": "string"}}},
            "status": {"items": {"properties": {"y": {"type": "string"}}}, "description": "s"},
        }
    }
    definition = {"spec": {"versions": [{"name": "v9", "schema": {"openAPIV3Schema": schema}}]}}
    assert undescribed(definition) == ["v9: spec.x", "v9: status[].y"]
