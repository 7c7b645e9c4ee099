"""Prometheus and promtool, which check the operator's alerts and scrape its metrics.

Both are built by ``hack/build-prometheus.sh`` from ``github.com/prometheus/prometheus`` at
``PROMETHEUS_VERSION`` (pinned in ``hack/versions.env`` and ``hack/prometheus/go.mod``), once per
machine into the per-machine cache, and linked as ``.local/bin/promtool`` and
``.local/bin/prometheus``. ``promtool check rules`` and ``promtool test rules`` check
manifests/components/monitoring's PrometheusRule (tests/monitoring/); ``prometheus`` is for a
real scrape of the operator.
"""

from __future__ import annotations

import json
import os
import subprocess
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from localkube.base import programs
from localkube.base.paths import PROJECT_ROOT
from localkube.base.ports import free_port
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


def release(tag: str | None = None) -> str:
    """The Prometheus release a module tag (the pinned one by default) is: v0.<M><mm>.<patch>
    is <M>.<mm>.<patch> (v0.316.0 is 3.16.0), as ``hack/build-prometheus.sh`` stamps it."""
    minor_tag, _, patch = (tag or version()).removeprefix("v0.").partition(".")
    number = int(minor_tag)
    return f"{number // 100}.{number % 100}.{patch}"


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


@dataclass
class PrometheusServer:
    """A ``prometheus`` of this machine, on loopback, and its HTTP API."""

    running: programs.Running
    url: str

    def api(self, path: str, **query: str) -> Any:
        """``GET /api/v1/<path>``'s ``data``; raises when Prometheus answers an error."""
        address = f"{self.url}/api/v1/{path}?{urllib.parse.urlencode(query)}"
        with urllib.request.urlopen(address, timeout=10) as response:
            answer = json.load(response)
        if answer.get("status") != "success":
            raise RuntimeError(f"prometheus: {path} {query}: {answer}")
        return answer["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        """The instant vector ``expr`` evaluates to now (empty: no data)."""
        data = self.api("query", query=expr)
        result: list[dict[str, Any]] = data["result"]
        return result

    def query_range(self, expr: str, *, start: float, end: float, step: float) -> list[Any]:
        """The range vector (a matrix) of ``expr`` from ``start`` to ``end`` (unix seconds)."""
        data = self.api("query_range", query=expr, start=f"{start:.3f}", end=f"{end:.3f}",
                        step=f"{step:g}")  # fmt: skip
        result: list[Any] = data["result"]
        return result

    def alerts(self) -> dict[str, str]:
        """Each active alert's name and its state (``pending`` or ``firing``)."""
        return {a["labels"]["alertname"]: a["state"] for a in self.api("alerts")["alerts"]}

    def targets(self) -> list[dict[str, Any]]:
        """The active scrape targets, with their labels, health and last error."""
        active: list[dict[str, Any]] = self.api("targets", state="active")["activeTargets"]
        return active

    def stop(self) -> None:
        self.running.stop()


def serve(
    binary: Path, directory: Path, configuration: dict[str, Any], *, timeout: float = 60
) -> PrometheusServer:
    """Start ``binary`` (the pinned ``prometheus``) with ``configuration`` written to
    ``directory``/prometheus.yml, its data and log in ``directory``, on a free loopback port;
    returns once it answers ``/-/ready``."""
    directory.mkdir(parents=True, exist_ok=True)
    config = directory / "prometheus.yml"
    config.write_text(yaml.safe_dump(configuration, sort_keys=False))
    port = free_port()
    program = programs.Program(
        name="prometheus",
        argv=[
            str(binary),
            f"--config.file={config}",
            f"--storage.tsdb.path={directory / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        log=directory / "prometheus.log",
    )
    running = programs.start(program)
    url = f"http://127.0.0.1:{port}"
    try:
        programs.wait_ready(
            running, lambda: programs.answers_200(f"{url}/-/ready"), what="prometheus",
            timeout=timeout,
        )  # fmt: skip
    except programs.ProgramError:
        running.stop()
        raise
    return PrometheusServer(running, url)
