"""Prometheus and promtool, which check the operator's alerts and scrape its metrics.

Both are built by ``hack/build-prometheus.sh`` from ``github.com/prometheus/prometheus`` at
``PROMETHEUS_VERSION`` (pinned in ``hack/versions.env`` and ``hack/prometheus/go.mod``), once per
machine into the per-machine cache, and linked as ``.local/bin/promtool`` and
``.local/bin/prometheus``. ``promtool check rules`` and ``promtool test rules`` check
manifests/components/monitoring's PrometheusRule (tests/monitoring/); ``prometheus`` is for a
real scrape of the operator.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Final

from localkube.base.paths import PROJECT_ROOT
from localkube.thirdparty.base import GoModulePin

PIN: Final = GoModulePin(
    module="github.com/prometheus/prometheus",
    version_variable="PROMETHEUS_VERSION",
    module_dir=PROJECT_ROOT / "hack" / "prometheus",
    build_script=PROJECT_ROOT / "hack" / "build-prometheus.sh",
)
"""Built by ``hack/build-prometheus.sh`` (minutes the first time: Prometheus has many
dependencies)."""
version = PIN.version
PROGRAMS: Final = ("prometheus", "promtool")
OPERATOR: Final = GoModulePin(
    module="github.com/prometheus-operator/prometheus-operator",
    version_variable="PROMETHEUS_OPERATOR_VERSION",
    module_dir=PROJECT_ROOT / "hack" / "prometheus",
    build_script=PROJECT_ROOT / "hack" / "build-prometheus.sh",
)
"""prometheus-operator: only its CRDs are read (:func:`operator_crds`), nothing is built."""
MONITORING_KINDS: Final = ("servicemonitors", "prometheusrules")
"""The kinds manifests/components/monitoring makes, by their CRD's plural."""


def operator_crds() -> list[Path]:
    """The pinned prometheus-operator's CRDs of :data:`MONITORING_KINDS`, from the module's
    source in Go's module cache (downloaded the first time through the module proxy)."""
    directory = OPERATOR.module_source() / "example" / "prometheus-operator-crd"
    return [directory / f"monitoring.coreos.com_{plural}.yaml" for plural in MONITORING_KINDS]


def binaries() -> Path:
    """The directory of the pinned ``prometheus`` and ``promtool``: built the first time (needs
    go and the module proxy), found in the per-machine cache afterwards. Raises
    ``localkube.base.builds.BuildError`` when they cannot be built."""
    return PIN.build()


def cache_dir() -> Path:
    """Where ``hack/build-prometheus.sh`` puts the binaries (its ``BIN_DIR``)."""
    base = os.environ.get("MXJOB_CACHE_DIR") or str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mxjob-operator"
    )
    return Path(base) / f"prometheus-{version()}" / "bin"


def built(program: str) -> Path | None:
    """``program`` (one of :data:`PROGRAMS`) when a finished build is in the cache, else None:
    never builds, so a unit test can ask without starting a build of minutes."""
    directory = cache_dir()
    found = directory / program
    return found if (directory / ".complete").is_file() and found.is_file() else None


def promtool(
    tool: Path, *args: str, cwd: Path, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``promtool <args>`` in ``cwd``, its output captured (not checked: the caller says what a
    failure means, with promtool's own words)."""
    return subprocess.run(
        [str(tool), *args], cwd=cwd, capture_output=True, text=True, check=False, timeout=timeout
    )
