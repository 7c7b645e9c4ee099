"""The install components applied without kustomize: each changes what it names, and only that."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonpatch
import pytest
import yaml

from localkube.plane.install_choices import InstallChoices, apply_choices
from localkube.plane.operator import CRD_FILE, WEBHOOK_CONFIGURATIONS


def _crd() -> dict[str, Any]:
    crd: dict[str, Any] = yaml.safe_load(CRD_FILE.read_text())
    return crd


def _configurations() -> dict[str, dict[str, Any]]:
    documents = yaml.safe_load_all(WEBHOOK_CONFIGURATIONS.read_text())
    return {d["kind"]: d for d in documents if d}


def _served(crd: dict[str, Any]) -> dict[str, bool]:
    return {v["name"]: v["served"] for v in crd["spec"]["versions"]}


def test_no_choice_is_the_default_install_v1_alone_and_one_call_per_create() -> None:
    crd = _crd()
    assert apply_choices(crd, InstallChoices()) == crd
    assert _served(crd) == {"v1": True, "v1beta1": False}
    validating = _configurations()["ValidatingWebhookConfiguration"]
    assert validating["webhooks"][0]["rules"][0]["operations"] == ["UPDATE"]
    mutating = _configurations()["MutatingWebhookConfiguration"]
    assert mutating["webhooks"][0]["rules"][0]["operations"] == ["CREATE", "UPDATE"]


def test_v1beta1_serves_v1beta1_and_changes_nothing_else() -> None:
    crd = _crd()
    chosen = apply_choices(crd, InstallChoices(v1beta1=True))
    assert _served(chosen) == {"v1": True, "v1beta1": True}
    chosen["spec"]["versions"][1]["served"] = False
    assert chosen == crd
    for configuration in _configurations().values():
        assert apply_choices(configuration, InstallChoices(v1beta1=True)) == configuration


def test_validate_on_create_adds_create_to_the_validating_webhook_alone() -> None:
    configurations = _configurations()
    choices = InstallChoices(validate_on_create=True)
    validating = apply_choices(configurations["ValidatingWebhookConfiguration"], choices)
    mxjobs, experiments = validating["webhooks"]
    assert mxjobs["rules"][0]["operations"] == ["CREATE", "UPDATE"]
    assert experiments == configurations["ValidatingWebhookConfiguration"]["webhooks"][1]
    mutating = configurations["MutatingWebhookConfiguration"]
    assert apply_choices(mutating, choices) == mutating
    assert apply_choices(_crd(), choices) == _crd()


def test_the_manifest_is_copied_not_changed_in_place() -> None:
    crd = _crd()
    apply_choices(crd, InstallChoices(v1beta1=True))
    assert _served(crd)["v1beta1"] is False


def test_a_component_whose_test_operation_fails_is_refused_as_kustomize_would(
    tmp_path: Path,
) -> None:
    """A component written for another shape of the manifest must not patch the wrong field."""
    component = tmp_path / "v1beta1"
    component.mkdir()
    patch = [
        {"op": "test", "path": "/spec/versions/1/name", "value": "v2"},
        {"op": "replace", "path": "/spec/versions/1/served", "value": True},
    ]
    (component / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "kind": "Component",
                "patches": [
                    {
                        "target": {
                            "kind": "CustomResourceDefinition",
                            "name": "mxjobs.kubeflow.org",
                        },
                        "patch": yaml.safe_dump(patch),
                    }
                ],
            }
        )
    )
    with pytest.raises(jsonpatch.JsonPatchTestFailed):
        apply_choices(_crd(), InstallChoices(v1beta1=True), root=tmp_path)


def test_a_kustomization_that_is_not_a_component_is_refused(tmp_path: Path) -> None:
    (tmp_path / "v1beta1").mkdir()
    (tmp_path / "v1beta1" / "kustomization.yaml").write_text("kind: Kustomization\n")
    with pytest.raises(ValueError, match="not a kustomize Component"):
        apply_choices(_crd(), InstallChoices(v1beta1=True), root=tmp_path)
