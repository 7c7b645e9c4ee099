"""``make images``: the project's container images, built with buildah, rebuilt only when needed.

Why: the install a user applies runs ``Dockerfile.webhook`` and ``Dockerfile.controller`` images;
the real node (``localkube.realnode``) runs exactly those, built unmodified from the repository,
plus the image of the runnable training example (``examples/Dockerfile``) and the pod sandbox. No
registry is reachable here, so the Dockerfiles' Python base is made locally with debootstrap
(``--build-arg PYTHON_IMAGE=...``) and the sandbox ("pause") is compiled from Kubernetes' own
``pause.c`` of the pinned module.

Each image is identified by a digest of its inputs (Dockerfile, the files its ignore file lets
into the context, build arguments, the base's digest) and kept in the per-machine cache as a
docker-archive that ``ctr images import`` loads under its name. buildah runs with the host's
network (it would otherwise create a bridge on 10.88.0.0/16), runc (crun refuses this machine's
hybrid cgroups) and the host's CA bundle (pip reaches PyPI through a proxy with its own CA).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from localkube.base.builds import download_module, pinned_version
from localkube.base.paths import PROJECT_ROOT
from localkube.images.cache import (
    BuiltImage,
    ImageRecord,
    cache_lock,
    cache_root,
    layers_size,
    load_record,
    save_record,
)
from localkube.images.inputs import ignore_patterns, inputs_digest

RUNC = "/usr/sbin/runc"
CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
DEBIAN_SUITE = "bookworm"
BASE_PACKAGES = ("python3", "python3-venv", "python3-pip", "python-is-python3", "ca-certificates")
BASE_REF = "localhost/mxjob-operator/python:3.11-bookworm"
EXAMPLES_REF = "docker.io/mxjob/mxnet-examples:1.9.1-cpu"
"""The name ``examples/v1/train/mx_job_dist_cpu.yaml`` gives its image."""


TVM_EXAMPLES_REF = "docker.io/mxjob/tvm-examples:0.27-cpu"
"""The name ``examples/v1/tune/mx_job_tune_cpu.yaml`` gives its image."""


class ImageBuildError(RuntimeError):
    """An image could not be built; the message names the image, the step and buildah's output."""


@dataclass(frozen=True)
class ProjectImages:
    base: BuiltImage
    pause: BuiltImage
    webhook: BuiltImage
    controller: BuiltImage
    examples: BuiltImage

    def all(self) -> list[BuiltImage]:
        return [self.base, self.pause, self.webhook, self.controller, self.examples]


@dataclass(frozen=True)
class DockerfileImage:
    """One image built from a Dockerfile of the repository."""

    name: str
    dockerfile: Path
    context: Path
    ignore_file: Path
    repository: str
    """The image's name without tag; the tag is ``fixed_tag`` or ``dev-<inputs digest>``."""
    fixed_tag: str | None = None


DOCKERFILE_IMAGES = (
    DockerfileImage(
        name="webhook",
        dockerfile=PROJECT_ROOT / "Dockerfile.webhook",
        context=PROJECT_ROOT,
        ignore_file=PROJECT_ROOT / "Dockerfile.webhook.dockerignore",
        repository="docker.io/mxjob-operator/webhook",
    ),
    DockerfileImage(
        name="controller",
        dockerfile=PROJECT_ROOT / "Dockerfile.controller",
        context=PROJECT_ROOT,
        ignore_file=PROJECT_ROOT / "Dockerfile.controller.dockerignore",
        repository="docker.io/mxjob-operator/controller",
    ),
    DockerfileImage(
        name="examples",
        dockerfile=PROJECT_ROOT / "examples" / "Dockerfile",
        context=PROJECT_ROOT,
        ignore_file=PROJECT_ROOT / "examples" / "Dockerfile.dockerignore",
        repository=EXAMPLES_REF.rsplit(":", 1)[0],
        fixed_tag=EXAMPLES_REF.rsplit(":", 1)[1],
    ),
)


TVM_EXAMPLES = DockerfileImage(
    name="tvm-examples",
    dockerfile=PROJECT_ROOT / "examples" / "Dockerfile.tvm",
    context=PROJECT_ROOT,
    ignore_file=PROJECT_ROOT / "examples" / "Dockerfile.tvm.dockerignore",
    repository=TVM_EXAMPLES_REF.rsplit(":", 1)[0],
    fixed_tag=TVM_EXAMPLES_REF.rsplit(":", 1)[1],
)
"""The tuning example's image: built (:func:`ensure_extra_image`) and imported by the tests
that run it on the real node only, since few do and TVM makes it large."""


