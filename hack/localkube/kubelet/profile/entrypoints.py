"""Which images the install profile runs, and the program standing in for each one's entrypoint.

See :mod:`localkube.kubelet.profile` for what the profile is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


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
