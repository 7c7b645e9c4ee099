"""The pinned ``helm`` for the chart tests, and the chart rendered with it.

``helm_or_require`` builds it the first time (``hack/build-helm.sh``, from the Go module proxy)
and finds it in the per-machine cache afterwards; when it cannot be had the reason is given by
name: a failure under ``CI=true``, a visible skip otherwise (``require``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from localkube.base.builds import BuildError
from localkube.plane.controlplane import ControlPlane
from localkube.thirdparty import helm
from tests.e2e.real_node_fixtures import require

Docs = list[dict[str, Any]]
RELEASE = "mxjob-operator"
NAMESPACE = "mxjob-system"


def helm_or_require() -> Path:
    try:
        return helm.binary()
    except BuildError as error:
        require(f"helm {helm.version()} cannot be built here: {error}")
        raise  # require() skips or fails: not reached


def parse(text: str) -> Docs:
    # libyaml's loader: the CRD is about 300 KB, which the pure-Python loader reads slowly.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return [doc for doc in yaml.load_all(text, Loader=loader) if doc]


def values_file(directory: Path, name: str, values: dict[str, Any]) -> Path:
    path = directory / f"{name}.yaml"
    path.write_text(yaml.safe_dump(values))
    return path


CRD = "mxjobs.kubeflow.org"


def remove_release(plane: ControlPlane, binary: Path) -> None:
    """``helm uninstall`` of the release, then the CRD and the namespace Helm keeps, removed as
    docs/how-to/upgrade-and-uninstall.md says: the cluster is left without the operator, whatever
    state it was in."""
    helm.run(
        binary, "uninstall", RELEASE, "--namespace", NAMESPACE, "--wait", "--ignore-not-found",
        kubeconfig=plane.kubeconfig, check=False,
    )  # fmt: skip
    # Helm waited for its Deployments, not for their pods, which end within their grace period
    # (the webhook's preStop pause included). kube-controller-manager's namespace controller,
    # finding one still running, looks again only after that whole period, so a test's cleanup
    # ends them at once first (a user's uninstall lets them shut down).
    plane.end_pods_at_once(NAMESPACE, selector="", timeout=60)
    for kept in (("crd", CRD), ("namespace", NAMESPACE)):
        plane.kubectl(
            "delete", *kept, "--ignore-not-found", "--wait", "--timeout=120s", timeout=130,
            check=False,
        )  # fmt: skip
