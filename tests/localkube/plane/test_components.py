"""The control plane components' command lines (kube-scheduler's configuration file above all)
as localkube.plane.components builds them from the settings and the state."""

from __future__ import annotations

from pathlib import Path

from localkube.plane import components
from localkube.plane.settings import (
    CONTROLLERS,
    INSTALL_CONTROLLERS,
    SCHEDULER,
    WORKLOAD_CONTROLLERS,
    ControlPlaneSettings,
    ControlPlaneState,
    PlanePaths,
)


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
    settings = ControlPlaneSettings(state_dir=tmp_path, scheduler=True)
    argv = components.argv(SCHEDULER, settings, _state(tmp_path), PlanePaths(tmp_path))
    assert argv[0] == str(tmp_path / "bin" / SCHEDULER)
    assert f"--kubeconfig={tmp_path / 'kubeconfig'}" in argv
    assert "--leader-elect=false" in argv
    assert not any(arg.startswith("--config=") for arg in argv)


def test_with_a_configuration_the_scheduler_reads_its_file_and_no_client_flags(
    tmp_path: Path,
) -> None:
    settings = ControlPlaneSettings(
        state_dir=tmp_path,
        scheduler=True,
        scheduler_config={"profiles": []},
        extra_scheduler_args=("--v=2",),
    )
    argv = components.scheduler_argv(settings, _state(tmp_path), PlanePaths(tmp_path))
    assert f"--config={tmp_path / 'scheduler-config.json'}" in argv
    # Flags the scheduler would ignore next to a file are not given at all.
    assert not any(arg.startswith(("--kubeconfig=", "--leader-elect")) for arg in argv)
    assert f"--authentication-kubeconfig={tmp_path / 'kubeconfig'}" in argv
    assert argv[-1] == "--v=2"


def test_a_configuration_is_completed_with_the_planes_kubeconfig_and_no_election(
    tmp_path: Path,
) -> None:
    config = {
        "clientConnection": {"qps": 500, "burst": 1000},
        "profiles": [{"schedulerName": "default-scheduler", "pluginConfig": []}],
    }
    completed = components.scheduler_configuration(config, kubeconfig=tmp_path / "kubeconfig")
    assert completed == {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"qps": 500, "burst": 1000, "kubeconfig": str(tmp_path / "kubeconfig")},
        "profiles": [{"schedulerName": "default-scheduler", "pluginConfig": []}],
        "leaderElection": {"leaderElect": False},
    }
    assert config["clientConnection"] == {"qps": 500, "burst": 1000}  # the caller's is untouched


def test_the_controllers_grow_with_the_settings(tmp_path: Path) -> None:
    plain = ControlPlaneSettings(state_dir=tmp_path)
    assert components.controllers(plain) == CONTROLLERS
    install = ControlPlaneSettings(
        state_dir=tmp_path, extra_controllers=INSTALL_CONTROLLERS, workload_scheduling=True
    )
    assert components.controllers(install).split(",") == [
        *CONTROLLERS.split(","),
        *INSTALL_CONTROLLERS,
        WORKLOAD_CONTROLLERS,
    ]


def test_a_plane_on_the_node_address_authorizes_kubelets_and_publishes_its_endpoint(
    tmp_path: Path,
) -> None:
    paths, state = PlanePaths(tmp_path), _state(tmp_path)
    loopback = components.apiserver_argv(ControlPlaneSettings(state_dir=tmp_path), state, paths)
    assert "--authorization-mode=RBAC" in loopback
    assert "--endpoint-reconciler-type=none" in loopback
    node = ControlPlaneSettings(state_dir=tmp_path, node_address="198.18.0.1")
    on_node = components.apiserver_argv(node, state, paths)
    assert "--authorization-mode=Node,RBAC" in on_node
    assert "--enable-admission-plugins=NodeRestriction" in on_node


def test_the_apiserver_is_bin_dirs_unless_another_release_is_given(tmp_path: Path) -> None:
    """``apiserver_binary`` (make test-kube-versions) replaces kube-apiserver only."""
    state, paths = _state(tmp_path), PlanePaths(tmp_path)
    pinned = ControlPlaneSettings(state_dir=tmp_path)
    assert components.apiserver_argv(pinned, state, paths)[0] == str(
        tmp_path / "bin" / "kube-apiserver"
    )
    other = ControlPlaneSettings(state_dir=tmp_path, apiserver_binary=tmp_path / "v1.28.15")
    assert components.apiserver_argv(other, state, paths)[0] == str(tmp_path / "v1.28.15")
    kcm = components.controller_manager_argv(other, state, paths)[0]
    assert kcm == str(tmp_path / "bin" / "kube-controller-manager")
