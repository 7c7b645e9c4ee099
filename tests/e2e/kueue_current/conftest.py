"""The package's one install of Kueue v0.19.2 and the operator's Workload route (install.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.kueue_current.install import kueue_current_installed
from tests.e2e.real_node_fixtures import InstalledCluster


@pytest.fixture(scope="package")
def kueue_current_seconds(real_cluster: InstalledCluster) -> Iterator[float]:
    """Kueue and the operator's component installed for the package's modules (``__init__.py``
    says why they share it); the seconds Kueue took to be ready."""
    with kueue_current_installed(real_cluster) as seconds:
        yield seconds
