"""What the control plane's kubectl reports when it fails: its own words, not only its code."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from localkube.plane.controlplane import ControlPlane, KubectlFailed
from localkube.plane.settings import ControlPlaneSettings


def plane_with_kubectl(tmp_path: Path, script: str) -> ControlPlane:
    plane = ControlPlane(ControlPlaneSettings(state_dir=tmp_path))
    plane.kubectl_path.parent.mkdir(parents=True)
    plane.kubectl_path.write_text(f"#!/bin/sh\n{script}\n")
    plane.kubectl_path.chmod(0o755)
    return plane


def test_a_failing_kubectl_raises_with_what_it_printed_on_stderr(tmp_path: Path) -> None:
    said = 'The Certificate "x" is invalid: status.conditions[2]: Duplicate value'
    plane = plane_with_kubectl(tmp_path, f"echo '{said}' >&2; exit 1")
    with pytest.raises(KubectlFailed) as failed:
        plane.kubectl("patch", "certificate/x")
    assert failed.value.returncode == 1
    assert said in str(failed.value)
    assert "patch" in str(failed.value)
    # Callers that catch the standard library's error still catch it.
    assert isinstance(failed.value, subprocess.CalledProcessError)


def test_a_failing_kubectl_is_returned_when_the_caller_checks_it_itself(tmp_path: Path) -> None:
    plane = plane_with_kubectl(tmp_path, "echo out; echo err >&2; exit 3")
    done = plane.kubectl("get", "pods", check=False)
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")


def test_kubectl_gets_the_planes_kubeconfig_and_the_input(tmp_path: Path) -> None:
    plane = plane_with_kubectl(tmp_path, 'echo "$@"; cat')
    done = plane.kubectl("apply", "-f", "-", input_text="kind: List\n")
    assert done.stdout == f"--kubeconfig={plane.kubeconfig} apply -f -\nkind: List\n"
