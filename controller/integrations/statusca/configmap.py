"""A job's CA ConfigMap: the CA its pods verify the controller's progress endpoint by (pure).

A pod reports its progress over HTTPS to the controller (controller/progress/), and must know
whom it talks to before it sends its token. The CA is in the controller's certificate directory,
from the Secret ``mxjob-webhook-tls`` (or the controller's self-signed certificate meanwhile:
controller/runtime/serving_tls.py); a job's pods cannot read that Secret, and no pod should. So
the controller copies the CA, which is no secret, into a ConfigMap of the job's own,
``<job>-status-ca`` with the key ``ca.crt``, that the pods mount through the volume admission
gave them (shared/progress_pods.py). It is owned by the job (controller ownerReference), so
garbage collection removes it with the job; the I/O is
:mod:`controller.integrations.statusca.ca_writes`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.job.ownership import owner_reference
from controller.job.view import MXJobView
from shared import progress
from shared.spec import as_mapping


def build_configmap(job: MXJobView, *, labels: Mapping[str, str], ca: bytes) -> dict[str, Any]:
    """The job's ConfigMap holding ``ca`` (PEM) as ``ca.crt``."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": progress.ca_configmap_name(job.name),
            "namespace": job.namespace,
            "labels": dict(labels),
            "ownerReferences": [owner_reference(job)],
        },
        "data": {progress.CA_FILE: ca.decode("ascii", errors="replace")},
    }


def configmap_update(
    existing: Mapping[str, Any], wanted: Mapping[str, Any]
) -> dict[str, Any] | None:
    """``existing`` holding the wanted CA and nothing else, or None when it already does (the CA
    renewed, or the ConfigMap edited by hand, is put back)."""
    if as_mapping(existing.get("data")) == wanted["data"] and not existing.get("binaryData"):
        return None
    kept = {key: value for key, value in existing.items() if key != "binaryData"}
    return {**kept, "data": dict(wanted["data"])}
