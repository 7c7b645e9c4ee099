"""What admission writes into every replica's pod template so that its pods report progress, spelled
out literally for the end-to-end tests to compare stored jobs against.

The mutating webhook adds to each replica's template (shared/progress_pods.py): the projected
volume ``mxjob-status`` (a ServiceAccount token for the audience ``mxjob.kubeflow.org`` and the
``ca.crt`` of the job's ConfigMap ``<job>-status-ca``), its read-only mount in the ``mxnet``
container, and three env entries at the end of that container's env. The values are written out
here rather than taken from shared/progress.py, so a change of the contract the reporting library
(sdk/mxjob_progress) relies on fails these tests instead of moving with them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

OPERATOR_NAMESPACE: Final = "mxjob-system"
"""Where the local webhook (and the install) says the controller's progress Service is."""
VOLUME: Final = "mxjob-status"
MOUNT_PATH: Final = "/var/run/secrets/mxjob.kubeflow.org"
ENV_NAMES: Final = ("MXJOB_STATUS_URL", "MXJOB_STATUS_CA_CERT", "MXJOB_STATUS_TOKEN")
STATUS_MOUNT: Final[Mapping[str, Any]] = {"name": VOLUME, "mountPath": MOUNT_PATH, "readOnly": True}


def status_volume(job: str) -> dict[str, Any]:
    """The projected volume of every pod of MXJob ``job``."""
    return {
        "name": VOLUME,
        "projected": {
            "sources": [
                {
                    "serviceAccountToken": {
                        "audience": "mxjob.kubeflow.org",
                        "expirationSeconds": 3600,
                        "path": "token",
                    }
                },
                {
                    "configMap": {
                        "name": f"{job}-status-ca",
                        "items": [{"key": "ca.crt", "path": "ca.crt"}],
                        "optional": True,
                    }
                },
            ]
        },
    }


def status_env(
    namespace: str, job: str, *, operator_namespace: str = OPERATOR_NAMESPACE
) -> list[dict[str, str]]:
    """The three entries, in the order they are appended to the ``mxnet`` container's env."""
    host = f"mxjob-controller-progress.{operator_namespace}.svc:8444"
    path = f"/apis/kubeflow.org/v1/namespaces/{namespace}/mxjobs/{job}/status"
    return [
        {"name": "MXJOB_STATUS_URL", "value": f"https://{host}{path}"},
        {"name": "MXJOB_STATUS_CA_CERT", "value": f"{MOUNT_PATH}/ca.crt"},
        {"name": "MXJOB_STATUS_TOKEN", "value": f"{MOUNT_PATH}/token"},
    ]


def with_progress(template: Mapping[str, Any], *, namespace: str, job: str) -> dict[str, Any]:
    """``template`` (as the webhook stores it without progress reports) with what they add: the
    volume last among the pod's, the mount and the env last in the ``mxnet`` container."""
    spec = dict(template["spec"])
    containers = [dict(c) for c in spec["containers"]]
    (mxnet,) = [c for c in containers if c["name"] == "mxnet"]
    mxnet["volumeMounts"] = [*mxnet.get("volumeMounts", []), dict(STATUS_MOUNT)]
    mxnet["env"] = [*mxnet.get("env", []), *status_env(namespace, job)]
    spec["containers"] = containers
    spec["volumes"] = [*spec.get("volumes", []), status_volume(job)]
    return {**template, "spec": spec}
