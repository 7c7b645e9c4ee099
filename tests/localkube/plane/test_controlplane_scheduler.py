"""kube-scheduler's command line and configuration file as the local control plane builds them."""

from __future__ import annotations

import json
from pathlib import Path

from localkube.plane.controlplane import ControlPlane, ControlPlaneSettings, ControlPlaneState


def _state(tmp_path: Path) -> ControlPlaneState:
    return ControlPlaneState(
        bin_dir=str(tmp_path / "bin"),
        etcd_port=1,
        etcd_peer_port=2,
        apiserver_port=3,
        controller_manager_port=4,
        scheduler_port=5,
    )


def test_without_a_configuration_the_scheduler_gets_its_client_and_election_by_flags(
    tmp_path: Path,
) -> None:
    plane = ControlPlane(ControlPlaneSettings(state_dir=tmp_path, scheduler=True))
    argv = plane._scheduler_argv(_state(tmp_path))
    assert f"--kubeconfig={tmp_path / 'kubeconfig'}" in argv
    assert "--leader-elect=false" in argv
    assert not any(arg.startswith("--config=") for arg in argv)
    assert not (tmp_path / "scheduler-config.json").exists()


def test_a_configuration_is_completed_with_the_planes_kubeconfig_and_no_election(
    tmp_path: Path,
) -> None:
    config = {
        "clientConnection": {"qps": 500, "burst": 1000},
        "profiles": [{"schedulerName": "default-scheduler", "pluginConfig": []}],
    }
    plane = ControlPlane(
        ControlPlaneSettings(
            state_dir=tmp_path,
            scheduler=True,
            scheduler_config=config,
            extra_scheduler_args=("--v=2",),
        )
    )
    argv = plane._scheduler_argv(_state(tmp_path))
    path = tmp_path / "scheduler-config.json"
    assert f"--config={path}" in argv
    # Flags the scheduler would ignore next to a file are not given at all.
    assert not any(arg.startswith(("--kubeconfig=", "--leader-elect")) for arg in argv)
    assert f"--authentication-kubeconfig={tmp_path / 'kubeconfig'}" in argv
    assert argv[-1] == "--v=2"
    written = json.loads(path.read_text())
    assert written == {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"qps": 500, "burst": 1000, "kubeconfig": str(tmp_path / "kubeconfig")},
        "profiles": [{"schedulerName": "default-scheduler", "pluginConfig": []}],
        "leaderElection": {"leaderElect": False},
    }
    assert config["clientConnection"] == {"qps": 500, "burst": 1000}  # the caller's is untouched
