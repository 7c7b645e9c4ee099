"""What a control plane records: which ports each component needs back when it is restarted."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from localkube.plane.settings import SCHEDULER, ControlPlaneState


def test_each_component_names_the_ports_it_listens_on(tmp_path: Path) -> None:
    state = ControlPlaneState(
        bin_dir=str(tmp_path),
        etcd_port=1,
        etcd_peer_port=2,
        apiserver_port=3,
        controller_manager_port=4,
        scheduler_port=5,
    )
    assert state.ports_of("etcd") == (1, 2)
    assert state.ports_of("kube-apiserver") == (3,)
    assert state.ports_of("kube-controller-manager") == (4,)
    assert state.ports_of(SCHEDULER) == (5,)
    without_scheduler = dataclasses.replace(state, scheduler_port=0)
    assert without_scheduler.ports_of(SCHEDULER) == ()
