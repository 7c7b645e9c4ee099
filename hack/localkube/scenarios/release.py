"""``make release REGISTRY=<host:port/prefix>`` (``hack/release.sh``): the release's pushes:
both images (the cached build of ``localkube.images``) with buildah, their SBOMs (cyclonedx-py
over the image's own ``/opt/venv``), their cosign signatures and SBOM attestations, and the chart,
packaged with the digests in its values, with ``helm push``.

Why each tool: buildah pushes what ``make images`` built and reports the digest the registry
stored (``--digestfile``); ``cyclonedx-py environment`` describes the installed distributions of
an interpreter, here the image's (run in the image's root with ``chroot``, so the SBOM lists what
ships, not the build machine's); cosign signs ``repository@digest`` with a key pair made for the
release and attaches the SBOM as a signed in-toto attestation (``--type cyclonedx``), nothing sent
to a transparency log (``--tlog-upload=false``: no network but the registry's).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from localkube.base.builds import run_build_script
from localkube.base.paths import PROJECT_ROOT
from localkube.images.build import Buildah, ImageBuildError, ProjectImages, ensure_images
from localkube.images.cache import cache_lock, cache_root
from localkube.scenarios.release_plan import (
    EMPTY_TRUSTED_ROOT,
    IMAGES,
    Registry,
    ReleaseError,
    chart_values,
    checked_digest,
    kustomization,
    pinned,
)
from localkube.thirdparty import helm

CHART = PROJECT_ROOT / "charts" / "mxjob-operator"
OVERLAY_BASE = PROJECT_ROOT / "manifests" / "overlays" / "in-cluster"
COSIGN_PASSWORD = "mxjob-operator-release"
"""The key pair's password (cosign encrypts the private key with it): the key stays in the
release's output directory, so this guards nothing but cosign's prompt."""
CYCLONEDX = PROJECT_ROOT / ".venv-sbom" / "bin" / "cyclonedx-py"
"""``make sbom-venv``'s: not in ``.venv`` (hack/sbom-requirements.txt says why)."""
_CHROOT_PYTHON = """#!{python}
# The image's own interpreter, run in its root; the paths it reports, seen from the host.
import json, subprocess, sys
done = subprocess.run(["chroot", {root!r}, "/opt/venv/bin/python", *sys.argv[1:]],
                      capture_output=True, text=True, check=False)
if done.returncode:
    sys.exit(done.stderr)
paths = json.loads(done.stdout)
json.dump([{root!r} + p if p.startswith("/") else p for p in paths], sys.stdout)
"""


def cosign_binary() -> Path:
    """The pinned ``cosign`` (``hack/build-cosign.sh``, built once per machine)."""
    return run_build_script(PROJECT_ROOT / "hack" / "build-cosign.sh")


def run_step(argv: Sequence[str | Path], *, step: str, env: dict[str, str] | None = None,
         cwd: Path | None = None, timeout: float = 900) -> str:  # fmt: skip
    done = subprocess.run(
        [str(a) for a in argv], capture_output=True, text=True, check=False, timeout=timeout,
        env=env, cwd=cwd,
    )  # fmt: skip
    if done.returncode != 0:
        said = "\n".join((done.stdout + done.stderr).strip().splitlines()[-20:])
        raise ReleaseError(f"{step} failed (exit {done.returncode}):\n{said}")
    return done.stdout


@dataclass(frozen=True)
class Trust:
    """How the tools trust the registry's TLS certificate: its CA file, or the system's."""

    ca_file: Path | None = None

    def cert_dir(self, work: Path) -> list[str]:
        """buildah's ``--cert-dir``: a directory whose ``*.crt`` are CAs."""
        if self.ca_file is None:
            return []
        directory = work / "certs.d"
        directory.mkdir(exist_ok=True)
        (directory / "ca.crt").write_bytes(self.ca_file.read_bytes())
        return ["--cert-dir", str(directory)]

    def helm(self) -> list[str]:
        return ["--ca-file", str(self.ca_file)] if self.ca_file else []

    def cosign_env(self, work: Path) -> dict[str, str]:
        """cosign's environment: its password, Go's ``SSL_CERT_FILE``, and its TUF cache in
        ``work`` (a key-based signature needs no TUF root, but cosign makes the directory)."""
        env = {**os.environ, "COSIGN_PASSWORD": COSIGN_PASSWORD, "TUF_ROOT": str(work / "tuf")}
        if self.ca_file:
            env["SSL_CERT_FILE"] = str(self.ca_file)
        return env


