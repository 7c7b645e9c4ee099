"""A job's NetworkPolicy: its pods take connections only from pods of the same job (pure).

A distributed MXNet job listens on more ports than the one it declares: ps-lite's scheduler on
``DMLC_PS_ROOT_PORT``, and every server and worker on a port of its own that it tells the
scheduler at start-up; TVM's tracker and RPC servers alike. None of them authenticates its
peers, so on a shared cluster any pod that can reach a replica can join the job, feed it
gradients or read its parameters. With ``--job-network-policy`` the controller gives each job a
NetworkPolicy that admits, on every port, only the job's own pods (same namespace, same
``job-name`` label, made by this operator or adopted from training-operator).

Only ingress is restricted. Egress is left to the namespace's own policies: an egress rule here
would either isolate the pods' egress (breaking the downloads and storage a job needs) or allow
everything (undoing a namespace's default deny); a namespace that denies egress by default must
allow its jobs' pods to reach one another, and the controller's progress port in the
operator's namespace, where they report their progress (docs/how-to/harden.md, "Every job's
pods"). Traffic from the node itself (the kubelet's probes) is not subject to NetworkPolicy
on the implementations Kubernetes documents, so no rule is needed for it.

The policy is named after the job and owned by it (controller ownerReference), so garbage
collection removes it with the job. The I/O is :mod:`controller.integrations.netpol.policy_writes`;
a foreign policy of the job's name is never touched (controller/integrations/children/foreign.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from controller.job.ownership import owner_reference
from controller.job.view import MXJobView
from shared.constants import LABEL_JOB_NAME, LABEL_OPERATOR_NAME, WATCHED_OPERATOR_NAMES
from shared.spec import as_mapping

POLICY_API_GROUP: Final = "networking.k8s.io"
POLICY_API_VERSION: Final = "networking.k8s.io/v1"
POLICY_PLURAL: Final = "networkpolicies"


def job_pods(job: MXJobView) -> dict[str, Any]:
    """The job's pods, as a label selector: its name label, made by this operator or adopted
    from training-operator (whose pods carry its ``operator-name``). The operator name keeps
    out the pods of another kind of job of the same name (a TFJob's carry the same
    ``job-name`` label)."""
    return {
        "matchLabels": {LABEL_JOB_NAME: job.name},
        "matchExpressions": [
            {"key": LABEL_OPERATOR_NAME, "operator": "In", "values": list(WATCHED_OPERATOR_NAMES)}
        ],
    }


def build_policy(job: MXJobView, *, labels: Mapping[str, str]) -> dict[str, Any]:
    """The job's NetworkPolicy: ingress to its pods only from its pods, every port."""
    return {
        "apiVersion": POLICY_API_VERSION,
        "kind": "NetworkPolicy",
        "metadata": {
            "name": job.name,
            "namespace": job.namespace,
            "labels": dict(labels),
            "ownerReferences": [owner_reference(job)],
        },
        "spec": {
            "podSelector": job_pods(job),
            "policyTypes": ["Ingress"],
            "ingress": [{"from": [{"podSelector": job_pods(job)}]}],
        },
    }


def policy_update(existing: Mapping[str, Any], wanted: Mapping[str, Any]) -> dict[str, Any] | None:
    """``existing`` with the wanted spec, or None when it already has it (a policy edited by
    hand, or written by another version of the operator, is put back)."""
    if as_mapping(existing.get("spec")) == as_mapping(wanted.get("spec")):
        return None
    return {**existing, "spec": wanted["spec"]}
