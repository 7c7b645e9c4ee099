"""Host entries that make a job's service names reach 127.0.0.1 while its pods run locally.

Processes in exec mode resolve ``<job>-scheduler-0`` exactly as they would in a cluster, without
any rewriting of their env: the harness adds marked lines to the hosts file and removes them when
the pod stops. Every line carries its owner so concurrent pods and runs never remove each other's.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Iterable
from pathlib import Path

MARK = "# localkube"


def _rewrite(path: Path, keep: Callable[[str], bool], add: list[str]) -> None:
    with path.open("r+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            lines = handle.read().splitlines()
            kept = [line for line in lines if keep(line)]
            new = kept + add
            if new != lines:
                handle.seek(0)
                handle.write("\n".join(new) + "\n")
                handle.truncate()
                handle.flush()
                os.fsync(handle.fileno())
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _owner_tag(owner: str) -> str:
    return f"{MARK} pid={os.getpid()} owner={owner}"


def add(path: Path, names: Iterable[str], *, owner: str) -> None:
    """Point ``names`` at 127.0.0.1 on behalf of ``owner`` (replacing that owner's old line)."""
    names = list(names)
    tag = _owner_tag(owner)
    line = f"127.0.0.1 {' '.join(names)} {tag}"
    _rewrite(path, lambda existing: not existing.endswith(tag), [line] if names else [])


def remove(path: Path, *, owner: str) -> None:
    """Remove the entries ``owner`` added."""
    tag = _owner_tag(owner)
    _rewrite(path, lambda existing: not existing.endswith(tag), [])


def remove_all(path: Path) -> None:
    """Remove every entry this process added."""
    marker = f"{MARK} pid={os.getpid()} "
    _rewrite(path, lambda existing: marker not in existing, [])
