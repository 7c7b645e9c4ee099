"""The background test kubelet: its command line round-trips, and a start that fails is reported.

Starting one that serves needs a control plane: ``tests/e2e/test_demo.py`` covers that.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from localkube.kubelet_daemon import (
    DaemonSettings,
    KubeletDaemonError,
    parse_args,
    spawn,
    to_argv,
)


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
