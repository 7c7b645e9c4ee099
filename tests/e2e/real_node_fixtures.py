"""The real node for the end-to-end tests that need real containers: one per test session.

``real_cluster`` starts what ``make dev-up DEV_ARGS=--real-node`` starts (``RealCluster.start``:
the project's images, a control plane on the node address, the real node) and installs the
operator as a user does (``kubectl apply -k`` of an overlay naming the built images), once; every
real-node test shares it. When the node cannot run here the reason is given by name: a failure
under ``CI=true``, a visible skip otherwise.

A module that installs the operator its own way (a component added, Helm, a registry's images,
cert-manager's certificates) is marked ``changes_install``. It does not install the session's
install again on its way out: it says so (:meth:`InstalledCluster.put_back_later`), and the
install is put back before the next module that runs on it (:func:`session_install`). Most of
the modules that change the install run one after another at the end of the session (their
builds come last), so each starts from the one before it (a rolling update, or an uninstall
first), and the install is put back once instead of after each (about 45 s each on a busy
machine).
"""

from __future__ import annotations

import atexit
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from localkube.base.api import Api, ensure_namespace
from localkube.base.paths import PROJECT_ROOT
from localkube.images.build import TVM_EXAMPLES, ensure_extra_image
from localkube.plane.controlplane import ControlPlane
from localkube.realnode import containerd, teardown
from localkube.realnode.cluster import SYSTEM_NAMESPACE, RealCluster
from localkube.realnode.node import RealNode, node_bin_dir, preflight
from localkube.realnode.settings import CLAIM

STATE_ROOT = PROJECT_ROOT / ".local" / "real-node-tests"


@dataclass
class InstalledCluster:
    cluster: RealCluster
    api: Api
    seconds_to_rollout: float
    """From ``kubectl apply -k`` to both Deployments rolled out, in real containers."""
    changed: bool = False
    """The operator is not installed as the session installed it, and is to be put back."""

    def put_back_later(self) -> None:
        """What a ``changes_install`` module calls on its way out, having removed its own objects:
        the session's install is put back before the next module that needs it."""
        self.changed = True

    def put_back(self) -> None:
        """The session's install, put back if a module left it changed (a rolling update, or an
        install where the operator was removed)."""
        if not self.changed:
            return
        try:
            self.cluster.install_operator(self.install_dir)
        except Exception as error:
            said = self.plane.kubectl(
                "get", "pods,events", "-n", SYSTEM_NAMESPACE, "-o", "wide", check=False
            )  # fmt: skip
            error.add_note(f"the session's install did not come back:\n{said.stdout}{said.stderr}")
            raise
        self.changed = False

    @property
    def install_dir(self) -> Path:
        """Where the session's install (its kustomize overlay) is written."""
        return session_install_dir(self.cluster)

    @property
    def plane(self) -> ControlPlane:
        return self.cluster.plane

    @property
    def node(self) -> RealNode:
        return self.cluster.node


def session_install_dir(cluster: RealCluster) -> Path:
    """Where the session's install of the operator on ``cluster`` is written."""
    return cluster.plane.dir / "install"


def namespace_for(installed: InstalledCluster, name: str) -> str:
    """Namespace ``name``, made ready for pods (it may exist from an earlier test)."""
    ensure_namespace(installed.api, name)
    return name


def remove_namespace(installed: InstalledCluster, *names: str, until_gone: bool = False) -> None:
    """Namespaces ``names`` deleted together once their pods are gone (a test's own, at its
    end); with ``until_gone``, waiting for the namespaces themselves to go too.

    Their jobs go first, then their pods with a grace period of 1 s, and the namespaces only
    once no pod runs: kube-controller-manager's namespace controller, finding a pod still running,
    looks again only after the pod's whole ``terminationGracePeriodSeconds`` (30 s by default),
    however soon the pod ends. A test's end needs the pods gone, not shut down gracefully (the
    tests of shutdown delete their pods themselves).

    The namespace controller looks at a deleted namespace only 5 s after its deletion
    (``namespaceDeletionGracePeriod`` in Kubernetes' namespace controller), so a test does not
    wait for it: a later test that names the namespace again waits for it to go
    (``ensure_namespace``). ``until_gone`` is for namespaces holding objects whose finalizers a
    component removes that goes next (Kueue's, Katib's): gone while it still runs."""
    kubectl = installed.plane.kubectl
    for name in names:
        kubectl("delete", "mxjobs", "--all", "-n", name, "--ignore-not-found", "--wait=false",
                check=False)  # fmt: skip
        kubectl("delete", "pods", "--all", "-n", name, "--grace-period=1", "--ignore-not-found",
                "--wait=false", check=False)  # fmt: skip
    for name in names:
        kubectl("wait", "--for=delete", "pods", "--all", "-n", name, "--timeout=60s",
                timeout=70, check=False)  # fmt: skip
    waiting = ("--wait", "--timeout=120s") if until_gone else ("--wait=false",)
    kubectl("delete", "namespace", *names, "--ignore-not-found", *waiting, timeout=130,
            check=False)  # fmt: skip


