"""A profile pod's process in a network and filesystem view of its own, without a runtime.

Its listen addresses on every interface are bound to the pod's own address
(:func:`bind_to_pod_ip`), and it starts in a private mount namespace with the pod's volumes
bound at their mount paths (:func:`in_mount_namespace`). The directories made on this machine as
mount points are known (:func:`missing_mount_points`) and removed once empty
(:func:`remove_empty_tree`) and no process mounts there any more (:func:`mounted_anywhere`). See
:mod:`localkube.kubelet.profile`.
"""

from __future__ import annotations

import os
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


_OCTAL = re.compile(r"\\([0-7]{3})")


def _mount_points(mountinfo: str) -> list[str]:
    """The mount points of a ``/proc/<pid>/mountinfo`` (its fifth field, octal escapes undone)."""
    points = []
    for line in mountinfo.splitlines():
        fields = line.split(" ")
        if len(fields) > 4:
            points.append(_OCTAL.sub(lambda m: chr(int(m.group(1), 8)), fields[4]))
    return points


def mounted_anywhere(path: Path) -> bool:
    """Whether a process of this machine that sees its root filesystem has a mount at or under
    ``path`` in its mount namespace: the pod of another kubelet, or of this one's kubelet still
    going.

    Why it matters: an empty mount point removed on the host unmounts what is mounted on it in
    every other namespace (Linux detaches them), so the kubelet that made ``/var/run/secrets``
    would take the token away from the running pods of a kubelet beside it. Processes in a root
    of their own (a container's) mount at paths of that root, not this machine's: not counted.
    """
    target = str(path.resolve())
    root = os.stat("/")
    this_root = (root.st_dev, root.st_ino)
    seen: set[int] = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            namespace = os.stat(entry / "ns" / "mnt").st_ino
            own_root = os.stat(entry / "root")
            if namespace in seen or (own_root.st_dev, own_root.st_ino) != this_root:
                continue
            seen.add(namespace)
            points = _mount_points((entry / "mountinfo").read_text())
        except OSError:
            continue
        if any(point == target or point.startswith(f"{target}/") for point in points):
            return True
    return False
