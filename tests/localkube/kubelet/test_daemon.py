"""The background test kubelet: its command line, a failed start, and knowing it by its pid.

Starting one that serves needs a control plane: ``tests/e2e/test_demo.py`` covers that.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from localkube.base.processes import runs_module
from localkube.kubelet.daemon import (
    MODULE,
    DaemonSettings,
    KubeletDaemonError,
    parse_args,
    spawn,
    to_argv,
)
from tests.helpers.waiting import wait_for


def test_settings_survive_the_command_line(tmp_path: Path) -> None:
    settings = DaemonSettings(
        kubeconfig=tmp_path / "kubeconfig",
        node_name="demo-node",
        namespaces=("mxjob-demo", "other"),
        log_dir=tmp_path / "logs",
        path_prefix=("/opt/venv/bin", "/usr/local/bin"),
        extra_env={"PYTHONPATH": "/src/scripts", "OPTS": "a=b c", "EMPTY": ""},
    )
    parsed, ready_fd = parse_args([*to_argv(settings), "--ready-fd=7"])
    assert parsed == settings
    assert ready_fd == 7
    assert parse_args(to_argv(settings))[1] is None
    unbound = dataclasses.replace(settings, bind=False)
    assert parse_args(to_argv(unbound))[0] == unbound


def test_env_without_a_key_is_refused(tmp_path: Path) -> None:
    base = [f"--kubeconfig={tmp_path}", "--node=n", f"--log-dir={tmp_path}", "--namespace=ns"]
    with pytest.raises(SystemExit, match="KEY=VALUE"):
        parse_args([*base, "--env=NOEQUALS"])
    with pytest.raises(SystemExit, match="KEY=VALUE"):
        parse_args([*base, "--env==value"])


def test_a_kubelet_that_cannot_start_is_reported_at_once_with_its_log(tmp_path: Path) -> None:
    settings = DaemonSettings(
        kubeconfig=tmp_path / "missing-kubeconfig",
        node_name="n",
        namespaces=("ns",),
        log_dir=tmp_path / "logs",
    )
    log_file = tmp_path / "kubelet.log"
    started = time.monotonic()
    with pytest.raises(KubeletDaemonError) as raised:
        spawn(settings, log_file=log_file, timeout=60)
    # The child's exit closes the pipe: no waiting for the timeout.
    assert time.monotonic() - started < 30
    # The reason (the log's last line) and where to read more.
    assert "Invalid kube-config file" in str(raised.value)
    assert str(log_file) in str(raised.value)
    assert "Traceback" in log_file.read_text()


def test_only_a_live_background_kubelet_is_recognised_by_its_pid() -> None:
    """``dev-down`` stops a recorded pid only if it still is a kubelet (pids get reused)."""
    assert not runs_module(os.getpid(), MODULE)
    assert not runs_module(0, MODULE)
    lookalike = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(30)", MODULE], stdin=subprocess.DEVNULL
    )
    try:
        # Popen can return before the kernel shows the new command line.
        wait_for(
            "the child's command line",
            lambda: Path(f"/proc/{lookalike.pid}/cmdline").read_bytes(),
            bool,
            timeout=10,
        )
        assert runs_module(lookalike.pid, MODULE)
    finally:
        lookalike.kill()
        lookalike.wait()
    assert not runs_module(lookalike.pid, MODULE)
