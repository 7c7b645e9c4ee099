"""The test kubelet's install profile: the operator's own images run as their console scripts.

There is no container runtime here, so the pods that kube-controller-manager creates from the
Deployments in ``manifests/`` are run by :class:`localkube.kubelet.core.TestKubelet` as local
processes of the installed console scripts (``.venv/bin/mxjob-webhook``,
``.venv/bin/mxjob-controller``), the programs the images' exec-form entrypoints start
(``Dockerfile.webhook``, ``Dockerfile.controller``). Everything else comes from the pod, as a
container runtime would give it:

- args, env (``podenv``) and the ``KUBERNETES_SERVICE_HOST``/``PORT`` every container gets,
  pointing at the loopback API server;
- a network of its own: each pod gets an address of its own (:class:`PodIpPool`, on the
  loopback interface) as its pod IP, and listen addresses on "every interface" in its args
  (``0.0.0.0:P``, ``:P``) are bound to that address, which is what they mean inside a pod's
  network namespace. Two replicas then serve the same port side by side, and the EndpointSlice
  of a Service lists each one's address;
- a filesystem view of its own: the process starts in a private mount namespace (``unshare``)
  where each ``volumeMount`` is a bind mount of a directory the kubelet filled
  (:mod:`localkube.kubelet.podvolumes`), read-only where the mount says so. So the program reads its
  Secret at the path in its args and its service-account token at
  ``/var/run/secrets/kubernetes.io/serviceaccount``, unchanged. Mount points that do not exist
  on this machine are created as empty directories (as a runtime does in an image's root
  filesystem). This needs root (or ``CAP_SYS_ADMIN``), which the test kubelet has anyway: it
  edits ``/etc/hosts`` for exec-mode jobs.

Not emulated: the image's user (the process runs as the kubelet's user), a read-only root
filesystem, resource limits.
"""

from __future__ import annotations

import ipaddress
import re
import secrets
import shlex
import subprocess
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from localkube.kubelet.podvolumes import Mount
from localkube.plane.controlplane import EXEC_POD_BLOCKS

_ANY_ADDRESS = re.compile(r"^(?P<flag>--[A-Za-z0-9-]+=)?(?:0\.0\.0\.0|\[::\]|)?:(?P<port>\d+)$")


@dataclass(frozen=True)
class ExecProfile:
    """Images the kubelet runs as a local program in place of the image's entrypoint."""

    entrypoints: Mapping[str, str] = field(default_factory=dict)
    """Image repository (no registry host is stripped, no tag) → the program to run."""
    api_host: str = "127.0.0.1"
    """``KUBERNETES_SERVICE_HOST`` of every container: the loopback API server."""
    api_port: int = 443
    """``KUBERNETES_SERVICE_PORT``."""

    def entrypoint(self, image: str) -> str | None:
        """The program standing in for ``image``'s entrypoint, None if it is not in the profile."""
        return self.entrypoints.get(image_repository(image))


def image_repository(image: str) -> str:
    """``registry/name:tag`` or ``name@sha256:…`` without the tag or digest."""
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        name = name[: len(name) - len(last)] + last.split(":", 1)[0]
    return name


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
    """The topmost directory that ``mkdir -p`` will create on this machine for each target.

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
    """Remove ``top`` and the directories under it if none holds anything else; True if gone."""
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


class PodIpPool:
    """Pod addresses: ``198.18.x.2`` … ``198.18.x.254``, a random block of ``EXEC_POD_BLOCKS``.

    Each address is added to the loopback interface (``ip addr add A/32 dev lo``) while its pod
    runs, so it is reachable from this machine only, like an address on a pod network. Why not
    ``127.0.0.x``: the API server refuses loopback addresses in an EndpointSlice ("may not be in
    the loopback range"), so such a pod could never back a Service. 198.18.0.0/15 is reserved
    for network benchmarks (RFC 2544) and appears on no real network. A random block per
    kubelet keeps test runs on one machine apart; the blocks stay clear of a real node's bridges
    and of the Service range (see ``EXEC_POD_BLOCKS`` in :mod:`localkube.plane.controlplane`), so a
    real node running beside the test kubelets routes none of their pods' addresses.
    """

    def __init__(self, block: str | None = None) -> None:
        if block is None:
            block = secrets.choice(EXEC_POD_BLOCKS)
        self.network = ipaddress.IPv4Network(block)
        self._lock = threading.Lock()
        self._taken: dict[str, str] = {}

    def allocate(self, uid: str) -> str:
        """The pod's address (the same one again for the same pod uid), up on ``lo``."""
        with self._lock:
            for address, owner in self._taken.items():
                if owner == uid:
                    return address
            for host in list(self.network.hosts())[1:]:
                address = str(host)
                if address not in self._taken:
                    self._taken[address] = uid
                    break
            else:
                raise RuntimeError(f"no free pod address in {self.network}")
        _ip("add", address)
        return address

    def get(self, uid: str) -> str | None:
        """The pod's address if it has one."""
        with self._lock:
            return next((a for a, owner in self._taken.items() if owner == uid), None)

    def release(self, uid: str) -> None:
        with self._lock:
            gone = [a for a, owner in self._taken.items() if owner == uid]
            for address in gone:
                del self._taken[address]
        for address in gone:
            _ip("del", address)

    def release_all(self) -> None:
        with self._lock:
            gone, self._taken = list(self._taken), {}
        for address in gone:
            _ip("del", address)


def _ip(verb: str, address: str) -> None:
    """``ip addr add|del address/32 dev lo``; an address already there (or gone) is fine."""
    result = subprocess.run(
        ["ip", "addr", verb, f"{address}/32", "dev", "lo"],
        capture_output=True,
        text=True,
        check=False,
    )
    benign = ("File exists", "Cannot assign requested address")
    if result.returncode != 0 and not any(text in result.stderr for text in benign):
        raise RuntimeError(f"ip addr {verb} {address}/32 dev lo: {result.stderr.strip()}")
