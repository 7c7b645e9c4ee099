"""Volcano beside the local control plane: the release's configuration, RBAC and arguments."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from localkube.thirdparty import volcano

INSTALLER: list[dict[str, Any]] = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "volcano-system"}},
    {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "volcano-scheduler-configmap", "namespace": "volcano-system"},
        "data": {"volcano-scheduler.conf": 'actions: "enqueue, allocate, backfill"\n'},
    },
    *(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": role, "labels": {"from": "release"}},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
        }
        for role in ("volcano-scheduler", "volcano-controllers")
    ),
]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "config").mkdir()
    text = yaml.safe_dump_all([*INSTALLER, None])
    (tmp_path / "config" / "volcano-development.yaml").write_text(text)
    return tmp_path


def test_the_scheduler_configuration_is_the_releases(home: Path) -> None:
    objects = volcano.released_objects(home)
    assert len(objects) == 4  # the empty document is skipped
    assert volcano.scheduler_configuration(objects) == 'actions: "enqueue, allocate, backfill"\n'


def test_each_program_gets_the_releases_role_bound_to_its_own_user(home: Path) -> None:
    rbac = volcano.rbac_objects(volcano.released_objects(home))
    roles = [o for o in rbac if o["kind"] == "ClusterRole"]
    bindings = {
        o["roleRef"]["name"]: o["subjects"][0]["name"] for o in rbac if o["kind"] != "ClusterRole"
    }
    assert [r["metadata"]["name"] for r in roles] == ["volcano-scheduler", "volcano-controllers"]
    assert roles[0]["rules"] == INSTALLER[2]["rules"]
    assert bindings == {
        "volcano-scheduler": "volcano:scheduler",
        "volcano-controllers": "volcano:controllers",
    }


def test_a_missing_release_object_is_named(home: Path) -> None:
    with pytest.raises(volcano.VolcanoError, match="ConfigMap volcano-scheduler-configmap"):
        volcano.scheduler_configuration([])


def test_every_listener_is_on_loopback_and_leader_election_is_off(tmp_path: Path) -> None:
    for program in ("scheduler", "controller-manager"):
        args = volcano.program_args(
            program, config=tmp_path / "conf", healthz_port=1234, metrics_port=5678
        )
        assert "--healthz-address=127.0.0.1:1234" in args
        assert "--listen-address=127.0.0.1:5678" in args
        assert "--leader-elect=false" in args


def test_the_scheduler_reads_the_configuration_and_the_controllers_are_queue_and_podgroup(
    tmp_path: Path,
) -> None:
    scheduler = volcano.program_args(
        "scheduler", config=tmp_path / "c", healthz_port=1, metrics_port=2
    )
    assert f"--scheduler-conf={tmp_path / 'c'}" in scheduler
    manager = volcano.program_args(
        "controller-manager", config=tmp_path / "c", healthz_port=1, metrics_port=2
    )
    assert "--controllers=queue-controller,pg-controller" in manager
    assert not any(arg.startswith("--scheduler-conf") for arg in manager)
