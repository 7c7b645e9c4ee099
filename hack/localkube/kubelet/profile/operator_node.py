"""A node whose exec-mode kubelet runs the operator's Deployments as the installed console
scripts: what the install tests and ``make test-kube-versions`` stand the manifests or the chart
on (the profile's package docstring says what such a pod gets)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Final

from localkube.base.api import Api
from localkube.kubelet.core import ExecSettings, TestKubelet
from localkube.kubelet.profile.entrypoints import ExecProfile

VENV_BIN: Final = Path(sys.executable).parent
"""Where ``mxjob-webhook`` and ``mxjob-controller`` are installed (this interpreter's)."""


def operator_kubelet(api: Api, *, work: Path, api_port: int, node_name: str) -> TestKubelet:
    """A started exec-mode kubelet on ``node_name`` whose operator pods run this project's
    console scripts against the API server on ``api_port``; pod logs and its hosts file go
    under ``work``."""
    hosts = work / "hosts"
    hosts.write_text("127.0.0.1 localhost\n")
    profile = ExecProfile(
        entrypoints={
            "mxjob-operator/webhook": str(VENV_BIN / "mxjob-webhook"),
            "mxjob-operator/controller": str(VENV_BIN / "mxjob-controller"),
        },
        api_port=api_port,
    )
    settings = ExecSettings(
        log_dir=work / "pods", path_prefix=(str(VENV_BIN),), hosts_file=hosts, profile=profile
    )
    return TestKubelet(api, node_name=node_name, exec_settings=settings).start()
