"""Kueue's manager as an install-profile pod: its listeners on the pod's own address."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from localkube.thirdparty.kueue_pod import entrypoint_script, listen_on, pod_argv, pod_configuration

POD_IP = "198.18.40.7"


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        (":8081", f"{POD_IP}:8081"),
        ("0.0.0.0:8443", f"{POD_IP}:8443"),
        ("[::]:8082", f"{POD_IP}:8082"),
        ("0", "0"),
        ("127.0.0.1:8083", "127.0.0.1:8083"),
    ],
)
def test_only_every_interface_addresses_move_to_the_pod(address: str, expected: str) -> None:
    assert listen_on(address, POD_IP) == expected


def test_health_metrics_and_the_webhook_listen_on_the_pod_and_nothing_else_changes() -> None:
    released = {
        "health": {"healthProbeBindAddress": ":8081"},
        "metrics": {"bindAddress": ":8443"},
        "webhook": {"port": 9443},
        "integrations": {"frameworks": ["batch/job"]},
    }
    changed = pod_configuration(released, POD_IP)
    assert changed["health"] == {"healthProbeBindAddress": f"{POD_IP}:8081"}
    assert changed["metrics"] == {"bindAddress": f"{POD_IP}:8443"}
    assert changed["webhook"] == {"port": 9443, "host": POD_IP}
    assert changed["integrations"] == released["integrations"]
    assert released["webhook"] == {"port": 9443}


def test_the_config_flag_is_replaced_and_the_other_args_kept() -> None:
    args = ["--config=/controller_manager_config.yaml", "--zap-log-level=2"]
    assert pod_argv("/bin/kueue", args, "/proc/self/fd/5") == [
        "/bin/kueue",
        "--config=/proc/self/fd/5",
        "--zap-log-level=2",
    ]


def test_the_entrypoint_execs_the_binary_with_the_rewritten_configuration(tmp_path: Path) -> None:
    """A stand-in binary prints the configuration it was given (through the memfd)."""
    fake = tmp_path / "kueue"
    fake.write_text(
        '#!/bin/sh\nfor a; do case "$a" in --config=*) cat "${a#--config=}";; esac; done\n'
    )
    fake.chmod(0o755)
    config = tmp_path / "config.yaml"
    config.write_text("health:\n  healthProbeBindAddress: :8081\n")
    script = entrypoint_script(tmp_path / "entry" / "kueue", kueue=fake)
    result = subprocess.run(
        [str(script), f"--config={config}"],
        env={"POD_IP": POD_IP, "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert f"healthProbeBindAddress: {POD_IP}:8081" in result.stdout
    assert f"host: {POD_IP}" in result.stdout