@dataclass
class Released:
    """What ``release.json`` records: the references by digest, the files, the timings."""

    registry: str
    chart: str
    chart_version: str
    chart_digest: str = ""
    images: dict[str, str] = field(default_factory=dict)
    """name → ``repository@sha256:...``."""
    digests: dict[str, str] = field(default_factory=dict)
    sboms: dict[str, str] = field(default_factory=dict)
    public_key: str = ""
    trusted_root: str = ""
    overlay: str = ""
    seconds: dict[str, float] = field(default_factory=dict)


def push_image(buildah: Buildah, local: str, repository: str, tag: str, *, trust: Trust,
               work: Path) -> str:  # fmt: skip
    """Push ``local`` (in the image cache's storage) as ``repository:tag``; its digest."""
    digest_file = work / f"{repository.rsplit('/', 1)[1]}.digest"
    buildah.run(
        local, "push", "push", *trust.cert_dir(work), "--digestfile", str(digest_file),
        local, f"docker://{repository}:{tag}",
    )  # fmt: skip
    return checked_digest(digest_file.read_text(), what=f"buildah push of {local}")


def image_sbom(buildah: Buildah, local: str, output: Path, *, work: Path) -> Path:
    """The CycloneDX JSON SBOM of ``local``'s ``/opt/venv``, by ``cyclonedx-py environment``."""
    if not CYCLONEDX.is_file():
        raise ReleaseError(f"{CYCLONEDX} is missing: make sbom-venv installs it")
    container = buildah.run(local, "from", "from", "--pull-never", local).strip()
    try:
        root = buildah.run(local, "mount", "mount", container).strip()
        python = work / f"python-{container[:12]}"
        python.write_text(_CHROOT_PYTHON.format(python=sys.executable, root=root))
        python.chmod(0o755)
        run_step(
            [CYCLONEDX, "environment", "--output-format", "JSON", "--output-file", output,
             python],
            step=f"cyclonedx-py environment of {local}",
        )  # fmt: skip
    finally:
        buildah.run(local, "rm", "rm", container)
    return output


def sign(cosign: Path, ref: str, *, key: Path, sbom: Path, env: dict[str, str]) -> None:
    """Sign ``ref`` (``repository@digest``) and attach its SBOM as a signed attestation."""
    common = ["--key", str(key), "--tlog-upload=false", "--yes"]
    run_step([cosign, "sign", *common, ref], step=f"cosign sign {ref}", env=env)
    run_step(
        [cosign, "attest", *common, "--type", "cyclonedx", "--predicate", sbom, ref],
        step=f"cosign attest {ref}", env=env,
    )  # fmt: skip


def verify(cosign: Path, ref: str, *, released: Released, env: dict[str, str],
           key: Path | None = None, attestation: str | None = None,
           ) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """``cosign verify`` of ``ref`` with the release's public key (or ``key``), or
    ``cosign verify-attestation --type <attestation>``: nothing looked up but the registry."""
    command = ["verify"] if attestation is None else ["verify-attestation", "--type", attestation]
    return subprocess.run(
        [str(cosign), *command, "--key", str(key or released.public_key),
         "--insecure-ignore-tlog", "--trusted-root", released.trusted_root, ref],
        capture_output=True, text=True, check=False, timeout=120, env=env,
    )  # fmt: skip


def publish_chart(helm_binary: Path, registry: Registry, digests: dict[str, str], *,
                  trust: Trust, work: Path) -> tuple[str, str]:  # fmt: skip
    """Package the chart with the digests in its values and push it; its version and the digest
    of its OCI manifest."""
    chart = work / "chart" / CHART.name
    shutil.copytree(CHART, chart)
    values_file = chart / "values.yaml"
    values: dict[str, Any] = yaml.safe_load(values_file.read_text())
    chart_values(values, registry, digests)
    values_file.write_text(
        "# The chart's values with the images `make release` pushed, by digest.\n"
        + yaml.safe_dump(values, sort_keys=False)
    )
    version = str(yaml.safe_load((chart / "Chart.yaml").read_text())["version"])
    packaged = work / "packages"
    helm.run(helm_binary, "package", str(chart), "--destination", str(packaged))
    archive = packaged / f"{CHART.name}-{version}.tgz"
    pushed = helm.run(helm_binary, "push", str(archive), registry.charts, *trust.helm())
    said = pushed.stdout + pushed.stderr
    digest = next((w for w in said.split() if w.startswith("sha256:")), "")
    return version, checked_digest(digest, what=f"helm push said {said!r}")