def every_pod_of(installed: InstalledCluster, component: str) -> list[dict[str, Any]]:
    """The operator component's pods (``webhook``, ``controller``), the ones being deleted too."""
    items: list[dict[str, Any]] = installed.api.request(
        "GET",
        f"/api/v1/namespaces/{SYSTEM_NAMESPACE}/pods",
        query=[("labelSelector", f"app.kubernetes.io/component={component}")],
    )["items"]
    return items


def pods_of(installed: InstalledCluster, component: str) -> list[dict[str, Any]]:
    """The operator component's pods that are not being deleted."""
    return [
        p for p in every_pod_of(installed, component) if not p["metadata"].get("deletionTimestamp")
    ]


def _remove_stale_runs() -> None:
    """Planes and nodes a killed session left (its pid is gone)."""
    for stale in STATE_ROOT.glob("*") if STATE_ROOT.is_dir() else ():
        if stale.name.isdigit() and not Path(f"/proc/{stale.name}").exists():
            RealCluster.stop(stale)
            shutil.rmtree(stale, ignore_errors=True)


def require(problem: str | None) -> None:
    """Go on when ``problem`` is None; otherwise name it: a failure under ``CI=true``, a
    visible skip elsewhere (a missing real component never passes silently)."""
    if problem is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(problem)
    pytest.skip(problem)


def require_real_node() -> None:
    problems = preflight()
    require("the real node cannot run here: " + "; ".join(problems) if problems else None)


@pytest.fixture(scope="session")
def real_cluster() -> Iterator[InstalledCluster]:
    require_real_node()
    _remove_stale_runs()
    host_before = host_paths()
    state_dir = STATE_ROOT / str(os.getpid())
    cluster = RealCluster.start(state_dir, log=lambda line: None)
    atexit.register(cluster.down)
    try:
        seconds = cluster.install_operator(session_install_dir(cluster))
        api = Api.from_kubeconfig(cluster.plane.kubeconfig)
        yield InstalledCluster(cluster, api, seconds)
    finally:
        cluster.down()
        atexit.unregister(cluster.down)
    left = sorted(map(str, host_paths() - host_before))
    assert not left, f"the real node and its image builds left on the host: {left}"


@pytest.fixture(scope="module", autouse=True)
def session_install(request: pytest.FixtureRequest) -> None:
    """Before a real-node module that is not marked ``changes_install``: the session's install,
    put back if a module before it left it changed. Autouse, so it comes before the module's
    own fixtures."""
    if "real_cluster" not in request.fixturenames:
        return
    if request.node.get_closest_marker("changes_install") is not None:
        return
    installed: InstalledCluster = request.getfixturevalue("real_cluster")
    installed.put_back()


def host_paths() -> set[Path]:
    """The host paths the node's programs and buildah make whatever their configuration, and
    the node's claim, that exist now."""
    fixed = {CLAIM.parent, Path("/etc/cni")}
    return teardown.host_paths_present() | {path for path in fixed if path.exists()}


@pytest.fixture(scope="session")
def tvm_examples(real_cluster: InstalledCluster) -> str:
    """The tune example's image (``examples/Dockerfile.tvm``), built (cached per machine) and
    imported into the node once per session: the tuning tests run it as written."""
    image = ensure_extra_image(TVM_EXAMPLES)
    socket = real_cluster.node.containerd_paths.socket
    containerd.import_image(node_bin_dir(), socket, image.archive)
    return image.ref
