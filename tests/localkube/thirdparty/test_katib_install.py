"""Katib's install with the changes for MXJob trials (localkube/thirdparty/katib_install.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from localkube.thirdparty.katib_install import (
    MXJOB_RESOURCE,
    katib_config,
    kustomization,
    postgres_volume,
)

RELEASED: dict[str, Any] = {
    "init": {"controller": {"trialResources": ["Job.v1.batch", "TFJob.v1.kubeflow.org"]}},
    "runtime": {
        "metricsCollectors": [
            {"kind": "StdOut", "image": "ghcr.io/kubeflow/katib/file-metrics-collector:v0.19.0"},
            {"kind": "TensorFlowEvent", "image": "tfevent:v0.19.0"},
        ],
        "suggestions": [
            {"algorithmName": "random", "image": "hyperopt:v0.19.0"},
            {"algorithmName": "grid", "image": "optuna:v0.19.0"},
        ],
    },
}


def configured() -> dict[str, Any]:
    return katib_config(RELEASED, suggestion_image="goptuna:dev", collector_image="collector:dev")


def test_mxjob_becomes_a_trial_resource_once_and_the_released_ones_stay() -> None:
    resources = configured()["init"]["controller"]["trialResources"]
    assert resources == ["Job.v1.batch", "TFJob.v1.kubeflow.org", MXJOB_RESOURCE]
    again = katib_config(configured(), suggestion_image="goptuna:dev", collector_image="c:dev")
    assert again["init"]["controller"]["trialResources"].count(MXJOB_RESOURCE) == 1


def test_the_goptuna_build_serves_what_goptuna_implements_and_others_keep_theirs() -> None:
    suggestions = {s["algorithmName"]: s["image"] for s in configured()["runtime"]["suggestions"]}
    goptuna = {name: "goptuna:dev" for name in ("random", "tpe", "cmaes", "sobol")}
    assert suggestions == {**goptuna, "grid": "optuna:v0.19.0"}


def test_the_file_collector_is_the_built_one_and_the_released_config_is_not_changed() -> None:
    collectors = configured()["runtime"]["metricsCollectors"]
    assert [c["image"] for c in collectors] == ["collector:dev", "tfevent:v0.19.0"]
    assert RELEASED["runtime"]["metricsCollectors"][0]["image"].startswith("ghcr.io/")


def test_the_overlay_names_the_built_images_and_leaves_the_ui_out() -> None:
    built = {"controller": "docker.io/x/katib-controller:dev-1", "db_manager": "x/db:dev-2",
             "postgres": "x/postgres:dev-3"}  # fmt: skip
    overlay = kustomization(built)
    assert overlay["resources"] == ["../katib-standalone-postgres"]
    assert {"name": "postgres", "newName": "x/postgres", "newTag": "dev-3"} in overlay["images"]
    assert {
        "name": "ghcr.io/kubeflow/katib/katib-controller",
        "newName": "docker.io/x/katib-controller",
        "newTag": "dev-1",
    } in overlay["images"]
    assert "katib-ui" in overlay["patches"][0]["patch"]
    assert overlay["configMapGenerator"][0]["behavior"] == "replace"


def test_postgresqls_volume_is_bound_to_its_claim_only() -> None:
    volume = postgres_volume(Path("/var/lib/node/katib"))
    assert volume["spec"]["claimRef"] == {"namespace": "kubeflow", "name": "katib-postgres"}
    assert volume["spec"]["capacity"] == {"storage": "3Gi"}
    assert volume["spec"]["hostPath"]["path"] == "/var/lib/node/katib"
