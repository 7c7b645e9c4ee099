"""Removing the real node's cgroups: deepest first, what stays busy is reported, nothing raises."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from localkube.realnode import teardown


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


def test_empty_directories_go_deepest_first_and_any_holding_a_file_stays(tmp_path: Path) -> None:
    top = tmp_path / "run" / "containerd"
    sockets, runc = top / "s", top / "runc" / "k8s.io"
    sockets.mkdir(parents=True)
    runc.mkdir(parents=True)
    kept = tmp_path / "lib" / "kubelet"
    kept.mkdir(parents=True)
    (kept / "other-program.sock").write_text("")
    order = [sockets, runc, runc.parent, top, kept, tmp_path / "never-made"]
    assert teardown.remove_empty_directories(order) == [sockets, runc, runc.parent, top]
    assert not top.exists()
    assert (kept / "other-program.sock").exists()


def test_the_host_directories_are_listed_deepest_first() -> None:
    """A parent listed before its child would still hold the child when its turn came."""
    for index, directory in enumerate(teardown.HOST_DIRECTORIES):
        later = teardown.HOST_DIRECTORIES[index + 1 :]
        assert not any(other.is_relative_to(directory) for other in later), directory


def test_the_cni_results_of_the_nodes_pods_go_on_every_network_and_no_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache, node = tmp_path / "results", tmp_path / "node"
    cache.mkdir()
    monkeypatch.setattr(teardown, "CNI_CACHE", cache)
    netns = node / "containerd" / "state" / "netns"

    def cached(name: str, namespace: Path | None) -> Path:
        entry = cache / name
        entry.write_text(json.dumps({"kind": "cniCacheV1", "netns": str(namespace or "")}))
        return entry

    ours = [
        cached("mxjob-node-a-eth0", netns / "cni-1"),
        cached("cni-loopback-a-lo", netns / "cni-1"),
    ]
    others = [
        cached("cni-loopback-b-lo", tmp_path / "node-2" / "netns" / "cni-2"),
        cached("cni-loopback-c-lo", None),
    ]
    (cache / "not-json").write_text("{")
    assert teardown.remove_cni_cache(node) == 2
    assert not any(entry.exists() for entry in ours)
    assert all(entry.exists() for entry in [*others, cache / "not-json"])