def release(registry: Registry, out: Path, *, trust: Trust, built: ProjectImages | None = None,
            log: Callable[[str], None] = lambda line: None) -> Released:  # fmt: skip
    """Everything ``make release`` does; ``out`` receives the key pair, SBOMs, overlay and
    ``release.json``. ``built``: the images to push (a test's, already running), else the
    cached build, brought up to date."""
    out.mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {}
    mark = time.monotonic()
    built = built or ensure_images(log=log)
    timings["images"] = time.monotonic() - mark
    cosign, helm_binary = cosign_binary(), helm.binary()
    chart_name = f"{registry.charts.removeprefix('oci://')}/{CHART.name}"
    done = Released(registry=registry.base, chart=f"oci://{chart_name}", chart_version="")
    with tempfile.TemporaryDirectory(prefix="release-") as scratch:
        work = Path(scratch)
        env = trust.cosign_env(work)
        for stale in ("cosign.key", "cosign.pub"):
            (out / stale).unlink(missing_ok=True)
        run_step([cosign, "generate-key-pair"], step="cosign generate-key-pair", env=env, cwd=out)
        done.public_key = str(out / "cosign.pub")
        done.trusted_root = str(out / "trusted_root.json")
        Path(done.trusted_root).write_text(json.dumps(EMPTY_TRUSTED_ROOT, indent=2) + "\n")
        cache = cache_root()
        for name in IMAGES:
            local = getattr(built, name).ref
            with cache_lock(cache):
                buildah = Buildah(cache)
                mark = time.monotonic()
                digest = push_image(buildah, local, registry.repository(name), "0.1.0",
                                    trust=trust, work=work)  # fmt: skip
                timings[f"push {name}"] = time.monotonic() - mark
                mark = time.monotonic()
                sbom = image_sbom(buildah, local, out / f"sbom-{name}.cdx.json", work=work)
                timings[f"sbom {name}"] = time.monotonic() - mark
            ref = pinned(registry.repository(name), digest)
            mark = time.monotonic()
            sign(cosign, ref, key=out / "cosign.key", sbom=sbom, env=env)
            timings[f"sign {name}"] = time.monotonic() - mark
            done.images[name], done.digests[name], done.sboms[name] = ref, digest, str(sbom)
            log(f"pushed {ref}, signed, SBOM attested")
        mark = time.monotonic()
        chart = publish_chart(helm_binary, registry, done.digests, trust=trust, work=work)
        done.chart_version, done.chart_digest = chart
        timings["chart"] = time.monotonic() - mark
    overlay = out / "overlay"
    overlay.mkdir(exist_ok=True)
    (overlay / "kustomization.yaml").write_text(
        kustomization(registry, done.digests, base=OVERLAY_BASE, at=overlay)
    )
    done.overlay = str(overlay)
    done.seconds = {k: round(v, 1) for k, v in timings.items()}
    (out / "release.json").write_text(json.dumps(asdict(done), indent=2) + "\n")
    log(f"chart {done.chart}:{done.chart_version}")
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m localkube.scenarios.release", description=__doc__
    )
    parser.add_argument("--registry", required=True, help="host[:port][/prefix]")
    parser.add_argument("--ca-file", type=Path, help="the CA of the registry's certificate")
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / ".local" / "release")
    args = parser.parse_args(argv)
    try:
        done = release(Registry.parse(args.registry), args.out, trust=Trust(args.ca_file),
                       log=lambda line: print(line, flush=True))  # fmt: skip
    except (ReleaseError, ImageBuildError, helm.HelmFailed) as error:
        print(f"make release failed: {error}", file=sys.stderr)
        return 1
    print(json.dumps(asdict(done), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
