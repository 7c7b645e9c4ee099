"""The demo's controller takes its pods' progress reports on the port of the URL the webhook
gives them, for the Service name that URL names; a port another program holds is refused before
anything starts, naming that program."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import cast

import pytest

from localkube.base.ports import free_port
from localkube.plane.controlplane import ControlPlane
from localkube.plane.operator import OPERATOR_NAMESPACE, LocalOperator, OperatorError


class UnstartedPlane:
    """A control plane that must not be started."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.logs = directory / "logs"
        self.started = False

    def up(self) -> None:
        self.started = True


def test_the_progress_flags_name_the_port_on_loopback_and_the_webhooks_namespace() -> None:
    assert LocalOperator.progress_args(8444) == (
        "--progress-bind-address=127.0.0.1:8444",
        "--certificate-namespace=mxjob-system",
    )
    assert OPERATOR_NAMESPACE == "mxjob-system"  # the webhook's default, which it is told


def test_a_taken_progress_port_is_an_error_naming_its_holder_before_anything_starts(
    tmp_path: Path,
) -> None:
    plane = UnstartedPlane(tmp_path)
    operator = LocalOperator(cast(ControlPlane, plane))
    port = free_port()
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", port))
        holder.listen()
        with pytest.raises(OperatorError) as raised:
            operator.up(progress_port=port)
    message = str(raised.value)
    assert f"127.0.0.1:{port} is taken, by pid {os.getpid()}: " in message
    assert "dev-down" in message
    assert not plane.started
