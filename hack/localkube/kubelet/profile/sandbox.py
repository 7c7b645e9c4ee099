"""A profile pod's process in a network and filesystem view of its own, without a runtime.

Its listen addresses on every interface are bound to the pod's own address
(:func:`bind_to_pod_ip`), and it starts in a private mount namespace with the pod's volumes
bound at their mount paths (:func:`in_mount_namespace`). The directories made on this machine as
mount points are known (:func:`missing_mount_points`) and removed once empty
(:func:`remove_empty_tree`). See :mod:`localkube.kubelet.profile`.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from pathlib import Path

from localkube.kubelet.profile.volumes import Mount

_ANY_ADDRESS = re.compile(r"^(?P<flag>--[A-Za-z0-9-]+=)?(?:0\.0\.0\.0|\[::\]|)?:(?P<port>\d+)$")


def bind_to_pod_ip(argv: Sequence[str], pod_ip: str) -> list[str]:
    """Listen addresses on every interface (``0.0.0.0:P``, ``[::]:P``, ``:P``) → ``pod_ip:P``."""
    out = []
    for arg in argv:
        match = _ANY_ADDRESS.match(arg)
        out.append(f"{match['flag'] or ''}{pod_ip}:{match['port']}" if match else arg)
    return out


def in_mount_namespace(
    mounts: Sequence[Mount], argv: Sequence[str], *, keep_visible: Sequence[str] = ()
) -> list[str]:
    """``argv`` started in a private mount namespace with ``mounts`` bound in place.

    Every source is opened first and bound from its file descriptor, so a mount over a
    directory holding the sources (an ``emptyDir`` on ``/tmp`` while the kubelet's files live
    under ``/tmp``) hides nothing still to be mounted; parents are mounted before children.
    ``keep_visible`` are this machine's directories the program itself lives in (the checkout
    and its virtualenv, which stand in for the image's filesystem): where a mount covers one
    (a checkout under ``/tmp``), it is bound back in place. Read-only remounts come last.
    """
    lines = ["set -e"]
    for index, mount in enumerate(mounts):
        lines.append(f"exec {{fd{index}}}<{shlex.quote(str(mount.source))}")
    covered = [
        path for path in keep_visible if any(_covers(mount.target, path) for mount in mounts)
    ]
    for index, path in enumerate(covered):
        lines.append(f"exec {{keep{index}}}<{shlex.quote(path)}")
    ordered = sorted(enumerate(mounts), key=lambda item: item[1].target.rstrip("/").count("/"))
    for index, mount in ordered:
        target = shlex.quote(mount.target)
        if mount.source.is_file():  # a file (a subPath) is bound onto a file
            lines.append(f"mkdir -p {shlex.quote(str(Path(mount.target).parent))}")
            lines.append(f"[ -e {target} ] || : > {target}")
        else:
            lines.append(f"mkdir -p {target}")
        lines.append(f'mount --no-canonicalize --bind "/proc/self/fd/$fd{index}" {target}')
    for index, path in enumerate(covered):
        quoted = shlex.quote(path)
        lines.append(f"mkdir -p {quoted}")
        lines.append(f'mount --no-canonicalize --bind "/proc/self/fd/$keep{index}" {quoted}')
    for _, mount in ordered:
        if mount.read_only:
            lines.append(f"mount -o remount,bind,ro {shlex.quote(mount.target)}")
    lines += [f"exec {{fd{index}}}<&-" for index in range(len(mounts))]
    lines += [f"exec {{keep{index}}}<&-" for index in range(len(covered))]
    lines.append('exec "$@"')
    script = "\n".join(lines)
    unshare = ["unshare", "--mount", "--propagation", "private", "--"]
    return [*unshare, "/bin/bash", "-c", script, "bash", *argv]


def _covers(target: str, path: str) -> bool:
    """Whether a mount at ``target`` hides ``path`` (the same directory or one below it)."""
    mount_point = Path(target)
    return Path(path) == mount_point or mount_point in Path(path).parents


def missing_mount_points(mounts: Sequence[Mount]) -> list[Path]:
    """The topmost directory that ``mkdir -p`` will create on this machine for each target (or
    the empty file made as a file's mount point).

    A private mount namespace hides what is mounted, not the directories made for it: those
    appear on the host (``/var/run/secrets/kubernetes.io/serviceaccount``), where programs that
    guess "am I in a pod?" from them would be misled. The kubelet removes them once its pods are
    gone (:func:`remove_empty_tree`).
    """
    created: list[Path] = []
    for mount in mounts:
        target = Path(mount.target)
        if target.exists():
            continue
        top = target
        while not top.parent.exists():
            top = top.parent
        if top not in created:
            created.append(top)
    return created


def remove_empty_tree(top: Path) -> bool:
    """Remove ``top`` and the directories under it if none holds anything else; True if gone.
    An empty file (the mount point of a file, a ``subPath``) counts as nothing."""
    if top.is_file() and not top.is_symlink() and top.stat().st_size == 0:
        top.unlink()
        return True
    if not top.is_dir() or top.is_symlink():
        return not top.exists()
    for child in top.iterdir():
        if not remove_empty_tree(child):
            return False
    try:
        top.rmdir()
    except OSError:
        return False
    return True
