"""Third-party controllers run as processes beside a local control plane, each as a user of its own.

cert-manager (:mod:`localkube.thirdparty.cert_manager`) and Volcano
(:mod:`localkube.thirdparty.volcano`) only talk to kube-apiserver, so they run as processes of this
machine, like the plane's own components: each program gets a kubeconfig with a client certificate
from the plane's CA for its own user name, so the RBAC bound to that user is all it may do, and its
output goes to a log file the errors quote.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from localkube.plane.controlplane import ControlPlane
from localkube.realnode.node import write_kubeconfig


def user_kubeconfig(plane: ControlPlane, *, user: str, path: Path) -> Path:
    """A kubeconfig for ``user`` (the certificate's common name) on the running ``plane``."""
    state = plane.state()
    if state is None:
        raise RuntimeError("the control plane is not running")
    ca = plane.certificate_authority()
    pair = ca.issue_client(common_name=user)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_kubeconfig(path, server=state.server, ca=ca, cert_pem=pair.cert_pem, key_pem=pair.key_pem)
    return path


def start_program(argv: Sequence[str], *, log: Path, kubeconfig: Path) -> int:
    """Start ``argv`` in a session of its own, output appended to ``log``; its pid.

    ``KUBECONFIG`` is set too: some programs' client configuration reads it, not their flag.
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as output:
        process = subprocess.Popen(
            list(argv),
            stdout=output,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env={**os.environ, "KUBECONFIG": str(kubeconfig)},
        )
    return process.pid


def tail(log: Path, lines: int = 30) -> str:
    """The last lines of a program's log, for an error message."""
    with contextlib.suppress(OSError):
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    return ""


def wait_healthy(
    urls: Mapping[str, str],
    *,
    pids: Mapping[str, int],
    logs: Mapping[str, Path],
    component: str,
    error: type[RuntimeError],
    timeout: float,
) -> None:
    """Until every program's URL answers 200; ``error`` with the log's tail when one exits or
    is not healthy within ``timeout``."""
    deadline = time.monotonic() + timeout
    pending = dict(urls)
    while pending:
        for program, url in list(pending.items()):
            if _answers(url):
                del pending[program]
        for program, pid in pids.items():
            with contextlib.suppress(ChildProcessError):
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    raise error(
                        f"{component}'s {program} exited ({status}):\n{tail(logs[program])}"
                    )
        if pending and time.monotonic() > deadline:
            raise error(
                f"{component}'s {', '.join(pending)} not healthy after {timeout:g} s:\n"
                + "\n".join(tail(logs[p]) for p in pending)
            )
        time.sleep(0.2)


def _answers(url: str) -> bool:
    with (
        contextlib.suppress(urllib.error.URLError, OSError),
        urllib.request.urlopen(url, timeout=2) as response,
    ):
        return bool(response.status == 200)
    return False


def cluster_role_binding(*, name: str, role: str, user: str) -> dict[str, Any]:
    """Binds the ClusterRole ``role`` to the certificate user ``user``."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    }
