"""Removing the real node's cgroups: deepest first, what stays busy is reported, nothing raises."""

from __future__ import annotations

from pathlib import Path

import pytest

from localkube.node import teardown


@pytest.fixture
def unified_hierarchy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A stand-in for ``/sys/fs/cgroup`` mounted as cgroup v2 only."""
    (tmp_path / "cgroup.controllers").write_text("cpu memory pids\n")
    monkeypatch.setattr(teardown, "CGROUP_FS", tmp_path)
    return tmp_path


def test_every_cgroup_below_the_nodes_root_goes_deepest_first(unified_hierarchy: Path) -> None:
    pod = unified_hierarchy / "mxjob-node" / "kubepods" / "besteffort" / "pod1"
    (pod / "container1").mkdir(parents=True)
    (pod / "container2").mkdir()
    (unified_hierarchy / "mxjob-node" / "system").mkdir()

    assert teardown.remove_cgroups("/mxjob-node") == []
    assert not (unified_hierarchy / "mxjob-node").exists()


def test_a_cgroup_that_will_not_go_is_reported_and_the_rest_still_go(
    unified_hierarchy: Path,
) -> None:
    busy = unified_hierarchy / "mxjob-node" / "kubepods" / "busy"
    busy.mkdir(parents=True)
    (busy / "cgroup.procs").write_text("4242\n")  # rmdir of a non-empty folder fails as a busy one
    (unified_hierarchy / "mxjob-node" / "idle").mkdir()

    left = teardown.remove_cgroups("/mxjob-node")

    assert busy in left
    assert not (unified_hierarchy / "mxjob-node" / "idle").exists()


def test_a_node_that_never_made_its_cgroups_leaves_nothing_to_do(unified_hierarchy: Path) -> None:
    assert teardown.remove_cgroups("/mxjob-node") == []
    assert teardown.kill_cgroup_processes("/mxjob-node", timeout=0) == 0
