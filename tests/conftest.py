"""Fixtures shared by every test area.

The local control plane is started once per test session (in ``.local/test-cluster``, beside a
developer's own ``make cluster-up`` one) and always torn down, after a failure or Ctrl-C too.
Tests under ``tests/e2e/`` are marked ``e2e`` automatically, and those on the real node (every
test that uses ``real_cluster``) ``real_node`` too: ``hack/run-tests.sh`` runs them in a pytest
process of their own beside the others.
"""

from __future__ import annotations

import atexit
import os
import secrets
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pytest

from localkube.base.api import Api, ApiError, ensure_namespace
from localkube.base.paths import PROJECT_ROOT
from localkube.plane.controlplane import ControlPlane
from localkube.plane.settings import ControlPlaneSettings
from tests.helpers.late_builds import late_builds, run_position

E2E_DIR = Path(__file__).parent / "e2e"

# The controller fixtures (`start_controller`, `controller`) and the real node (`real_cluster`) for
# every end-to-end test module; each test module's time, written where MXJOB_MODULE_TIMES says
# (hack/run-tests.sh sets it); the figures real-node tests measure, written where MXJOB_FIGURES
# says (make bench-recovery sets it).
pytest_plugins = [
    "tests.e2e.controller_fixtures",
    "tests.e2e.real_node_fixtures",
    "tests.helpers.figures",
    "tests.helpers.module_times",
]


def pytest_configure(config: pytest.Config) -> None:
    """Give this run a temp root of its own.

    pytest's default ``/tmp/pytest-of-<user>/pytest-<n>`` keeps only the three newest roots, so a
    second pytest process started meanwhile can delete the directories (etcd data, certificates)
    of a run still going. A root per process is removed only once that process is gone.
    """
    if config.option.basetemp:
        return
    parent = Path(tempfile.gettempdir()) / "mxjob-operator-pytest"
    parent.mkdir(exist_ok=True)
    for stale in parent.iterdir():
        if stale.name.isdigit() and not Path(f"/proc/{stale.name}").exists():
            shutil.rmtree(stale, ignore_errors=True)
    config.option.basetemp = str(parent / str(os.getpid()))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if E2E_DIR in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.e2e)
        if "real_cluster" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.real_node)
    # The modules that need a component make test builds in the background go last, in the
    # order of their builds (tests/helpers/late_builds.py): by then their builds have ended, or
    # are waited for (hack/run-tests.sh). The sort is stable: the others keep their order.
    order = late_builds()
    items.sort(key=lambda item: run_position(item, order))


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    """A real etcd + kube-apiserver + kube-controller-manager for the whole session."""
    # One control plane per pytest process, so concurrent runs in one checkout never share (or
    # stop) each other's; planes left by a killed run are stopped and removed here.
    root = PROJECT_ROOT / ".local" / "test-clusters"
    for stale in root.glob("*") if root.is_dir() else ():
        if stale.name.isdigit() and not Path(f"/proc/{stale.name}").exists():
            ControlPlane(ControlPlaneSettings(state_dir=stale)).down()
            shutil.rmtree(stale, ignore_errors=True)
    plane = ControlPlane(ControlPlaneSettings(state_dir=root / str(os.getpid())))
    # SIGTERM (e.g. a CI timeout) becomes KeyboardInterrupt so pytest runs the teardown below;
    # atexit covers an interpreter exit that skips fixture finalizers.
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    atexit.register(plane.down)
    try:
        plane.up()
        yield plane
    finally:
        plane.down()  # the state dir stays for its logs until the next run removes it
        atexit.unregister(plane.down)
        signal.signal(signal.SIGTERM, previous)


@pytest.fixture(scope="session")
def api(control_plane: ControlPlane) -> Api:
    """A JSON client authenticated as the control plane's admin (system:masters)."""
    return Api.from_kubeconfig(control_plane.kubeconfig)


@pytest.fixture
def namespace(api: Api) -> Iterator[str]:
    """A fresh namespace per test, ready for pods (its default ServiceAccount exists)."""
    name = f"t-{secrets.token_hex(4)}"
    ensure_namespace(api, name)
    yield name
    try:
        api.request("DELETE", f"/api/v1/namespaces/{name}")
    except ApiError as error:
        if error.status != 404:
            raise
