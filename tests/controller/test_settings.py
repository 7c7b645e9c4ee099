"""Settings: flags win over MXJOB_CONTROLLER_* env, which wins over defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.settings import ControllerSettings, from_args


def test_defaults_suit_one_replica_in_a_cluster() -> None:
    settings = from_args([], environ={})
    assert settings.namespaces == () and settings.workers == 4
    assert not settings.leader_elect and settings.identity
    assert settings.pool_size == 4 + 3 + 4


def test_flags_set_every_option() -> None:
    settings = from_args(
        [
            "--kubeconfig",
            "/k",
            "--namespace",
            "a",
            "--namespace",
            "b",
            "--workers",
            "8",
            "--leader-elect",
            "--lease-namespace",
            "ops",
            "--lease-duration",
            "6",
            "--renew-deadline",
            "4",
            "--retry-period",
            "1",
            "--metrics-address",
            ":9",
            "--log-format",
            "text",
            "--identity",
            "me",
        ],
        environ={},
    )
    assert settings == ControllerSettings(
        kubeconfig=Path("/k"),
        namespaces=("a", "b"),
        workers=8,
        leader_elect=True,
        lease_namespace="ops",
        lease_duration=6,
        renew_deadline=4,
        retry_period=1,
        metrics_address=":9",
        log_format="text",
        identity="me",
    )
    assert settings.pool_size == 8 + 6 + 4


def test_environment_fills_what_flags_leave_out() -> None:
    env = {
        "MXJOB_CONTROLLER_WORKERS": "2",
        "MXJOB_CONTROLLER_NAMESPACES": "x,y",
        "MXJOB_CONTROLLER_LEADER_ELECT": "true",
    }
    settings = from_args(["--workers", "3"], environ=env)
    assert (settings.workers, settings.namespaces, settings.leader_elect) == (3, ("x", "y"), True)


def test_zero_workers_is_refused() -> None:
    with pytest.raises(SystemExit):
        from_args(["--workers", "0"], environ={})


def test_gang_scheduler_is_auto_unless_told() -> None:
    assert from_args([], environ={}).gang_scheduler == "auto"
    assert from_args(["--gang-scheduler", "none"], environ={}).gang_scheduler == "none"
    env = {"MXJOB_CONTROLLER_GANG_SCHEDULER": "native"}
    assert from_args([], environ=env).gang_scheduler == "native"
    with pytest.raises(SystemExit):
        from_args(["--gang-scheduler", "kueue"], environ={})
    with pytest.raises(SystemExit):
        from_args([], environ={"MXJOB_CONTROLLER_GANG_SCHEDULER": "kueue"})
