"""End-to-end fixtures: the operator installed on the session's local control plane.

``local_operator`` installs the CRD (conversion through the webhook), starts ``mxjob-webhook``
under gunicorn over TLS and registers the admission webhooks, once per session, exactly as
``make dev-up DEV_ARGS=--v1beta1`` does: with the install option that serves v1beta1, which the
conversion tests read and write through (tests/e2e/test_served_versions.py checks the default,
v1 alone, on a plane of its own). Controller processes are started per test
(``LocalOperator.start_controller``) because several tests kill, restart or duplicate them.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from localkube.base.api import Api
from localkube.base.processes import stop_process
from localkube.kubelet.core import ExecSettings, TestKubelet
from localkube.plane.controlplane import ControlPlane
from localkube.plane.install_choices import InstallChoices
from localkube.plane.operator import LocalOperator, RunningOperator


@pytest.fixture(scope="session")
def local_operator(control_plane: ControlPlane) -> Iterator[RunningOperator]:
    local = LocalOperator(control_plane, choices=InstallChoices(v1beta1=True))
    pid, port = local.start_webhook()
    try:
        local.install_crd(webhook_port=port)
        local.register_webhooks(webhook_port=port)
        yield RunningOperator(local=local, webhook_pid=pid, webhook_port=port)
    finally:
        local.unregister_webhooks()
        stop_process(pid)


@pytest.fixture
def kubelet(api: Api, namespace: str) -> Iterator[TestKubelet]:
    """A manual-mode test kubelet for this test's namespace: binds and starts its pods."""
    node = TestKubelet(api, node_name=f"node-{namespace}", namespaces=(namespace,))
    with node:
        yield node
    api.request("DELETE", f"/api/v1/nodes/{node.node_name}")


@pytest.fixture
def exec_kubelet(api: Api, namespace: str, tmp_path: Path) -> Iterator[TestKubelet]:
    """A test kubelet in exec mode for the test's namespace, on a node of its own."""
    settings = ExecSettings(
        log_dir=tmp_path / "pods", path_prefix=(str(Path(sys.executable).parent),)
    )
    kubelet = TestKubelet(
        api, node_name=f"node-{namespace}", namespaces=(namespace,), exec_settings=settings
    )
    with kubelet:
        yield kubelet
    api.request("DELETE", f"/api/v1/nodes/{kubelet.node_name}")
