"""Leave the host as it was before the real node: processes, mounts, cgroups, files.

Each step works from names and paths the node always uses (its cgroup root, its state directory,
its containerd socket), not only from what a ``node.json`` recorded, so it also cleans up after a
run that was killed before it could record anything.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

CGROUP_FS = Path("/sys/fs/cgroup")
CONTAINER_LOG_LINKS = Path("/var/log/containers")
"""The kubelet links every container's log here, whatever its ``podLogsDir``."""
CNI_CACHE = Path("/var/lib/cni/results")
"""libcni's result cache (containerd gives it no other place): ``<network>-<container>-<if>``,
each a JSON document naming its pod's network namespace (``netns``)."""
KUBELET_DEVICE_PLUGIN_SOCKET = Path("/var/lib/kubelet/device-plugins/kubelet.sock")
"""The kubelet serves device plugins here whatever its ``--root-dir``, and leaves it when
stopped."""
HOST_DIRECTORIES = (
    Path("/run/containerd/s"),
    Path("/run/containerd"),
    CNI_CACHE,
    CNI_CACHE.parent,
    KUBELET_DEVICE_PLUGIN_SOCKET.parent,
    Path("/var/lib/kubelet"),
    CONTAINER_LOG_LINKS,
)
"""Directories the node's programs make at fixed host paths whatever their configuration (the
runc shims' sockets, libcni's cache, the kubelet's device-plugin socket and log links), deepest
first: ``remove_empty_directories`` takes them away once emptied."""


def cgroup_dirs(cgroup_root: str) -> list[Path]:
    """The node's cgroup root in every mounted hierarchy (v1 controllers and the unified one)."""
    relative = cgroup_root.strip("/")
    if not CGROUP_FS.is_dir():
        return []
    if (CGROUP_FS / "cgroup.controllers").exists():  # cgroup v2 only
        return [CGROUP_FS / relative]
    return [h / relative for h in sorted(CGROUP_FS.iterdir()) if h.is_dir() and not h.is_symlink()]


def _subdirectories(top: Path) -> list[Path]:
    """``top`` and every folder below it; ones that vanish meanwhile (a cgroup the kubelet or
    runc removes while the node goes down) are skipped, not an error."""
    found = []
    for root, _, _ in os.walk(top, onerror=lambda error: None):
        found.append(Path(root))
    return found


def _pids_in(directory: Path) -> set[int]:
    pids: set[int] = set()
    for cgroup in _subdirectories(directory):
        with contextlib.suppress(OSError, ValueError):
            pids.update(int(line) for line in (cgroup / "cgroup.procs").read_text().split())
    return pids


def kill_cgroup_processes(cgroup_root: str, *, timeout: float = 10) -> int:
    """SIGKILL every process in the node's cgroups until none is left; how many there were."""
    directories = cgroup_dirs(cgroup_root)
    killed: set[int] = set()
    deadline = time.monotonic() + timeout
    while True:
        pids = set().union(*(_pids_in(d) for d in directories)) if directories else set()
        pids.discard(os.getpid())
        if not pids or time.monotonic() > deadline:
            return len(killed)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        killed |= pids
        time.sleep(0.1)


def remove_cgroups(cgroup_root: str) -> list[Path]:
    """rmdir the node's cgroups, deepest first; the ones that would not go (still busy)."""
    left: list[Path] = []
    for top in cgroup_dirs(cgroup_root):
        if not top.is_dir():
            continue
        directories = sorted(_subdirectories(top), key=lambda p: len(p.parts), reverse=True)
        for directory in directories:
            try:
                directory.rmdir()
            except FileNotFoundError:
                pass
            except OSError:
                left.append(directory)
    return left


def mounts_under(directory: Path) -> list[str]:
    """Mount points at or below ``directory``, deepest first (``/proc/self/mountinfo``)."""
    prefix = str(directory.resolve())
    points: list[str] = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            point = line.split()[4].replace("\\040", " ")
            if point == prefix or point.startswith(prefix + "/"):
                points.append(point)
    return sorted(points, key=lambda p: p.count("/"), reverse=True)


def unmount_all(directory: Path) -> list[str]:
    """Unmount everything below ``directory`` (overlay roots, netns pins, pod volumes); a busy
    mount is detached lazily. Returns what was mounted."""
    points = mounts_under(directory)
    for point in points:
        result = subprocess.run(["umount", point], capture_output=True, check=False)
        if result.returncode != 0:
            subprocess.run(["umount", "-l", point], capture_output=True, check=False)
    return points


def processes_mentioning(needle: str) -> Iterator[int]:
    """Pids whose command line contains ``needle`` (e.g. the node's state directory)."""
    encoded = needle.encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if encoded in (entry / "cmdline").read_bytes():
                yield int(entry.name)


def remove_container_log_links(state_dir: Path) -> int:
    """Unlink the kubelet's ``/var/log/containers`` links that point into ``state_dir``."""
    removed = 0
    for link in CONTAINER_LOG_LINKS.iterdir() if CONTAINER_LOG_LINKS.is_dir() else ():
        with contextlib.suppress(OSError):
            if link.is_symlink() and Path(os.readlink(link)).is_relative_to(state_dir.resolve()):
                link.unlink()
                removed += 1
    return removed


def remove_cni_cache(state_dir: Path) -> int:
    """Remove libcni's cached results of the pods whose network namespace was in ``state_dir``:
    the node's own network and containerd's ``cni-loopback`` alike (the loopback's results
    outlive their pods), and no other runtime's."""
    removed = 0
    for entry in CNI_CACHE.iterdir() if CNI_CACHE.is_dir() else ():
        with contextlib.suppress(OSError, ValueError, AttributeError):
            netns = json.loads(entry.read_text()).get("netns") or ""
            if netns and Path(netns).is_relative_to(state_dir.resolve()):
                entry.unlink()
                removed += 1
    return removed


def remove_empty_directories(directories: Iterable[Path]) -> list[Path]:
    """rmdir each directory that is empty, in the order given; the ones removed. One that holds
    anything (another program's files) or is missing is left as it is."""
    removed = []
    for directory in directories:
        with contextlib.suppress(OSError):
            directory.rmdir()
            removed.append(directory)
    return removed


def host_paths_present() -> set[Path]:
    """Which of ``HOST_DIRECTORIES`` exist, and every entry of libcni's cache: what a node's
    teardown must leave as it found it."""
    present = {directory for directory in HOST_DIRECTORIES if directory.exists()}
    return present | (set(CNI_CACHE.iterdir()) if CNI_CACHE.is_dir() else set())


def delete_nft_tables(name: str, *, families: tuple[str, ...] = ("ip", "ip6")) -> None:
    """The tables ``name`` of ``families``: kube-proxy's (``ip``/``ip6``, both ``kube-proxy``),
    kube-network-policies' (``inet``)."""
    for family in families:
        subprocess.run(["nft", "delete", "table", family, name], capture_output=True, check=False)


def nft_table_exists(family: str, name: str) -> bool:
    result = subprocess.run(
        ["nft", "list", "table", family, name], capture_output=True, check=False
    )
    return result.returncode == 0
