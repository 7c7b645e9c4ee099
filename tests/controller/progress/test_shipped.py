"""What both installs ship for the progress endpoint, read from their files (kustomize's
manifests/ and the Helm chart's templates, every conditional branch kept: tests/controller/
integrations/shipped_rbac.py): the controller may send what the endpoint sends, the port is named
and exposed by the Service the pods are told of, the webhook knows the namespace of that Service,
and the operator's NetworkPolicies let the jobs' pods in on that port. That the two installs
render the same objects is tests/e2e/test_helm_chart.py's to show."""

from __future__ import annotations

from typing import Any

import pytest

from shared import progress
from tests.controller.integrations.shipped_rbac import CHART, INSTALLS, documents, granted

MANIFESTS = {
    "kustomize": {
        "controller": "manifests/base/controller.yaml",
        "webhook": "manifests/base/webhook.yaml",
        "policies": "manifests/components/network-policies/policies.yaml",
    },
    "helm": {
        "controller": f"{CHART}/controller.yaml",
        "webhook": f"{CHART}/webhook.yaml",
        "policies": f"{CHART}/network-policies.yaml",
    },
}
INSTALL_NAMES = list(MANIFESTS)


def one(relative: str, kind: str, name: str) -> dict[str, Any]:
    (found,) = [
        d for d in documents(relative) if d["kind"] == kind and d["metadata"]["name"] == name
    ]
    return found


def container(relative: str, deployment: str) -> dict[str, Any]:
    spec = one(relative, "Deployment", deployment)["spec"]["template"]["spec"]
    first: dict[str, Any] = spec["containers"][0]
    return first


@pytest.mark.parametrize("install", INSTALLS, ids=lambda install: install.name)
def test_the_controller_may_patch_the_status_and_review_the_reporters_tokens(install: Any) -> None:
    grants = granted(install.files(kueue_workloads=False, job_network_policy=False))
    assert ("kubeflow.org", "mxjobs/status", "patch") in grants
    assert ("authentication.k8s.io", "tokenreviews", "create") in grants


@pytest.mark.parametrize("install", INSTALL_NAMES)
def test_the_progress_port_is_named_and_the_service_the_pods_are_told_of_targets_it(
    install: str,
) -> None:
    files = MANIFESTS[install]
    ports = {
        p["name"]: p["containerPort"]
        for p in container(files["controller"], "mxjob-controller")["ports"]
    }
    assert ports[progress.PORT_NAME] == progress.PORT
    service = one(files["controller"], "Service", progress.SERVICE)["spec"]
    (port,) = service["ports"]
    assert (port["port"], port["targetPort"]) == (progress.PORT, progress.PORT_NAME)
    if install == "kustomize":  # the chart's selector is an include, read here as nothing
        assert service["selector"]["app.kubernetes.io/component"] == "controller"


@pytest.mark.parametrize("install", INSTALL_NAMES)
def test_the_webhook_is_told_its_own_namespace_for_the_url(install: str) -> None:
    env = container(MANIFESTS[install]["webhook"], "mxjob-webhook")["env"]
    (namespace,) = [e for e in env if e["name"] == "MXJOB_WEBHOOK_OPERATOR_NAMESPACE"]
    assert namespace["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}


@pytest.mark.parametrize("install", INSTALL_NAMES)
def test_the_controller_mounts_the_pairs_ca_for_the_jobs(install: str) -> None:
    spec = one(MANIFESTS[install]["controller"], "Deployment", "mxjob-controller")["spec"]
    (volume,) = [v for v in spec["template"]["spec"]["volumes"] if v["name"] == "metrics-tls"]
    assert volume["secret"]["optional"] is True, "a Secret without ca.crt still mounts"
    assert {"key": "ca.crt", "path": "ca.crt"} in volume["secret"]["items"]


@pytest.mark.parametrize("install", INSTALL_NAMES)
def test_the_operators_policies_let_the_jobs_pods_in_on_the_progress_port_only(
    install: str,
) -> None:
    policy = one(MANIFESTS[install]["policies"], "NetworkPolicy", "mxjob-controller-progress")
    spec = policy["spec"]
    assert spec["policyTypes"] == ["Ingress"]
    (rule,) = spec["ingress"]
    assert rule["ports"] == [{"port": progress.PORT_NAME, "protocol": "TCP"}]
    (peer,) = rule["from"]
    assert peer["namespaceSelector"] == {}, "jobs run in any namespace"
    selector = peer["podSelector"]
    assert selector["matchLabels"] == {"training.kubeflow.org/operator-name": "mxjob-operator"}
    assert selector["matchExpressions"] == [
        {"key": "training.kubeflow.org/job-name", "operator": "Exists"}
    ]
