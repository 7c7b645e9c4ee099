"""What an exec-mode job pod finds besides its env: which of its volumes are bound at their mount
paths, and which names of its progress URL are pointed at loopback."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from localkube.base.paths import PROJECT_ROOT
from localkube.kubelet.jobmounts import (
    api_volume_container,
    image_directories,
    progress_host_names,
    with_mounts,
)
from localkube.kubelet.profile.volumes import Mount

URL = "https://mxjob-controller-progress.mxjob-system.svc:8444/apis/kubeflow.org/v1/namespaces/n/mxjobs/j/status"


def _pod(volumes: list[dict[str, Any]]) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "n", "uid": "u"}, "spec": {"volumes": volumes}}


def test_only_volumes_whose_files_the_api_defines_are_mounted() -> None:
    pod = _pod(
        [
            {"name": "status", "projected": {"sources": []}},
            {"name": "settings", "configMap": {"name": "c"}},
            {"name": "keys", "secret": {"secretName": "s"}},
            {"name": "labels", "downwardAPI": {"items": []}},
            {"name": "tuning", "emptyDir": {}},
            {"name": "data", "hostPath": {"path": "/data"}},
            {"name": "checkpoints", "persistentVolumeClaim": {"claimName": "c"}},
        ]
    )
    names = ["status", "settings", "keys", "labels", "tuning", "data", "checkpoints"]
    container = {
        "name": "mxnet",
        "command": ["python"],
        "volumeMounts": [{"name": name, "mountPath": f"/{name}"} for name in names],
    }
    kept = api_volume_container(pod, container)
    assert [m["name"] for m in kept["volumeMounts"]] == ["status", "settings", "keys", "labels"]
    assert kept["command"] == ["python"]
    assert len(container["volumeMounts"]) == len(names)  # the pod's own is left as it was


def test_a_container_without_mounts_has_none() -> None:
    assert api_volume_container(_pod([]), {"name": "mxnet"})["volumeMounts"] == []


def test_the_progress_urls_service_is_named_short_and_with_the_cluster_domain() -> None:
    expected = (
        "mxjob-controller-progress.mxjob-system.svc",
        "mxjob-controller-progress.mxjob-system.svc.cluster.local",
    )
    assert progress_host_names({"MXJOB_STATUS_URL": URL}) == expected
    longer = URL.replace(".svc:", ".svc.cluster.local:")
    assert progress_host_names({"MXJOB_STATUS_URL": longer}) == expected


@pytest.mark.parametrize(
    "env",
    [
        {},
        {"MXJOB_STATUS_URL": "https://progress.example.com/apis/x"},
        {"MXJOB_STATUS_URL": "https://10.0.0.7:8444/apis/x"},
        {"MXJOB_STATUS_URL": "https://[::1/broken"},
        {"OTHER_URL": URL},
    ],
)
def test_a_url_naming_no_service_points_nothing_at_loopback(env: dict[str, str]) -> None:
    assert progress_host_names(env) == ()


def test_a_pod_without_mounts_starts_its_command_as_it_is() -> None:
    assert with_mounts(["python", "-m", "train"], [], path_prefix=()) == ["python", "-m", "train"]


def test_the_checkout_and_the_virtualenvs_stay_visible_under_a_mount() -> None:
    keep = image_directories(["/opt/venv/bin", f"{PROJECT_ROOT}/.venv/bin", "/usr/bin", "/bin"])
    assert keep == [str(PROJECT_ROOT), "/opt/venv", "/usr"]


def test_a_mounted_volume_is_read_at_its_mount_path_by_the_command(tmp_path: Path) -> None:
    volume = tmp_path / "volume"
    volume.mkdir()
    (volume / "token").write_text("t0k3n")
    target = tmp_path / "run" / "secrets" / "mxjob"
    argv = with_mounts(
        ["cat", str(target / "token")], [Mount(volume, str(target), True)], path_prefix=()
    )
    assert argv[0] == "unshare"
    result = subprocess.run(argv, capture_output=True, text=True, check=True)
    assert result.stdout == "t0k3n"
