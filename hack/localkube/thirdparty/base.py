"""What every third-party component shares: where its build comes from, and how its programs run
as users of their own.

Where a build comes from is one of two kinds, each a small dataclass the component module names
once, so no component repeats the archive path, the message when it is missing or the build call:

- :class:`ReleaseSource` (cert-manager, Kueue, Volcano): a release source archive in the
  third-party folder (:func:`localkube.base.paths.third_party_dir`), which
  ``hack/build-third-party.sh <name>`` builds into the per-machine cache. The module proxy does
  not serve these programs, which is why the archives exist, and why a test asks
  :meth:`ReleaseSource.missing` first and skips, naming the archive, when it is not there.
- :class:`GoModulePin` (training-operator, kwok): a Go module pinned in ``hack/versions.env`` and
  a ``go.mod`` under ``hack/``, built by a script of ``hack/``; its manifests are read from the
  module's source in Go's module cache, so what runs here is what the pinned release ships.

Programs that only talk to kube-apiserver (cert-manager's, Volcano's) run as processes of this
machine, like the plane's own components, through :mod:`localkube.base.programs`: each gets a
kubeconfig with a client certificate from the plane's CA for its own user name
(:func:`user_kubeconfig`), so the RBAC bound to that user (:func:`cluster_role_binding`) is all it
may do, and its output goes to a log file the errors quote.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from localkube.base import programs
from localkube.base.builds import download_module, pinned_version, run_build_script
from localkube.base.paths import PROJECT_ROOT, third_party_dir
from localkube.plane.controlplane import ControlPlane
from localkube.plane.kubeconfig import write_kubeconfig

BUILD_THIRD_PARTY = PROJECT_ROOT / "hack" / "build-third-party.sh"


@dataclass(frozen=True)
class ReleaseSource:
    """A component built from its release source archive by ``hack/build-third-party.sh``."""

    name: str
    """The script's argument and the archive's prefix (``<name>-<version>-src.tar.gz``)."""
    title: str
    """How messages name the component (``Kueue``)."""
    version_variable: str
    """The pin in ``hack/versions.env`` (``KUEUE_VERSION``)."""
    error: type[RuntimeError] = RuntimeError
    """What :meth:`build` raises when the archive is missing: the component's own error."""
    project: str | None = None
    """The archive's prefix when it is not ``name``: a second release line of one project
    (``kueue-current`` builds ``kueue-<version>-src.tar.gz``), as the script names it."""

    def archive(self) -> Path:
        """The release source archive, named as the build script looks for it."""
        version = pinned_version(self.version_variable)
        return third_party_dir() / f"{self.project or self.name}-{version}-src.tar.gz"

    def missing(self) -> str | None:
        """Why the component cannot be built here, naming the archive; None when it can."""
        if not self.archive().is_file():
            return f"{self.title}'s release source {self.archive()} is missing (THIRD_PARTY_DIR)"
        return None

    def build(self) -> Path:
        """The cache directory the script prints (``bin/`` and the component's manifests):
        built the first time (minutes), found in the per-machine cache afterwards."""
        problem = self.missing()
        if problem:
            raise self.error(problem)
        return run_build_script(BUILD_THIRD_PARTY, self.name)


@dataclass(frozen=True)
class GoModulePin:
    """A program built from a Go module pinned in ``hack/versions.env`` and a ``go.mod`` of
    ``module_dir``, by ``build_script``."""

    module: str
    version_variable: str
    module_dir: Path
    build_script: Path

    def version(self) -> str:
        """The pinned version, as ``hack/versions.env`` names it."""
        return pinned_version(self.version_variable)

    def build(self, *args: str) -> Path:
        """The binary, built the first time (minutes), cached per machine; ``args`` go to the
        build script (e.g. training-operator's patches)."""
        return run_build_script(self.build_script, *args)

    def module_source(self) -> Path:
        """The downloaded (read-only) source of the pinned module, in the Go module cache:
        downloaded once per process, as its manifests are read many times."""
        return _downloaded(self.module, self.version(), self.module_dir)


@cache
def _downloaded(module: str, version: str, module_dir: Path) -> Path:
    return download_module(module, version, module_dir=module_dir)


def user_kubeconfig(plane: ControlPlane, *, user: str, path: Path) -> Path:
    """A kubeconfig for ``user`` (the certificate's common name) on the running ``plane``."""
    state = plane.state()
    if state is None:
        raise RuntimeError("the control plane is not running")
    ca = plane.certificate_authority()
    pair = ca.issue_client(common_name=user)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_kubeconfig(path, server=state.server, ca=ca, cert_pem=pair.cert_pem, key_pem=pair.key_pem)
    return path


def start_as_user(
    name: str, argv: Sequence[str], *, log: Path, kubeconfig: Path
) -> programs.Running:
    """Start ``argv`` (which names ``kubeconfig`` in its flags) with its output in ``log``.

    ``KUBECONFIG`` is set too: some programs' client configuration reads it, not their flag.
    """
    env = programs.with_env(KUBECONFIG=str(kubeconfig))
    return programs.start(programs.Program(name, argv, log, env=env))


def wait_answering(
    running: Sequence[programs.Running],
    urls: Sequence[str],
    *,
    what: str,
    error: type[RuntimeError],
    timeout: float,
) -> None:
    """Until every one of ``urls`` has answered 200 once (a health endpoint per program);
    ``error`` quoting the log's end as soon as one of ``running`` exits, or after ``timeout``."""
    pending = set(urls)

    def ready() -> bool:
        pending.difference_update([url for url in list(pending) if programs.answers_200(url)])
        return not pending

    programs.wait_ready(running, ready, what=what, timeout=timeout, error=error, interval=0.2)


def cluster_role_binding(*, name: str, role: str, user: str) -> dict[str, Any]:
    """Binds the ClusterRole ``role`` to the certificate user ``user``."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    }
