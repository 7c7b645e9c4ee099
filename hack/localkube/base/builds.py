"""Go programs the local control plane runs beside kube-apiserver: pinned, built once per machine.

training-operator and kwok are each pinned in ``hack/versions.env`` (and a ``go.mod`` under
``hack/``) and built by a script of ``hack/`` into the per-machine cache; their manifests (CRDs,
stages, examples) are read from the module's source in Go's module cache, so what runs here is
what the pinned release ships.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from localkube.base.paths import PROJECT_ROOT

VERSIONS = PROJECT_ROOT / "hack" / "versions.env"


class BuildError(RuntimeError):
    """A pin, a build script or a module download failed; the message says which."""


def pinned_version(variable: str) -> str:
    """The version ``hack/versions.env`` pins as ``variable`` (e.g. ``KWOK_VERSION``)."""
    for line in VERSIONS.read_text().splitlines():
        if line.startswith(f"{variable}="):
            return line.split("=", 1)[1].strip()
    raise BuildError(f"hack/versions.env names no {variable}")


def run_build_script(script: Path, *args: str) -> Path:
    """Run a ``hack/build-*.sh`` script; the binary is the last line it prints.

    The first build takes minutes; later ones find the binary in the per-machine cache.
    """
    result = subprocess.run(
        [str(script), *args], check=False, stdout=subprocess.PIPE, text=True, timeout=1800
    )
    if result.returncode != 0:
        raise BuildError(f"{script} failed with exit code {result.returncode}")
    return Path(result.stdout.strip().splitlines()[-1])


def download_module(module: str, version: str, *, module_dir: Path) -> Path:
    """The downloaded (read-only) source of ``module@version``, in the Go module cache."""
    result = subprocess.run(
        ["go", "mod", "download", "-json", f"{module}@{version}"],
        cwd=module_dir,
        env={**os.environ, "GOFLAGS": "-mod=mod"},
        check=False,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if result.returncode != 0:
        raise BuildError(f"go mod download {module}@{version} failed: {result.stderr}")
    return Path(json.loads(result.stdout)["Dir"])
