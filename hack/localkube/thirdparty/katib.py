"""Katib v0.19.0, hyperparameter tuning whose trials may be MXJobs: its build and its images.

Built from Katib's release source (``hack/build-third-party.sh katib``, cached per machine):
``bin/`` holds its four Go programs, ``manifests/`` its ``manifests/v1beta1`` (components and
installs). The install meant for the real node is :data:`INSTALL`, the standalone one with
PostgreSQL: Katib's DB manager keeps the trials' metrics there, and PostgreSQL is one program
where MySQL's install is two.

Why images are built here: Katib's release images are on ghcr.io, its install's database is
``postgres:14.5-alpine`` from Docker Hub, and no registry is reachable from this machine. Each Go
program becomes an image on the project's base (``hack/katib/Dockerfile.<program>``) that keeps
what Katib's own Dockerfiles set and its manifests and controller rely on: the working directory
and the relative entrypoint (the Deployments run ``./katib-controller``; the suggestion and the
metrics collector sidecar are given no command). PostgreSQL is Debian bookworm's on the same base,
with an entrypoint that does what the official image's does for the env the install sets
(``hack/katib/postgres/``). Only these are built: Katib's Python suggestions (hyperopt, optuna,
skopt...), its TensorFlow-event collector and its UI are not, so an install here points the
algorithms goptuna implements (``random``, ``tpe``, ``cmaes``, ``sobol``) at
:attr:`KatibImages.suggestion` in ``katib-config``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from localkube.base.paths import PROJECT_ROOT
from localkube.images.build import DockerfileImage, ensure_extra_image
from localkube.images.cache import BuiltImage
from localkube.thirdparty.base import ReleaseSource


class KatibError(RuntimeError):
    """Katib did not build; the message says why."""


SOURCE: Final = ReleaseSource("katib", "Katib", "KATIB_VERSION", KatibError)
"""Its build: ``bin/katib-controller``, ``bin/katib-db-manager``, ``bin/goptuna-suggestion``,
``bin/file-metricscollector`` and ``manifests/`` (Katib's ``manifests/v1beta1``)."""
archive = SOURCE.archive
missing = SOURCE.missing
build = SOURCE.build

INSTALL: Final = Path("manifests") / "installs" / "katib-standalone-postgres"
"""The kustomization installed, inside the build (``kubectl apply -k`` on a copy of it, whose
``../../components`` are beside it in the build)."""
IMAGES_DIR: Final = PROJECT_ROOT / "hack" / "katib"
REPOSITORY_PREFIX: Final = "docker.io/mxjob-operator/"


def install_dir(home: Path) -> Path:
    """:data:`INSTALL` in the build ``home`` (what :func:`build` returns)."""
    return home / INSTALL


@dataclass(frozen=True)
class KatibImageSpec:
    """One of Katib's images as built here: where its Dockerfile and context are, and which
    released image it stands in for (what an install's ``images:`` or ``katib-config`` names)."""

    attribute: str
    """Its attribute of :class:`KatibImages`."""
    name: str
    """Its name in the project's image cache, and its repository after
    :data:`REPOSITORY_PREFIX`."""
    released: str
    """The released image's name, without tag (the tag is the release's, or ``14.5-alpine``)."""
    program: str | None
    """The binary of the build's ``bin/`` it holds (the build context); None for PostgreSQL,
    whose context is ``hack/katib/postgres/``."""

    def dockerfile(self, home: Path) -> DockerfileImage:
        """The image's build, its context the build's ``bin/`` (a program) or its own folder."""
        if self.program is None:
            folder = IMAGES_DIR / self.name.removeprefix("katib-")
            dockerfile, context = folder / "Dockerfile", folder
        else:
            dockerfile, context = IMAGES_DIR / f"Dockerfile.{self.dockerfile_suffix}", home / "bin"
        return DockerfileImage(
            name=self.name,
            dockerfile=dockerfile,
            context=context,
            ignore_file=dockerfile.with_name(f"{dockerfile.name}.dockerignore"),
            repository=REPOSITORY_PREFIX + self.name,
        )

    @property
    def dockerfile_suffix(self) -> str:
        """``Dockerfile.<suffix>`` of ``hack/katib/``: the program without Katib's prefix."""
        return (self.program or "").removeprefix("katib-")


SPECS: Final = (
    KatibImageSpec(
        "controller", "katib-controller", "ghcr.io/kubeflow/katib/katib-controller",
        "katib-controller",
    ),
    KatibImageSpec(
        "db_manager", "katib-db-manager", "ghcr.io/kubeflow/katib/katib-db-manager",
        "katib-db-manager",
    ),
    KatibImageSpec(
        "suggestion", "katib-suggestion-goptuna", "ghcr.io/kubeflow/katib/suggestion-goptuna",
        "goptuna-suggestion",
    ),
    KatibImageSpec(
        "collector", "katib-file-metrics-collector",
        "ghcr.io/kubeflow/katib/file-metrics-collector", "file-metricscollector",
    ),
    KatibImageSpec("postgres", "katib-postgres", "postgres", None),
)  # fmt: skip
"""Every image, in :class:`KatibImages`' order."""


@dataclass(frozen=True)
class KatibImages:
    """Katib's images as built here, each to be imported into the real node's containerd."""

    controller: BuiltImage
    db_manager: BuiltImage
    suggestion: BuiltImage
    """goptuna: ``random``, ``tpe``, ``cmaes`` and ``sobol``."""
    collector: BuiltImage
    """The file metrics collector, for the ``StdOut`` and ``File`` collector kinds."""
    postgres: BuiltImage

    def all(self) -> list[BuiltImage]:
        """Every image, in :data:`SPECS`' order."""
        return [getattr(self, spec.attribute) for spec in SPECS]

    def replacing(self) -> dict[str, str]:
        """Released image name (no tag) → the reference built here, for an install's edits."""
        return {spec.released: getattr(self, spec.attribute).ref for spec in SPECS}


def images(
    home: Path | None = None, *, log: Callable[[str], None] = lambda line: None
) -> KatibImages:
    """Katib's five images on the project's base, each built when its inputs changed (the
    binaries of ``home``, default :func:`build`'s, or the Dockerfiles), else from the cache.
    Needs root and buildah, as every image build here."""
    home = home or build()
    built = {spec.attribute: ensure_extra_image(spec.dockerfile(home), log=log) for spec in SPECS}
    return KatibImages(**built)
