"""localkube.thirdparty.helm: the pinned helm, and running it."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from localkube.base.builds import pinned_version
from localkube.base.paths import PROJECT_ROOT
from localkube.thirdparty import helm


def fake_helm(tmp_path: Path, *, exit_code: int) -> Path:
    """A stand-in that prints its arguments, one a line, and says something on stderr."""
    script = tmp_path / "helm"
    script.write_text(
        f'#!/bin/sh\nprintf "%s\\n" "$@"\necho "Error: it went wrong" >&2\nexit {exit_code}\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def test_the_pin_is_the_one_go_mod_requires() -> None:
    go_mod = (PROJECT_ROOT / "hack" / "helm" / "go.mod").read_text()
    assert f"require helm.sh/helm/v3 {pinned_version('HELM_VERSION')}\n" in go_mod
    assert helm.version() == pinned_version("HELM_VERSION") == "v3.22.0"
    assert helm.PIN.build_script.is_file()


def test_run_passes_the_arguments_and_the_kubeconfig_last(tmp_path: Path) -> None:
    done = helm.run(fake_helm(tmp_path, exit_code=0), "status", "r", kubeconfig=Path("/k"))
    assert done.stdout.splitlines() == ["status", "r", "--kubeconfig=/k"]


def test_a_failing_helm_raises_with_what_it_said(tmp_path: Path) -> None:
    with pytest.raises(helm.HelmFailed, match="helm said: Error: it went wrong"):
        helm.run(fake_helm(tmp_path, exit_code=1), "install")
    done = helm.run(fake_helm(tmp_path, exit_code=1), "install", check=False)
    assert done.returncode == 1