# -- buildah ---------------------------------------------------------------------------------------
class Buildah:
    """buildah with its storage in the cache, never the host's ``/var/lib/containers``, and its
    network configuration there too: even with ``--network host`` buildah makes
    ``/etc/cni/net.d`` and a lock in it unless its ``containers.conf`` names another place."""

    def __init__(self, cache: Path) -> None:
        self.cache = cache
        self.storage = ["--root", str(cache / "storage"), "--runroot", str(cache / "run"),
                        "--storage-driver", "overlay"]  # fmt: skip
        network = cache / "cni"
        network.mkdir(parents=True, exist_ok=True)
        config = cache / "containers.conf"
        config.write_text(f'[network]\nnetwork_config_dir = "{network}"\n')
        self.environment = {**os.environ, "CONTAINERS_CONF": str(config)}

    def run(self, image: str, step: str, *args: str, timeout: float = 1800) -> str:
        result = subprocess.run(
            ["buildah", *self.storage, *args],
            capture_output=True,
            text=True,
            check=False,
            timeout=timeout,
            env=self.environment,
        )
        if result.returncode != 0:
            output = (result.stdout + result.stderr).strip().splitlines()
            raise ImageBuildError(
                f"image {image}: {step} failed (buildah {args[0]}, exit {result.returncode}):\n"
                + "\n".join(output[-25:])
            )
        return result.stdout

    def export(self, ref: str, archive: Path) -> None:
        staging = archive.with_name(f".{archive.name}.tmp")
        staging.unlink(missing_ok=True)
        self.run(ref, "export", "push", ref, f"docker-archive:{staging}:{ref}")
        staging.replace(archive)


def _record_build(
    cache: Path, buildah: Buildah, *, name: str, ref: str, digest: str, started: float
) -> BuiltImage:
    """Export ``ref``, keep its record, drop older archives of ``name``; the new image."""
    archive = cache / f"{name}-{digest[:12]}.tar"
    buildah.export(ref, archive)
    for old in cache.glob(f"{name}-*.tar"):
        if old != archive:
            old.unlink(missing_ok=True)
    record = ImageRecord(
        ref=ref,
        digest=digest,
        archive=str(archive),
        size_bytes=layers_size(archive),
        archive_bytes=archive.stat().st_size,
        build_seconds=round(time.monotonic() - started, 1),
        built_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    )
    save_record(cache, name, record)
    return record.image(rebuilt=True)


# -- the images ------------------------------------------------------------------------------------
def ensure_base(cache: Path, buildah: Buildah, log: Callable[[str], None]) -> BuiltImage:
    """Debian bookworm with Python 3.11 and pip, from debootstrap: the Dockerfiles' base."""
    digest = hashlib.sha256(
        json.dumps([DEBIAN_MIRROR, DEBIAN_SUITE, BASE_PACKAGES, BASE_REF]).encode()
    ).hexdigest()
    record = load_record(cache, "base", digest)
    if record is not None:
        return record.image(rebuilt=False)
    if shutil.which("debootstrap") is None:
        raise ImageBuildError("image base: debootstrap is not installed: run make node-packages")
    log(f"building {BASE_REF} with debootstrap (first time only, a few minutes)")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(dir=cache) as work:
        rootfs = Path(work) / "rootfs"
        result = subprocess.run(
            ["debootstrap", "--variant=minbase", f"--include={','.join(BASE_PACKAGES)}",
             DEBIAN_SUITE, str(rootfs), DEBIAN_MIRROR],
            capture_output=True, text=True, check=False, timeout=1800,
        )  # fmt: skip
        if result.returncode != 0:
            raise ImageBuildError(
                f"image base: debootstrap failed (exit {result.returncode}):\n"
                + "\n".join((result.stdout + result.stderr).splitlines()[-25:])
            )
        for trimmed in ("var/lib/apt/lists", "var/cache/apt", "usr/share/doc", "usr/share/man",
                        "usr/share/locale", "var/log"):  # fmt: skip
            shutil.rmtree(rootfs / trimmed, ignore_errors=True)
            (rootfs / trimmed).mkdir(parents=True, exist_ok=True)
        tarball = Path(work) / "rootfs.tar"
        subprocess.run(["tar", "-C", str(rootfs), "-cf", str(tarball), "."], check=True)
        container = buildah.run("base", "from", "from", "scratch").strip()
        try:
            buildah.run("base", "add", "add", container, str(tarball), "/")
            buildah.run(
                "base", "config", "config",
                "--env", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                "--env", "LANG=C.UTF-8", "--cmd", "python3", container,
            )  # fmt: skip
            buildah.run("base", "commit", "commit", "--rm", container, BASE_REF)
        except ImageBuildError:
            buildah.run("base", "rm", "rm", container)
            raise
    return _record_build(cache, buildah, name="base", ref=BASE_REF, digest=digest, started=started)


