"""The control plane's processes, with stand-ins for its binaries: a component that dies fails the
start at once with its log's end, and a pid in ``state.json`` is only signalled while it still
runs the component it names."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from localkube.base import processes
from localkube.plane.controlplane import ControlPlane, ControlPlaneError
from localkube.plane.settings import ControlPlaneSettings, ControlPlaneState


def fake_bin(tmp_path: Path, **scripts: str) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, script in scripts.items():
        path = bin_dir / name.replace("_", "-")
        path.write_text(f"#!/bin/sh\n{script}\n")
        path.chmod(0o755)
    return bin_dir


def write_state(plane: ControlPlane, bin_dir: Path, **pids: int) -> None:
    state = ControlPlaneState(
        bin_dir=str(bin_dir),
        etcd_port=1,
        etcd_peer_port=2,
        apiserver_port=3,
        controller_manager_port=4,
        pids=pids,
    )
    plane.dir.mkdir(parents=True, exist_ok=True)
    plane.paths.state_file.write_text(json.dumps(dataclasses.asdict(state)))


def test_a_component_that_exits_fails_the_start_at_once_with_its_log(tmp_path: Path) -> None:
    bin_dir = fake_bin(tmp_path, etcd="echo 'etcd: unknown flag --bogus'; exit 2")
    plane = ControlPlane(ControlPlaneSettings(state_dir=tmp_path / "plane", bin_dir=bin_dir))
    started = time.monotonic()
    with pytest.raises(ControlPlaneError, match=r"(?s)etcd exited \(code 2\).*unknown flag"):
        plane.up()
    assert time.monotonic() - started < plane.settings.start_timeout / 2
    assert plane.state() is None  # what started is stopped again
    assert "starting etcd" in (plane.logs / "etcd.log").read_text()


def test_a_recorded_pid_now_running_another_program_is_left_alone(tmp_path: Path) -> None:
    # Far longer than plane.down() takes on a loaded machine: it must still run afterwards
    # because nothing stopped it, not because it had not ended yet.
    other = subprocess.Popen(["sleep", "3600"], start_new_session=True)
    try:
        plane = ControlPlane(ControlPlaneSettings(state_dir=tmp_path / "plane"))
        write_state(plane, tmp_path, etcd=other.pid)
        plane.down()
        assert other.poll() is None
        assert plane.state() is None
    finally:
        other.kill()
        other.wait()


def test_a_restarted_component_replaces_the_recorded_one(tmp_path: Path) -> None:
    # A stand-in that runs as "etcd" (its command line names it) and refuses etcd's flags.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    sleep = shutil.which("sleep")
    assert sleep is not None
    shutil.copy(sleep, bin_dir / "etcd")
    previous = subprocess.Popen([str(bin_dir / "etcd"), "30"], start_new_session=True)
    plane = ControlPlane(ControlPlaneSettings(state_dir=tmp_path / "plane"))
    write_state(plane, bin_dir, etcd=previous.pid)
    try:
        with pytest.raises(ControlPlaneError, match=r"(?s)etcd exited \(code 1\).*--name=local"):
            plane.restart_component("etcd")
        assert previous.wait(timeout=5) is not None  # the recorded etcd was stopped first
        state = plane.state()
        assert state is not None
        assert state.pids["etcd"] != previous.pid
        assert not processes.running(state.pids["etcd"])
    finally:
        previous.kill()
        previous.wait()
