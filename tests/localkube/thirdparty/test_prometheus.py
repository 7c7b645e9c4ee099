"""localkube.thirdparty.prometheus: the pinned Prometheus, found in the cache without a build."""

from __future__ import annotations

from pathlib import Path

import pytest

from localkube.base.builds import pinned_version
from localkube.base.paths import PROJECT_ROOT
from localkube.thirdparty import prometheus
from localkube.thirdparty.base import GoModulePin


def test_the_pin_is_the_one_go_mod_requires() -> None:
    go_mod = (PROJECT_ROOT / "hack" / "prometheus" / "go.mod").read_text()
    pinned = pinned_version("PROMETHEUS_VERSION")
    assert f"require github.com/prometheus/prometheus {pinned}\n" in go_mod
    assert prometheus.version() == pinned == "v0.316.0"
    assert prometheus.PIN.build_script.is_file()


def test_the_cache_is_the_build_scripts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MXJOB_CACHE_DIR", str(tmp_path))
    assert prometheus.cache_dir() == tmp_path / "prometheus-v0.316.0" / "bin"
    script = prometheus.PIN.build_script.read_text()
    assert 'BIN_DIR="${CACHE_ROOT}/prometheus-${PROMETHEUS_VERSION}/bin"' in script


def test_a_binary_counts_as_built_only_once_the_build_is_stamped(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("MXJOB_CACHE_DIR", str(tmp_path))
    directory = prometheus.cache_dir()
    directory.mkdir(parents=True)
    (directory / "promtool").write_text('#!/bin/sh\necho promtool "$@"\n')
    (directory / "promtool").chmod(0o755)
    assert prometheus.built("promtool") is None  # an interrupted build: no stamp
    (directory / ".complete").touch()
    tool = prometheus.built("promtool")
    assert tool == directory / "promtool"
    assert prometheus.built("prometheus") is None
    done = prometheus.promtool(tool, "check", "rules", "x.yaml", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, "promtool check rules x.yaml\n")


def test_the_operators_crds_are_read_from_its_pinned_module(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert prometheus.OPERATOR.version() == pinned_version("PROMETHEUS_OPERATOR_VERSION")
    monkeypatch.setattr(GoModulePin, "module_source", lambda self: tmp_path)
    crds = prometheus.operator_crds()
    assert [path.relative_to(tmp_path).as_posix() for path in crds] == [
        "example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml",
        "example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml",
    ]


@pytest.mark.parametrize(
    ("tag", "expected"), [("v0.316.0", "3.16.0"), ("v0.300.1", "3.0.1"), ("v0.55.2", "0.55.2")]
)
def test_a_module_tag_names_the_release_it_is(tag: str, expected: str) -> None:
    assert prometheus.release(tag) == expected
