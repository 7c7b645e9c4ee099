"""The ``v1-only`` install option (manifests/components/v1-only): v1beta1 no longer served, and
an object an older operator stored as v1beta1 still read as v1 through the conversion webhook.

On a control plane of this module's own: the session's plane serves v1beta1, which the other
end-to-end tests use.
"""

from __future__ import annotations

import base64
import json
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from localkube.base.paths import PROJECT_ROOT
from localkube.base.processes import stop_process
from localkube.plane.controlplane import ControlPlane
from localkube.plane.operator import LocalOperator, wait_established
from localkube.plane.settings import ControlPlaneSettings

SEED_JOB = PROJECT_ROOT / "examples" / "v1beta1" / "train" / "mx_job_dist_gpu.yaml"
COMPONENT = PROJECT_ROOT / "manifests" / "components" / "v1-only" / "kustomization.yaml"


@pytest.fixture(scope="module")
def v1_only_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """A plane with the CRD patched as the component patches it, its webhook served."""
    plane = ControlPlane(ControlPlaneSettings(state_dir=tmp_path_factory.mktemp("v1-only")))
    plane.up()
    operator = LocalOperator(plane)
    pid = 0
    try:
        pid, port = operator.start_webhook()
        crd = operator.crd_manifest(webhook_port=port)
        component = yaml.safe_load(COMPONENT.read_text())
        (patch,) = component["patches"]
        for op in yaml.safe_load(patch["patch"]):
            if op["op"] == "replace":
                index = int(op["path"].split("/")[3])
                crd["spec"]["versions"][index]["served"] = op["value"]
        plane.kubectl("create", "-f", "-", input_text=json.dumps(crd))
        wait_established(plane)
        yield plane
    finally:
        if pid:
            stop_process(pid)
        plane.down()


def _store_in_etcd(plane: ControlPlane, obj: dict[str, Any]) -> None:
    """Write ``obj`` to etcd as an API server of an older operator would have stored it."""
    state = plane.state()
    assert state is not None
    meta = obj["metadata"]
    key = f"/registry/kubeflow.org/mxjobs/{meta['namespace']}/{meta['name']}".encode()
    body = {
        "key": base64.b64encode(key).decode(),
        "value": base64.b64encode(json.dumps(obj).encode()).decode(),
    }
    request = urllib.request.Request(
        f"{state.etcd_url}/v3/kv/put",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200


def test_v1beta1_is_not_served_and_a_job_stored_as_v1beta1_reads_back_as_v1(
    v1_only_plane: ControlPlane, tmp_path: Path
) -> None:
    plane = v1_only_plane
    refused = plane.kubectl("apply", "-n", "default", "-f", str(SEED_JOB), check=False)
    assert refused.returncode != 0
    assert "v1beta1" in refused.stderr
    stored = yaml.safe_load(SEED_JOB.read_text())
    stored["metadata"].update(
        namespace="default",
        name="stored-v1beta1",
        uid=str(uuid.uuid4()),
        creationTimestamp="2024-01-01T00:00:00Z",
    )
    _store_in_etcd(plane, stored)
    job = json.loads(
        plane.kubectl(
            "get", "mxjobs.v1.kubeflow.org/stored-v1beta1", "-n", "default", "-o", "json"
        ).stdout
    )
    assert job["apiVersion"] == "kubeflow.org/v1"
    # Converted by the webhook: v1beta1's top-level cleanPodPolicy is v1's runPolicy field.
    assert job["spec"]["runPolicy"]["cleanPodPolicy"] == "All"
    assert set(job["spec"]["mxReplicaSpecs"]) == {"Scheduler", "Server", "Worker"}
