"""Served versions: v1 alone by default (as training-operator served MXJob), v1beta1 with the
install option ``manifests/components/v1beta1``, and the upgrade from an install that served it.

On a control plane of this module's own: the session's plane serves v1beta1 (the conversion
tests use it). The CRD and configurations come from ``LocalOperator``, which applies the
components' own patches (``localkube.plane.install_choices``).
"""

from __future__ import annotations

import base64
import json
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from localkube.base.api import Api, ApiError
from localkube.base.paths import PROJECT_ROOT
from localkube.base.processes import stop_process
from localkube.plane.controlplane import ControlPlane
from localkube.plane.install_choices import InstallChoices
from localkube.plane.operator import LocalOperator, wait_established
from localkube.plane.settings import ControlPlaneSettings
from tests.helpers.waiting import wait_for

SEED_JOB = PROJECT_ROOT / "examples" / "v1beta1" / "train" / "mx_job_dist_gpu.yaml"
V1_JOB = PROJECT_ROOT / "examples" / "v1" / "train" / "mx_job_dist_gpu.yaml"
GROUP = "/apis/kubeflow.org"
NOT_SERVED = 'no matches for kind "MXJob" in version "kubeflow.org/v1beta1"'
"""What kubectl answers for a v1beta1 manifest when the version is not served."""


@dataclass(frozen=True)
class Plane:
    plane: ControlPlane
    api: Api
    port: int
    """The webhook's port: the CRD's conversion webhook and the admission webhooks call it."""


@pytest.fixture(scope="module")
def versions_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Plane]:
    """A plane with the default install: the CRD and both admission webhooks, no controller."""
    plane = ControlPlane(ControlPlaneSettings(state_dir=tmp_path_factory.mktemp("versions")))
    plane.up()
    operator = LocalOperator(plane)
    pid = 0
    try:
        pid, port = operator.start_webhook()
        operator.install_crd(webhook_port=port)
        operator.register_webhooks(webhook_port=port)
        yield Plane(plane, Api.from_kubeconfig(plane.kubeconfig), port)
    finally:
        if pid:
            stop_process(pid)
        plane.down()


def _install(plane: Plane, choices: InstallChoices) -> None:
    """The CRD of ``choices`` applied over the one installed, as an upgrade applies it."""
    crd = LocalOperator(plane.plane, choices=choices).crd_manifest(webhook_port=plane.port)
    plane.plane.kubectl(
        "apply", "--server-side", "--force-conflicts", "-f", "-", input_text=json.dumps(crd)
    )
    wait_established(plane.plane)


def _status(api: Api, path: str) -> int:
    try:
        api.request("GET", path)
    except ApiError as error:
        return error.status
    return 200


def _await_served(plane: Plane, namespace: str, *, v1beta1: bool) -> None:
    """Until the API server answers v1beta1 requests as the CRD now says (it is asynchronous)."""
    path = f"{GROUP}/v1beta1/namespaces/{namespace}/mxjobs"
    wait_for(f"v1beta1 served: {v1beta1}", lambda: _status(plane.api, path),
             lambda status: status == (200 if v1beta1 else 404), timeout=30)  # fmt: skip


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


def test_the_default_install_serves_v1_alone_and_names_the_unserved_version(
    versions_plane: Plane,
) -> None:
    plane = versions_plane
    _await_served(plane, "default", v1beta1=False)
    refused = plane.plane.kubectl("apply", "-n", "default", "-f", str(SEED_JOB), check=False)
    assert refused.returncode != 0
    assert NOT_SERVED in refused.stderr
    applied = plane.plane.kubectl("apply", "-n", "default", "--dry-run=server", "-f", str(V1_JOB))
    assert "created (server dry run)" in applied.stdout
    crd = plane.api.request("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                            "mxjobs.kubeflow.org")  # fmt: skip
    served = {v["name"]: v["served"] for v in crd["spec"]["versions"]}
    assert served == {"v1": True, "v1beta1": False}


def test_a_job_an_older_operator_stored_as_v1beta1_reads_back_as_v1(
    versions_plane: Plane,
) -> None:
    stored = yaml.safe_load(SEED_JOB.read_text())
    stored["metadata"].update(
        namespace="default",
        name="stored-v1beta1",
        uid=str(uuid.uuid4()),
        creationTimestamp="2024-01-01T00:00:00Z",
    )
    _store_in_etcd(versions_plane.plane, stored)
    job = versions_plane.api.request("GET", f"{GROUP}/v1/namespaces/default/mxjobs/stored-v1beta1")
    assert job["apiVersion"] == "kubeflow.org/v1"
    # Converted by the webhook: v1beta1's top-level cleanPodPolicy is v1's runPolicy field.
    assert job["spec"]["runPolicy"]["cleanPodPolicy"] == "All"
    assert set(job["spec"]["mxReplicaSpecs"]) == {"Scheduler", "Server", "Worker"}


def test_upgrading_from_an_install_that_served_v1beta1_keeps_every_job_as_it_was(
    versions_plane: Plane, tmp_path: Path
) -> None:
    """Jobs written through either version under the v1beta1 option are stored as v1; after the
    default CRD is applied over it they read back unchanged through v1, nothing needs
    migrating, and a v1beta1 client is told the version is not served."""
    plane, namespace = versions_plane, f"upgrade-{uuid.uuid4().hex[:6]}"
    plane.api.request("POST", "/api/v1/namespaces", body={"metadata": {"name": namespace}})
    _install(plane, InstallChoices(v1beta1=True))
    _await_served(plane, namespace, v1beta1=True)
    plane.plane.kubectl("apply", "-n", namespace, "-f", str(SEED_JOB))
    v1_job = yaml.safe_load(V1_JOB.read_text())
    v1_job["metadata"]["name"] = "written-as-v1"
    plane.plane.kubectl("apply", "-n", namespace, "-f", "-", input_text=json.dumps(v1_job))
    jobs = plane.api.request("GET", f"{GROUP}/v1/namespaces/{namespace}/mxjobs")["items"]
    before = {job["metadata"]["name"]: job for job in jobs}
    assert len(before) == 2

    _install(plane, InstallChoices())
    _await_served(plane, namespace, v1beta1=False)
    crd = plane.api.request("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                            "mxjobs.kubeflow.org")  # fmt: skip
    assert crd["status"]["storedVersions"] == ["v1"]
    for name, job in before.items():
        after = plane.api.request("GET", f"{GROUP}/v1/namespaces/{namespace}/mxjobs/{name}")
        assert after["spec"] == job["spec"]
        assert after["metadata"]["resourceVersion"] == job["metadata"]["resourceVersion"]
        assert _status(plane.api, f"{GROUP}/v1beta1/namespaces/{namespace}/mxjobs/{name}") == 404
    # A kubectl that still has the old discovery cached posts, and the API server says 404; with
    # a fresh discovery (a new cache, or once it expires) kubectl names the version itself.
    cached = plane.plane.kubectl("apply", "-n", namespace, "-f", str(SEED_JOB), check=False)
    assert "the server could not find the requested resource" in cached.stderr
    fresh = plane.plane.kubectl("apply", "-n", namespace, "-f", str(SEED_JOB),
                                f"--cache-dir={tmp_path}", check=False)  # fmt: skip
    assert NOT_SERVED in fresh.stderr
