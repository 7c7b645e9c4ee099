"""``make test-kube-versions`` (localkube.scenarios.kube_versions) runs what the chart claims: its
oldest release is the chart's kubeVersion floor, each release has its pinned module, and the jobs
it sends are the valid and the invalid one it says."""

from __future__ import annotations

import re

import yaml

from localkube.base.paths import PROJECT_ROOT
from localkube.scenarios import kube_versions
from shared.validation import validate


def minor(version: str) -> int:
    found = re.match(r"v?1\.(\d+)\.", version)
    assert found, version
    return int(found.group(1))


def test_the_oldest_release_is_the_charts_floor_and_each_is_pinned() -> None:
    chart = yaml.safe_load((PROJECT_ROOT / "charts" / "mxjob-operator" / "Chart.yaml").read_text())
    floor = chart["kubeVersion"].removeprefix(">=")
    assert minor(kube_versions.VERSIONS[0]) == minor(floor)
    assert sorted(kube_versions.VERSIONS, key=minor) == list(kube_versions.VERSIONS)
    for version in kube_versions.VERSIONS:
        go_mod = (PROJECT_ROOT / "hack" / "kube-apiserver" / version / "go.mod").read_text()
        assert f"require k8s.io/kubernetes {version}\n" in go_mod
        assert f"k8s.io/apiserver => k8s.io/apiserver v0.{version.removeprefix('v1.')}" in go_mod


def test_the_job_that_runs_is_valid_and_the_refused_one_is_not() -> None:
    assert validate(kube_versions.mxjob("runs")) == []
    assert [v.path for v in validate(kube_versions.mxjob("invalid", workers=2))] == [
        "spec.mxReplicaSpecs.Worker.replicas"
    ]
