"""The test kubelet's install profile: the operator's own images run as their console scripts.

There is no container runtime here, so the pods that kube-controller-manager creates from the
Deployments in ``manifests/`` are run by :class:`localkube.kubelet.TestKubelet` as local
processes of the installed console scripts (``.venv/bin/mxjob-webhook``,
``.venv/bin/mxjob-controller``), the programs the images' exec-form entrypoints start
(``Dockerfile.webhook``, ``Dockerfile.controller``). Everything else comes from the pod, as a
container runtime would give it:

- args, env (``podenv``) and the ``KUBERNETES_SERVICE_HOST``/``PORT`` every container gets,
  pointing at the loopback API server;
- a network of its own: each pod gets its own loopback address (``127.a.b.n``, a block per
  kubelet) as its pod IP, and listen addresses on "every interface" in its args (``0.0.0.0:P``,
  ``:P``) are bound to that address, which is what they mean inside a pod's network namespace.
  Two replicas then serve the same port side by side, and the EndpointSlice of a Service lists
  each one's address;
- a filesystem view of its own: the process starts in a private mount namespace (``unshare``)
  where each ``volumeMount`` is a bind mount of a directory the kubelet filled
  (:mod:`localkube.podvolumes`), read-only where the mount says so. So the program reads its
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
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from localkube.podvolumes import Mount

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


def in_mount_namespace(mounts: Sequence[Mount], argv: Sequence[str]) -> list[str]:
    """``argv`` started in a private mount namespace with ``mounts`` bound in place."""
    lines = ["set -e"]
    for mount in mounts:
        target = shlex.quote(mount.target)
        lines.append(f"mkdir -p {target}")
        lines.append(f"mount --bind {shlex.quote(str(mount.source))} {target}")
        if mount.read_only:
            lines.append(f"mount -o remount,bind,ro {target}")
    lines.append('exec "$@"')
    script = "\n".join(lines)
    unshare = ["unshare", "--mount", "--propagation", "private", "--"]
    return [*unshare, "/bin/sh", "-c", script, "sh", *argv]


class PodIpPool:
    """Loopback addresses for pods: ``127.a.b.2`` … ``127.a.b.254``, a random ``a.b`` per pool.

    A random block per kubelet keeps test runs on one machine from serving the same
    address and port.
    """

    def __init__(self, block: str | None = None) -> None:
        if block is None:
            block = f"127.{secrets.randbelow(200) + 20}.{secrets.randbelow(250) + 1}.0/24"
        self.network = ipaddress.IPv4Network(block)
        self._lock = threading.Lock()
        self._taken: dict[str, str] = {}

    def allocate(self, uid: str) -> str:
        """The pod's address (the same one again for the same pod uid)."""
        with self._lock:
            for address, owner in self._taken.items():
                if owner == uid:
                    return address
            for host in list(self.network.hosts())[1:]:
                address = str(host)
                if address not in self._taken:
                    self._taken[address] = uid
                    return address
        raise RuntimeError(f"no free pod address in {self.network}")

    def get(self, uid: str) -> str | None:
        """The pod's address if it has one."""
        with self._lock:
            return next((a for a, owner in self._taken.items() if owner == uid), None)

    def release(self, uid: str) -> None:
        with self._lock:
            for address in [a for a, owner in self._taken.items() if owner == uid]:
                del self._taken[address]
