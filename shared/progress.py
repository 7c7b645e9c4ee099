"""The names of progress reporting that more than one part of the operator spells (pure).

A job's pods report their progress to the controller's progress endpoint
(controller/progress/): the webhook tells them where and with what (shared/progress_pods.py
writes the env and the volume into their templates), the controller serves the endpoint under a
Service of its own and keeps the CA the pods verify it with in a ConfigMap per job
(controller/integrations/statusca/), and the serving certificate names that Service
(controller/certificates/keeper.py, certs/cli.py, the cert-manager Certificate). Each of them
reads the names here, so the URL the pods are given, the Service, the certificate's names and the
ConfigMap the pods mount cannot drift apart.

The reporting library (sdk/mxjob_progress) ships apart and imports nothing of the operator: its
copies of the env names are held equal to these by tests/sdk/test_server_limits.py.
"""

from __future__ import annotations

from typing import Final

from shared.constants import GROUP, PLURAL, V1

SERVICE: Final = "mxjob-controller-progress"
"""The Service in front of every controller replica's progress port (manifests/base/
controller.yaml); the serving certificate names it."""
PORT: Final = 8444
"""The progress endpoint's port, on the controller and on its Service."""
PORT_NAME: Final = "https-progress"
"""The controller container's port of that name, which the Service and the NetworkPolicy name."""
AUDIENCE: Final = "mxjob.kubeflow.org"
"""The audience of the ServiceAccount token a pod reports with: no credential for the API server
(whose audience is another), so a leaked one can only report progress."""

VOLUME: Final = "mxjob-status"
"""The projected volume of every replica's pod: the token and the CA."""
MOUNT_PATH: Final = "/var/run/secrets/mxjob.kubeflow.org"
"""Where the ``mxnet`` container finds them (read-only)."""
TOKEN_FILE: Final = "token"
CA_FILE: Final = "ca.crt"
"""The file of the volume, and the ConfigMap's key, holding the CA."""
TOKEN_EXPIRATION_SECONDS: Final = 3600
"""The token's lifetime; the kubelet renews the file before it expires (at 80 %)."""
CA_CONFIGMAP_SUFFIX: Final = "-status-ca"

ENV_URL: Final = "MXJOB_STATUS_URL"
ENV_CA_CERT: Final = "MXJOB_STATUS_CA_CERT"
ENV_TOKEN: Final = "MXJOB_STATUS_TOKEN"
ENV_NAMES: Final = (ENV_URL, ENV_CA_CERT, ENV_TOKEN)
"""The env the webhook gives the ``mxnet`` container, in the order it is written."""


def ca_configmap_name(job_name: str) -> str:
    """The ConfigMap holding the CA for the pods of MXJob ``job_name``, owned by the job."""
    return f"{job_name}{CA_CONFIGMAP_SUFFIX}"


def job_of_ca_configmap(name: str) -> str | None:
    """The MXJob a ConfigMap named ``name`` is the CA ConfigMap of, if its name says so."""
    job = name.removesuffix(CA_CONFIGMAP_SUFFIX)
    return job if job and job != name else None


def service_hosts(namespace: str) -> tuple[str, str]:
    """The names the pods reach the progress Service by, the one the URL uses first: what the
    serving certificate must name besides the webhook's."""
    short = f"{SERVICE}.{namespace}.svc"
    return (short, f"{short}.cluster.local")


def status_path(*, namespace: str, name: str) -> str:
    """The path a pod of MXJob ``namespace/name`` posts its reports to: the API server's own
    path of the job's status, so the two read alike."""
    return f"/apis/{GROUP}/{V1}/namespaces/{namespace}/{PLURAL}/{name}/status"


def status_url(*, operator_namespace: str, namespace: str, name: str) -> str:
    """The URL the pods of MXJob ``namespace/name`` report to, the controller's Service being
    in ``operator_namespace``."""
    host = service_hosts(operator_namespace)[0]
    return f"https://{host}:{PORT}{status_path(namespace=namespace, name=name)}"
