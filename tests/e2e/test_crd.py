"""The committed CRD is what ``hack/gen_crd.py`` makes from the pinned API server's OpenAPI."""

from __future__ import annotations

import subprocess
import sys

from localkube.cluster import PROJECT_ROOT, ControlPlane


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
