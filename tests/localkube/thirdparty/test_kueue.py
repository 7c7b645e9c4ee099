"""Kueue's install on the real node: its own config/default, minus what cannot run here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from localkube.thirdparty import kueue

RELEASED = "us-central1-docker.pkg.dev/k8s-staging-images/kueue/kueue"


def _kustomization() -> dict[str, Any]:
    return dict(
        kueue.kustomization(
            image_ref="docker.io/mxjob-operator/kueue:abc123", released_name=RELEASED
        )
    )


def test_the_released_image_is_replaced_by_the_one_built_here() -> None:
    assert _kustomization()["images"] == [
        {"name": RELEASED, "newName": "docker.io/mxjob-operator/kueue", "newTag": "abc123"}
    ]


def test_the_components_are_config_defaults_without_the_metrics_proxy_or_visibility_api() -> None:
    resources = _kustomization()["resources"]
    assert resources == [
        "../components/crd",
        "../components/rbac",
        "../components/manager",
        "../components/internalcert",
        "../components/webhook",
    ]
    patches = _kustomization()["patches"]
    assert {"path": "manager_config_patch.yaml"} in patches
    assert {"path": "manager_webhook_patch.yaml"} in patches
    assert not any("auth_proxy" in str(patch) for patch in patches)


def test_the_manager_is_never_pulled_asks_for_little_cpu_and_serves_no_visibility_api() -> None:
    (patch,) = [p for p in _kustomization()["patches"] if "target" in p]
    assert patch["target"] == {"kind": "Deployment", "name": "controller-manager"}
    operations = {op["path"]: op["value"] for op in json.loads(patch["patch"])}
    assert operations["/spec/template/spec/containers/0/imagePullPolicy"] == "Never"
    assert operations["/spec/template/spec/containers/0/resources/requests"]["cpu"] == "100m"
    assert operations["/spec/template/spec/containers/0/args/-"] == (
        "--feature-gates=VisibilityOnDemand=false"
    )


def test_the_configuration_is_kueues_own_with_wait_for_pods_ready_on() -> None:
    released = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta1",
        "kind": "Configuration",
        "integrations": {"frameworks": ["batch/job", "kubeflow.org/mxjob"]},
    }
    changed = kueue.configuration(released)
    assert changed["integrations"] == released["integrations"]
    assert changed["waitForPodsReady"] == {
        "enable": True,
        "timeout": "5m",
        "blockAdmission": False,
    }
    assert "waitForPodsReady" not in released


def test_the_released_image_name_is_read_from_the_manager_component(tmp_path: Path) -> None:
    manager = tmp_path / "components" / "manager"
    manager.mkdir(parents=True)
    (manager / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {"images": [{"name": "controller", "newName": RELEASED, "newTag": "release-0.10"}]}
        )
    )
    assert kueue.released_image_name(tmp_path) == RELEASED