def ensure_pause(cache: Path, buildah: Buildah, log: Callable[[str], None]) -> BuiltImage:
    """Kubernetes' pause, compiled from ``build/pause/linux/pause.c`` of the pinned module."""
    version = pinned_version("KUBE_VERSION")
    source_dir = download_module(
        "k8s.io/kubernetes", version, module_dir=PROJECT_ROOT / "hack" / "k8s"
    )
    source = source_dir / "build" / "pause" / "linux" / "pause.c"
    if not source.is_file():
        raise ImageBuildError(f"image pause: {source} is not in the pinned Kubernetes module")
    ref = f"localhost/mxjob-operator/pause:{version}"
    digest = hashlib.sha256(source.read_bytes() + ref.encode()).hexdigest()
    record = load_record(cache, "pause", digest)
    if record is not None:
        return record.image(rebuilt=False)
    log(f"building {ref} from {source.name}")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(dir=cache) as work:
        binary = Path(work) / "pause"
        result = subprocess.run(
            ["gcc", "-Os", "-static", "-Wall", f'-DVERSION="{version}"', "-o", str(binary),
             str(source)],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if result.returncode != 0:
            raise ImageBuildError(f"image pause: gcc failed:\n{result.stderr[-2000:]}")
        subprocess.run(["strip", str(binary)], check=False)
        container = buildah.run("pause", "from", "from", "scratch").strip()
        buildah.run("pause", "copy", "copy", "--chmod", "0755", container, str(binary), "/pause")
        buildah.run("pause", "config", "config", "--entrypoint", '["/pause"]', "--cmd", "",
                    "--user", "65535:65535", container)  # fmt: skip
        buildah.run("pause", "commit", "commit", "--rm", container, ref)
    return _record_build(cache, buildah, name="pause", ref=ref, digest=digest, started=started)


def ensure_dockerfile_image(
    spec: DockerfileImage, cache: Path, buildah: Buildah, *, base: BuiltImage,
    log: Callable[[str], None],
) -> BuiltImage:  # fmt: skip
    build_args = {"PYTHON_IMAGE": base.ref}
    patterns = ignore_patterns(spec.ignore_file.read_text())
    digest = inputs_digest(
        dockerfile=spec.dockerfile,
        context=spec.context,
        patterns=patterns,
        build_args={**build_args, "base-archive": base.archive.name},
    )
    ref = f"{spec.repository}:{spec.fixed_tag or 'dev-' + digest[:12]}"
    record = load_record(cache, spec.name, digest)
    if record is not None and record.ref == ref:
        return record.image(rebuilt=False)
    log(f"building {ref} from {spec.dockerfile.relative_to(PROJECT_ROOT)}")
    started = time.monotonic()
    buildah.run(
        spec.name, "build", "bud", "--layers", "--network", "host", "--runtime", RUNC,
        "--volume", f"{CA_BUNDLE}:{CA_BUNDLE}:ro", "--ignorefile", str(spec.ignore_file),
        "--build-arg", f"PYTHON_IMAGE={base.ref}", "--file", str(spec.dockerfile),
        "--tag", ref, str(spec.context),
    )  # fmt: skip
    return _record_build(cache, buildah, name=spec.name, ref=ref, digest=digest, started=started)


def ensure_images(
    *, cache_dir: Path | None = None, log: Callable[[str], None] = lambda line: None
) -> ProjectImages:
    """Every image of the project, built where its inputs changed, found in the cache where not."""
    if shutil.which("buildah") is None:
        raise ImageBuildError("buildah is not installed: run make node-packages")
    if os.geteuid() != 0:
        raise ImageBuildError("building the images needs root (buildah's overlay storage)")
    cache = cache_dir or cache_root()
    with cache_lock(cache):
        buildah = Buildah(cache)
        base = ensure_base(cache, buildah, log)
        pause = ensure_pause(cache, buildah, log)
        built = {
            spec.name: ensure_dockerfile_image(spec, cache, buildah, base=base, log=log)
            for spec in DOCKERFILE_IMAGES
        }
    return ProjectImages(base=base, pause=pause, **built)


def ensure_extra_image(
    spec: DockerfileImage, *, cache_dir: Path | None = None,
    log: Callable[[str], None] = lambda line: None,
) -> BuiltImage:  # fmt: skip
    """One image beyond the project's own (a third-party program the tests run on the real
    node), on the same base, built when its inputs changed."""
    cache = cache_dir or cache_root()
    with cache_lock(cache):
        buildah = Buildah(cache)
        base = ensure_base(cache, buildah, log)
        return ensure_dockerfile_image(spec, cache, buildah, base=base, log=log)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m localkube.images", description=__doc__)
    parser.parse_args(argv)
    started = time.monotonic()
    try:
        images = ensure_images(log=lambda line: print(line, flush=True))
    except ImageBuildError as error:
        print(f"make images failed: {error}", file=sys.stderr)
        return 1
    print(f"{'image':58} {'size':>9} {'archive':>9} {'build':>8}")
    for image in images.all():
        print(
            f"{image.ref:58} {image.size_bytes / 2**20:7.1f}Mi {image.archive_bytes / 2**20:7.1f}Mi"
            f" {image.build_seconds:6.0f} s  {'built' if image.rebuilt else 'cached'}"
        )
    print(f"done in {time.monotonic() - started:.1f} s")
    return 0
