"""The committed CRD is what ``hack/gen_crd.py`` makes from the pinned API server's OpenAPI."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import yaml

from localkube.base.paths import PROJECT_ROOT
from localkube.plane.controlplane import ControlPlane


def test_committed_crd_matches_the_generator_output_for_this_api_server(
    control_plane: ControlPlane,
) -> None:
    result = subprocess.run(
        [
            sys.executable,
            str(PROJECT_ROOT / "hack" / "gen_crd.py"),
            "--check",
            f"--kubeconfig={control_plane.kubeconfig}",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def _container_schema() -> dict[str, Any]:
    crd = yaml.safe_load(
        (PROJECT_ROOT / "manifests" / "crd" / "mxjobs.kubeflow.org.yaml").read_text()
    )
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    replica = spec["properties"]["mxReplicaSpecs"]["additionalProperties"]
    template = replica["properties"]["template"]["properties"]["spec"]
    return dict(template["properties"]["containers"]["items"]["properties"])


def test_the_template_defaults_the_fields_a_pod_gets_defaulted_but_no_required_one() -> None:
    """So a stored template equals its copy in a Kueue Workload (whose CRD has these defaults)."""
    container = _container_schema()
    assert container["ports"]["items"]["properties"]["protocol"]["default"] == "TCP"
    secret_ref = container["env"]["items"]["properties"]["valueFrom"]["properties"]["secretKeyRef"]
    assert secret_ref["properties"]["name"]["default"] == ""
    assert "default" not in secret_ref["properties"]["key"]  # required: "Required value" stays
    assert "default" not in container["name"]
    assert "default" not in container["ports"]["items"]["properties"]["containerPort"]
    assert "default" not in container["command"]["items"]
