"""What a release writes, from the registry and the pushed digests: pure, so it is unit-tested.

Why digests: a tag can be moved after the fact, a digest cannot; the chart and the kustomize
overlay the release writes name each image as ``repository@sha256:...``, so what a cluster pulls
is exactly what was signed and described by its SBOM (docs/how-to/harden.md, "Images from a
registry, by digest").
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

IMAGES = ("webhook", "controller")
"""The chart's ``images.<name>`` and the manifests' ``mxjob-operator/<name>``."""
DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
"""What the chart's schema accepts as ``images.<name>.digest``."""
_REGISTRY = re.compile(r"^[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[a-z0-9._-]+)*$")


EMPTY_TRUSTED_ROOT = {
    "mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
    "tlogs": [],
    "certificateAuthorities": [],
    "ctlogs": [],
    "timestampAuthorities": [],
}
"""What ``cosign verify --trusted-root`` is given: a signature checked against the release's own
public key needs no Sigstore authority, and without a trusted root cosign fetches Sigstore's
public one from the internet first (``tuf-repo-cdn.sigstore.dev``)."""


class ReleaseError(RuntimeError):
    """A release step failed; the message names the step and what its tool said."""


@dataclass(frozen=True)
class Registry:
    """``host[:port][/prefix]``: where the images (``<prefix>/<name>``) and the chart
    (``<prefix>/charts/<chart>``) go."""

    host: str
    prefix: str

    @classmethod
    def parse(cls, value: str) -> Registry:
        value = value.removeprefix("oci://").rstrip("/")
        if not _REGISTRY.match(value):
            raise ReleaseError(f"REGISTRY={value!r} is not host[:port][/prefix]")
        host, _, prefix = value.partition("/")
        return cls(host=host, prefix=prefix)

    @property
    def base(self) -> str:
        return f"{self.host}/{self.prefix}" if self.prefix else self.host

    def repository(self, image: str) -> str:
        return f"{self.base}/{image}"

    @property
    def charts(self) -> str:
        """``helm push``'s destination: the chart becomes ``<base>/charts/<its name>``."""
        return f"oci://{self.base}/charts"


def checked_digest(value: str, *, what: str) -> str:
    """``value`` stripped, when it is a sha256 digest (buildah's ``--digestfile``)."""
    digest = value.strip()
    if not DIGEST.match(digest):
        raise ReleaseError(f"{what}: {digest!r} is not a sha256 digest")
    return digest


def pinned(repository: str, digest: str) -> str:
    return f"{repository}@{digest}"


def chart_values(values: dict[str, Any], registry: Registry, digests: dict[str, str]) -> None:
    """The chart's values with each image's repository in ``registry`` and its digest (the tag
    stays, for people, unused by the manifests); changed in place."""
    for name in IMAGES:
        image = values["images"][name]
        image["repository"] = registry.repository(name)
        image["digest"] = checked_digest(digests[name], what=f"image {name}")


def kustomization(registry: Registry, digests: dict[str, str], *, base: Path, at: Path) -> str:
    """The overlay at ``at``: the install of ``base`` with each image by digest."""
    document = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [os.path.relpath(base, at)],
        "images": [
            {
                "name": f"mxjob-operator/{name}",
                "newName": registry.repository(name),
                "digest": checked_digest(digests[name], what=f"image {name}"),
            }
            for name in IMAGES
        ],
    }
    header = "# Written by `make release` (localkube.scenarios.release): the images by digest.\n"
    return header + yaml.safe_dump(document, sort_keys=False)


def components_named(sbom: dict[str, Any]) -> set[str]:
    """The package names a CycloneDX document lists, lower-cased."""
    return {str(c["name"]).lower() for c in sbom.get("components", [])}
