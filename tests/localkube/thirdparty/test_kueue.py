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


def test_the_managers_readiness_is_probed_every_second_from_the_first() -> None:
    (patch,) = [p for p in _kustomization()["patches"] if "target" in p]
    operations = {op["path"]: (op["op"], op["value"]) for op in json.loads(patch["patch"])}
    probe = "/spec/template/spec/containers/0/readinessProbe"
    assert operations[f"{probe}/initialDelaySeconds"] == ("replace", 1)
    assert operations[f"{probe}/periodSeconds"] == ("replace", 1)


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


def _current(**kwargs: Any) -> dict[str, Any]:
    return dict(
        kueue.CURRENT.kustomization(
            image_ref="docker.io/mxjob-operator/kueue-current:abc", released_name=RELEASED, **kwargs
        )
    )


def test_the_newest_release_is_built_from_its_own_archive_under_a_name_of_its_own() -> None:
    source = kueue.CURRENT.source
    assert (source.name, source.project, source.version_variable) == (
        "kueue-current",
        "kueue",
        "KUEUE_CURRENT_VERSION",
    )
    assert source.archive().name.startswith("kueue-v0.19")
    assert kueue.V0_10.source is kueue.SOURCE and kueue.missing == kueue.SOURCE.missing


def test_the_newest_release_keeps_the_webhook_name_reference_and_adds_mxjob_access() -> None:
    overlay = _current()
    assert overlay["configurations"] == ["webhook_name_reference.yaml"]
    assert overlay["resources"][-1] == "extra-objects.yaml"
    assert [r for r in overlay["resources"] if "visibility" in r] == []
    assert {"path": "manager_visibility_patch.yaml"} not in overlay["patches"]
    role, binding = kueue.mxjob_access()
    assert role["rules"] == [
        {
            "apiGroups": ["kubeflow.org"],
            "resources": ["mxjobs", "mxjobs/status"],
            "verbs": ["get", "list", "watch", "patch", "update"],
        }
    ]
    assert binding["subjects"][0]["name"] == "controller-manager"
    assert "configurations" not in _kustomization()
    assert "extra-objects.yaml" not in _kustomization()["resources"]


def test_container_operations_are_added_to_the_managers_patch() -> None:
    extra = {"op": "remove", "path": "/spec/template/spec/containers/0/command"}
    (patch,) = [p for p in _current(container_ops=[extra])["patches"] if "target" in p]
    assert json.loads(patch["patch"])[-1] == extra


def test_the_newest_configuration_queues_mxjobs_as_an_external_framework() -> None:
    released = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "integrations": {"frameworks": ["batch/job"]},
    }
    pods_ready = kueue.PodsReady(timeout="30s", backoff_base_seconds=2, backoff_limit_count=1)
    changed = kueue.current_configuration(released, pods_ready=pods_ready)
    assert changed["integrations"] == {
        "frameworks": ["batch/job"],
        "externalFrameworks": ["MXJob.v1.kubeflow.org"],
    }
    assert changed["multiKueue"] == {"externalFrameworks": [{"name": "MXJob.v1.kubeflow.org"}]}
    assert changed["waitForPodsReady"] == {
        "timeout": "30s",
        "blockAdmission": False,
        "requeuingStrategy": {
            "timestamp": "Eviction",
            "backoffBaseSeconds": 2,
            "backoffLimitCount": 1,
        },
    }
    assert "enable" not in changed["waitForPodsReady"]  # v1beta2 has no such field


def test_without_a_back_off_no_requeuing_strategy_is_written() -> None:
    assert kueue.PodsReady().setting() == {"timeout": "5m", "blockAdmission": False}
