"""Helm, which installs charts/mxjob-operator: built from the pinned module, run as a command.

``helm`` is built by ``hack/build-helm.sh`` from ``helm.sh/helm/v3`` at ``HELM_VERSION`` (pinned
in ``hack/versions.env`` and ``hack/helm/go.mod``), once per machine into the per-machine cache,
and linked as ``.local/bin/helm`` beside the plane's kubectl. The chart tests render the chart
with it (``helm template``, ``helm lint``: no cluster) and install, upgrade, roll back and
uninstall it on the real node.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from localkube.base.paths import PROJECT_ROOT
from localkube.thirdparty.base import GoModulePin

PIN: Final = GoModulePin(
    module="helm.sh/helm/v3",
    version_variable="HELM_VERSION",
    module_dir=PROJECT_ROOT / "hack" / "helm",
    build_script=PROJECT_ROOT / "hack" / "build-helm.sh",
)
"""Built by ``hack/build-helm.sh`` (about a minute and a half the first time)."""
version = PIN.version
CHART: Final = PROJECT_ROOT / "charts" / "mxjob-operator"
LINK: Final = PROJECT_ROOT / ".local" / "bin" / "helm"
"""Where ``hack/build-helm.sh`` links the built binary, for a developer's shell."""


class HelmFailed(subprocess.CalledProcessError):
    """A helm command that exited non-zero; its message ends with what helm said (stderr)."""

    def __str__(self) -> str:
        said = (self.stderr or "").strip()
        return f"{super().__str__()}\nhelm said: {said}" if said else super().__str__()


def binary() -> Path:
    """The pinned ``helm``: built the first time (needs go and the module proxy), found in the
    per-machine cache afterwards. Raises ``localkube.base.builds.BuildError`` when it cannot be
    built."""
    return PIN.build()


def run(
    helm: Path,
    *args: str,
    kubeconfig: Path | None = None,
    check: bool = True,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """``helm <args>`` (with ``--kubeconfig`` when given), its output captured; with ``check``,
    a non-zero exit raises :class:`HelmFailed`, which quotes helm's error."""
    argv: Sequence[str] = [
        str(helm), *args, *((f"--kubeconfig={kubeconfig}",) if kubeconfig else ())
    ]  # fmt: skip
    done = subprocess.run(list(argv), capture_output=True, text=True, check=False, timeout=timeout)
    if check and done.returncode != 0:
        raise HelmFailed(done.returncode, list(argv), output=done.stdout, stderr=done.stderr)
    return done
