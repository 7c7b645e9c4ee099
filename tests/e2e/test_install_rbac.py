"""The RBAC of ``manifests/`` is enough for the controller, and nothing more.

The service accounts, roles and bindings of the rendered base are applied to the session's control
plane. Each process then acts as its service account: a client certificate from the control
plane's CA with the user and groups the API server gives that account's tokens
(``system:serviceaccount:<ns>:<name>``; ``system:serviceaccounts``,
``system:serviceaccounts:<ns>``), so RBAC sees exactly the identity a pod of the Deployment has.
The controller runs as in the cluster (all namespaces, leader election on its Lease) and takes a
job through its CA ConfigMap, a progress report from one of its pods (a TokenReview and a patch of
the job's status), a restart to Succeeded and its TTL deletion, which uses every rule it is given.
"""

from __future__ import annotations

import base64
import http.client
import json
import socket
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from localkube.base.api import Api, ApiError
from localkube.base.paths import PROJECT_ROOT
from localkube.base.ports import free_port
from localkube.base.processes import stop_process
from localkube.kubelet.core import TestKubelet
from localkube.plane.controlplane import ControlPlane
from localkube.plane.operator import RunningOperator
from shared import progress
from shared.constants import LABEL_JOB_NAME
from tests.e2e.controller_fixtures import (
    create_job,
    event_reasons,
    get_job,
    lease_holder,
    mxjob,
    names,
    status,
    wait_pods_running,
    wait_state,
)
from tests.helpers import mxjobs
from tests.helpers.waiting import wait_for

SYSTEM = "mxjob-system"
RBAC_KINDS = (
    "Namespace",
    "ServiceAccount",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
)
Identities = dict[str, Path]


def _kubeconfig(plane: ControlPlane, path: Path, *, service_account: str) -> Path:
    """A kubeconfig authenticating as ``system:serviceaccount:mxjob-system:<service_account>``."""
    return _user_kubeconfig(
        plane,
        path,
        user=f"system:serviceaccount:{SYSTEM}:{service_account}",
        groups=("system:serviceaccounts", f"system:serviceaccounts:{SYSTEM}"),
    )


def _user_kubeconfig(
    plane: ControlPlane, path: Path, *, user: str, groups: tuple[str, ...] = ()
) -> Path:
    """A kubeconfig authenticating as ``user`` in ``groups`` (a client certificate)."""
    service_account = user.rsplit(":", 1)[-1]
    pair = plane.certificate_authority().issue_client(
        common_name=user, organizations=groups, valid_days=1
    )
    state = plane.state()
    assert state is not None

    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode()

    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "local",
                "cluster": {
                    "server": state.server,
                    "certificate-authority-data": b64((plane.pki / "ca.crt").read_bytes()),
                },
            }
        ],
        "users": [
            {
                "name": service_account,
                "user": {
                    "client-certificate-data": b64(pair.cert_pem),
                    "client-key-data": b64(pair.key_pem),
                },
            }
        ],
        "contexts": [{"name": "local", "context": {"cluster": "local", "user": service_account}}],
        "current-context": "local",
    }
    path.write_text(json.dumps(config))
    path.chmod(0o600)
    return path


@pytest.fixture(scope="module")
def identities(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Identities:
    """The base's accounts and RBAC applied; a kubeconfig per account."""
    out = control_plane.kubectl("kustomize", str(PROJECT_ROOT / "manifests" / "base")).stdout
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the 1.7 MB CRD: libyaml is fast
    objects = [d for d in yaml.load_all(out, Loader=loader) if d and d["kind"] in RBAC_KINDS]
    control_plane.kubectl(
        "apply",
        "--server-side",
        "-f",
        "-",
        input_text=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}),
    )
    directory = tmp_path_factory.mktemp("identities")
    return {
        account: _kubeconfig(control_plane, directory / account, service_account=account)
        for account in ("mxjob-controller", "mxjob-webhook")
    }


def _allowed(api: Api, *, verb: str, resource: str, group: str = "", **extra: str) -> bool:
    review = api.request(
        "POST",
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        body={
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {
                "resourceAttributes": {"verb": verb, "resource": resource, "group": group, **extra}
            },
        },
    )
    return bool(review["status"]["allowed"])


def _pod_token(api: Api, pod: dict[str, Any]) -> str:
    """What the kubelet projects into ``pod`` (shared/progress_pods.py): a token of its
    ServiceAccount bound to the pod, for the progress endpoint's audience."""
    meta = pod["metadata"]
    account = pod["spec"].get("serviceAccountName") or "default"
    bound = {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta["uid"]}
    answer = api.request(
        "POST",
        f"/api/v1/namespaces/{meta['namespace']}/serviceaccounts/{account}/token",
        body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
              "spec": {"audiences": [progress.AUDIENCE], "expirationSeconds": 600,
                       "boundObjectRef": bound}},
    )  # fmt: skip
    return str(answer["status"]["token"])


def _report_progress(api: Api, pod: dict[str, Any], *, port: int, ca: str, percent: int) -> int:
    """One report of ``pod``'s, as its reporter sends it: to the controller's progress port on
    loopback, verified by the job's CA for the progress Service's name; the answer's code."""
    namespace, job = pod["metadata"]["namespace"], pod["metadata"]["labels"][LABEL_JOB_NAME]
    host = progress.service_hosts(SYSTEM)[0]
    context = ssl.create_default_context(cadata=ca)
    connection = http.client.HTTPSConnection(host, port, timeout=15)
    connection.sock = context.wrap_socket(
        socket.create_connection(("127.0.0.1", port), timeout=15), server_hostname=host
    )
    try:
        connection.request(
            "POST",
            progress.status_path(namespace=namespace, name=job),
            body=json.dumps({"trainerStatus": {"progressPercentage": percent}}),
            headers={"Content-Type": "application/json",
                     "Authorization": f"Bearer {_pod_token(api, pod)}"},
        )  # fmt: skip
        response = connection.getresponse()
        response.read()
        return int(response.status)
    finally:
        connection.close()


def _assert_job_ca_configmap(api: Api, job: dict[str, Any]) -> str:
    """The job's ``<job>-status-ca``, which the controller made before its pods: owned by the
    job, ``ca.crt`` alone; that CA."""
    meta = job["metadata"]
    name = progress.ca_configmap_name(meta["name"])
    configmap = api.request("GET", f"/api/v1/namespaces/{meta['namespace']}/configmaps/{name}")
    (owner,) = configmap["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "MXJob", meta["name"], meta["uid"], True
    )  # fmt: skip
    assert list(configmap["data"]) == [progress.CA_FILE]
    assert "binaryData" not in configmap
    ca = str(configmap["data"][progress.CA_FILE])
    assert ca.startswith("-----BEGIN CERTIFICATE-----"), ca
    return ca


def test_controller_takes_a_job_to_succeeded_and_deletes_it_under_its_service_account(
    api: Api,
    namespace: str,
    local_operator: RunningOperator,
    identities: Identities,
    kubelet: TestKubelet,
) -> None:
    log_name = f"controller-rbac-{namespace}.log"
    progress_port = free_port()
    process, _, _ = local_operator.local.start_controller(
        f"--kubeconfig={identities['mxjob-controller']}",
        "--leader-elect",
        f"--lease-namespace={SYSTEM}",
        "--lease-name=mxjob-controller",
        f"--identity=rbac-{namespace}",
        "--workers=2",
        f"--progress-bind-address=127.0.0.1:{progress_port}",
        log_name=log_name,
    )
    try:
        wait_for(
            "the controller leads",
            lambda: lease_holder(api, SYSTEM),
            lambda holder: holder == f"rbac-{namespace}",
            timeout=30,
        )
        job = mxjob("rbac", workers=2, servers=1)
        # completionTime has second resolution, so a TTL of 1 s may delete the job within a
        # fraction of a second of finishing (as for a batch Job): 3 s leaves time to see it.
        job["spec"]["runPolicy"] = {"ttlSecondsAfterFinished": 3}
        created = create_job(api, namespace, job)
        all_pods = names("rbac", "scheduler-0", "server-0", "worker-0", "worker-1")
        running = wait_pods_running(api, namespace, "rbac", all_pods)
        ca = _assert_job_ca_configmap(api, created)
        # The endpoint asks the API server whose token it is (TokenReview), then patches the
        # job's status.trainerStatus.
        reporter = running["rbac-worker-1"]
        assert _report_progress(api, reporter, port=progress_port, ca=ca, percent=42) == 202
        wait_for(
            "the report in the status",
            lambda: status(api, namespace, "rbac").get("trainerStatus", {}),
            lambda trainer: trainer.get("progressPercentage") == 42,
            timeout=15,
        )
        old_uid = running["rbac-worker-0"]["metadata"]["uid"]
        kubelet.terminate(namespace, "rbac-worker-0", exit_code=137)  # retryable: recreated
        recreated = wait_pods_running(api, namespace, "rbac", all_pods)
        assert recreated["rbac-worker-0"]["metadata"]["uid"] != old_uid
        wait_for(
            "restartCount 1 in the status",
            lambda: status(api, namespace, "rbac").get("restartCount"),
            lambda count: count == 1,
            timeout=30,
        )
        kubelet.terminate(namespace, "rbac-scheduler-0", exit_code=0)
        wait_state(api, namespace, "rbac", "Succeeded")
        # Events are written in the background, after the status: wait for them too.
        wait_for(
            "the job's events",
            lambda: event_reasons(api, namespace, "rbac"),
            lambda reasons: {"SuccessfulCreatePod", "MXJobSucceeded"} <= reasons,
            timeout=30,
        )
        wait_for(
            "TTL deletion",
            lambda: get_job(api, namespace, "rbac"),
            lambda job: job is None,
            timeout=30,
        )
    finally:
        stop_process(process.pid)
    log = (local_operator.local.logs / log_name).read_text()
    assert "forbidden" not in log.lower()
    assert " 403" not in log


def test_requests_outside_the_controllers_rules_are_forbidden(
    identities: Identities, namespace: str
) -> None:
    controller = Api.from_kubeconfig(identities["mxjob-controller"])
    with pytest.raises(ApiError) as denied:
        controller.request("GET", f"/api/v1/namespaces/{namespace}/secrets")
    assert denied.value.status == 403
    assert "system:serviceaccount:mxjob-system:mxjob-controller" in str(denied.value)
    allowed = [
        ("list", "pods", ""),
        ("create", "pods", ""),
        ("delete", "services", ""),
        ("watch", "mxjobs", "kubeflow.org"),
        ("update", "mxjobs/status", "kubeflow.org"),
        # Progress reports: the endpoint's merge patch of status.trainerStatus, the TokenReview
        # of the token a report comes with, and each job's <job>-status-ca ConfigMap.
        ("patch", "mxjobs/status", "kubeflow.org"),
        ("create", "tokenreviews", "authentication.k8s.io"),
        ("get", "configmaps", ""),
        ("list", "configmaps", ""),
        ("watch", "configmaps", ""),
        ("create", "configmaps", ""),
        ("update", "configmaps", ""),
        ("patch", "events", ""),
        ("patch", "pods", ""),
        ("get", "mxjobs", "kubeflow.org"),
        ("create", "podgroups", "scheduling.k8s.io"),
        ("delete", "workloads", "scheduling.k8s.io"),
        ("watch", "podgroups", "scheduling.k8s.io"),
        ("update", "podgroups", "scheduling.volcano.sh"),
        ("list", "podgroups", "scheduling.volcano.sh"),
        ("watch", "podgroups", "scheduling.x-k8s.io"),
        ("get", "priorityclasses", "scheduling.k8s.io"),
        ("update", "poddisruptionbudgets", "policy"),
        ("list", "poddisruptionbudgets", "policy"),
        ("watch", "poddisruptionbudgets", "policy"),
    ]
    forbidden = [
        ("list", "secrets", ""),
        # A foreign ConfigMap of a job's CA ConfigMap's name is never deleted nor overwritten.
        ("delete", "configmaps", ""),
        ("deletecollection", "configmaps", ""),
        ("patch", "configmaps", ""),
        ("patch", "mxjobs", "kubeflow.org"),
        ("patch", "services", ""),
        ("update", "pods", ""),
        ("update", "pods/status", ""),
        ("create", "pods/exec", ""),
        ("update", "services", ""),
        ("create", "mxjobs", "kubeflow.org"),
        ("update", "mxjobs", "kubeflow.org"),
        ("list", "nodes", ""),
        ("create", "customresourcedefinitions", "apiextensions.k8s.io"),
        ("create", "mutatingwebhookconfigurations", "admissionregistration.k8s.io"),
        ("create", "rolebindings", "rbac.authorization.k8s.io"),
        ("update", "podgroups", "scheduling.k8s.io"),
        # A foreign object of a job's child's name is never deleted (controller/integrations/
        # children/foreign.py): only the native gang's own objects are replaced.
        ("delete", "podgroups", "scheduling.volcano.sh"),
        ("delete", "podgroups", "scheduling.x-k8s.io"),
        ("create", "priorityclasses", "scheduling.k8s.io"),
        ("delete", "poddisruptionbudgets", "policy"),
        ("patch", "poddisruptionbudgets", "policy"),
    ]
    for verb, resource, group in allowed:
        assert _allowed(controller, verb=verb, resource=resource, group=group, namespace=namespace)
    for verb, resource, group in forbidden:
        assert not _allowed(
            controller, verb=verb, resource=resource, group=group, namespace=namespace
        ), (verb, resource)


def test_controller_may_only_take_its_own_lease_in_its_own_namespace(
    identities: Identities, namespace: str
) -> None:
    controller = Api.from_kubeconfig(identities["mxjob-controller"])
    leases = {"resource": "leases", "group": "coordination.k8s.io"}
    assert _allowed(controller, verb="update", namespace=SYSTEM, name="mxjob-controller", **leases)
    assert not _allowed(controller, verb="update", namespace=SYSTEM, name="other", **leases)
    assert not _allowed(
        controller, verb="delete", namespace=SYSTEM, name="mxjob-controller", **leases
    )
    assert not _allowed(controller, verb="create", namespace=namespace, **leases)


def test_the_webhooks_service_account_can_only_review_the_scrapers_of_its_metrics(
    identities: Identities, namespace: str
) -> None:
    webhook = Api.from_kubeconfig(identities["mxjob-webhook"])
    for path in (
        f"/apis/kubeflow.org/v1/namespaces/{namespace}/mxjobs",
        f"/api/v1/namespaces/{namespace}/pods",
        f"/api/v1/namespaces/{SYSTEM}/secrets",
    ):
        with pytest.raises(ApiError) as denied:
            webhook.request("GET", path)
        assert denied.value.status == 403
    review: dict[str, Any] = webhook.request(
        "POST",
        "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
        body={
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectRulesReview",
            "spec": {"namespace": SYSTEM},
        },
    )
    # What every authenticated user may do (system:basic-user: ask about its own access), and the
    # reviews of a scraper of /metrics (ClusterRole mxjob-metrics-auth), are all.
    rules = review["status"]["resourceRules"]
    groups = {g for rule in rules for g in rule.get("apiGroups", [])}
    assert groups <= {"authorization.k8s.io", "authentication.k8s.io"}
    granted = {(r, v) for rule in rules for r in rule["resources"] for v in rule["verbs"]}
    assert {("tokenreviews", "create"), ("subjectaccessreviews", "create")} <= granted


@pytest.mark.parametrize("account", ["mxjob-controller", "mxjob-webhook"])
def test_neither_service_account_can_read_secrets_in_any_namespace(
    identities: Identities, namespace: str, account: str
) -> None:
    """Secrets hold the webhook's serving key and every tenant's credentials; the operator needs
    none of them (pods reference Secrets by name, which needs no read), so a stolen token of
    either process must not be able to read one, in its own namespace, a user's, or cluster-wide.
    """
    identity = Api.from_kubeconfig(identities[account])
    for verb in ("get", "list", "watch"):
        for scope in (SYSTEM, namespace, "kube-system", ""):  # "" asks cluster-wide
            assert not _allowed(identity, verb=verb, resource="secrets", namespace=scope), (
                account,
                verb,
                scope or "all namespaces",
            )
    with pytest.raises(ApiError) as denied:
        identity.request("GET", "/api/v1/secrets")
    assert denied.value.status == 403


def kubeflow_role(role: str, *, inside: str | None) -> dict[str, Any]:
    """Kubeflow's ClusterRole ``kubeflow-<role>``: empty, made of what aggregates into it, and
    itself aggregated into ``kubeflow-<inside>``."""
    prefix = "rbac.authorization.kubeflow.org/aggregate-to-kubeflow-"
    selector = {"matchLabels": {f"{prefix}{role}": "true"}}
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {
            "name": f"kubeflow-{role}",
            "labels": {f"{prefix}{inside}": "true"} if inside else {},
        },
        "aggregationRule": {"clusterRoleSelectors": [selector]},
        "rules": [],
    }


KUBEFLOW_ROLES = [
    kubeflow_role("admin", inside=None),
    kubeflow_role("edit", inside="admin"),
    kubeflow_role("view", inside="edit"),
]
"""Kubeflow's own roles (its ``common/kubeflow-roles``): empty, each made of what aggregates into
it, view inside edit inside admin."""


def test_a_kubeflow_profile_contributor_manages_mxjobs_and_reads_logs_and_nothing_more(
    control_plane: ControlPlane, local_operator: RunningOperator, namespace: str, tmp_path: Path
) -> None:
    """The ``kubeflow`` component: a user bound to ``kubeflow-edit`` in a profile namespace, as
    Kubeflow's profile controller binds a contributor."""
    component = PROJECT_ROOT / "manifests" / "components" / "kubeflow"
    listed_files = yaml.safe_load((component / "kustomization.yaml").read_text())["resources"]
    roles = [
        d
        for name in listed_files
        for d in yaml.safe_load_all((component / name).read_text())
        if d and d["kind"] == "ClusterRole"
    ]
    assert {r["metadata"]["name"] for r in roles} == {
        "mxjob-operator-kubeflow-edit", "mxjob-operator-kubeflow-view",
    }  # fmt: skip
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "user-example-com-clusterrole-edit", "namespace": namespace},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "kubeflow-edit"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                      "name": "user@example.com"}],
    }  # fmt: skip
    objects = {"apiVersion": "v1", "kind": "List", "items": [*KUBEFLOW_ROLES, *roles, binding]}
    control_plane.kubectl("apply", "--server-side", "-f", "-", input_text=json.dumps(objects))
    user = Api.from_kubeconfig(
        _user_kubeconfig(control_plane, tmp_path / "user", user="user@example.com")
    )

    def allowed(verb: str, resource: str, group: str = "", **extra: str) -> bool:
        return _allowed(user, verb=verb, resource=resource, group=group, **extra)

    # The aggregation controller fills kubeflow-edit a moment after the roles exist.
    wait_for("kubeflow-edit to include the MXJob roles",
             lambda: allowed("create", "mxjobs", "kubeflow.org", namespace=namespace), bool,
             timeout=30)  # fmt: skip
    for verb in ("create", "get", "list", "watch", "update", "patch", "delete"):
        assert allowed(verb, "mxjobs", "kubeflow.org", namespace=namespace), verb
    assert allowed("get", "pods", subresource="log", namespace=namespace)
    assert allowed("list", "pods", namespace=namespace)
    # For real, through the webhooks: create, list, delete.
    jobs = f"/apis/kubeflow.org/v1/namespaces/{namespace}/mxjobs"
    job = mxjobs.mxjob("profile-job", mode=None, replicas={"Worker": None}, image="busybox",
                       run_policy={"suspend": True})  # fmt: skip
    user.request("POST", jobs, body=job)
    assert [j["metadata"]["name"] for j in user.request("GET", jobs)["items"]] == ["profile-job"]
    user.request("DELETE", f"{jobs}/profile-job")
    # Nothing more: no pods of their own, no Secrets, no other namespace, no cluster-wide list,
    # no status writes, no RBAC.
    denied = [
        ("create", "pods", "", namespace),
        ("delete", "pods", "", namespace),
        ("get", "secrets", "", namespace),
        ("create", "mxjobs", "kubeflow.org", "default"),
        ("list", "mxjobs", "kubeflow.org", ""),
        ("update", "mxjobs/status", "kubeflow.org", namespace),
        ("create", "rolebindings", "rbac.authorization.k8s.io", namespace),
    ]
    for verb, resource, group, scope in denied:
        name, _, sub = resource.partition("/")
        extra = {"subresource": sub} if sub else {}
        assert not allowed(verb, name, group, namespace=scope, **extra), (verb, resource, scope)
    control_plane.kubectl(
        "delete", "clusterrole", *(r["metadata"]["name"] for r in [*KUBEFLOW_ROLES, *roles])
    )


IN_CLUSTER_RBAC = PROJECT_ROOT / "manifests" / "overlays" / "in-cluster" / "rbac.yaml"


def test_in_cluster_certificates_add_only_their_secrets_and_three_objects_by_name(
    identities: Identities, control_plane: ControlPlane, namespace: str
) -> None:
    """What ``--manage-webhook-certificates`` adds (the in-cluster overlay): create Secrets in
    the operator's namespace, read and update its two Secrets, patch three objects, all by name;
    and no other account of the install may read the one with the CA's key. It
    works on the real node (tests/e2e/test_real_node_certificates.py); here, that it is no more.
    """
    control_plane.kubectl("apply", "--server-side", "-f", str(IN_CLUSTER_RBAC))
    try:
        identity = Api.from_kubeconfig(identities["mxjob-controller"])
        admission = {"group": "admissionregistration.k8s.io"}
        crds = {"group": "apiextensions.k8s.io", "resource": "customresourcedefinitions"}

        def allowed(verb: str, resource: str = "secrets", **extra: str) -> bool:
            return _allowed(identity, verb=verb, resource=resource, **extra)

        assert wait_for(
            "the in-cluster rules in effect",
            lambda: allowed("update", namespace=SYSTEM, name="mxjob-webhook-tls"),
            bool, timeout=30,
        )  # fmt: skip
        assert allowed("get", namespace=SYSTEM, name="mxjob-webhook-tls")
        assert allowed("get", namespace=SYSTEM, name="mxjob-webhook-ca")
        assert allowed("update", namespace=SYSTEM, name="mxjob-webhook-ca")
        webhook = Api.from_kubeconfig(identities["mxjob-webhook"])
        for name in ("mxjob-webhook-ca", "mxjob-webhook-tls"):
            assert not _allowed(webhook, verb="get", resource="secrets", namespace=SYSTEM,
                                name=name)  # fmt: skip
        assert allowed("create", namespace=SYSTEM)
        assert allowed("get", "deployments", group="apps", namespace=SYSTEM,
                       name="mxjob-controller")  # fmt: skip
        for plural, name in (
            ("mutatingwebhookconfigurations", "zz-mxjob-operator-mutating"),
            ("validatingwebhookconfigurations", "mxjob-operator-validating"),
        ):
            assert allowed("patch", plural, name=name, **admission)
            assert not allowed("patch", plural, name="someone-elses", **admission)
        assert allowed("patch", name="mxjobs.kubeflow.org", **crds)
        assert not allowed("patch", name="tfjobs.kubeflow.org", **crds)
        for forbidden in (
            {"verb": "get", "namespace": SYSTEM, "name": "another-secret"},
            {"verb": "delete", "namespace": SYSTEM, "name": "mxjob-webhook-tls"},
            {"verb": "list", "namespace": SYSTEM},
            {"verb": "watch", "namespace": SYSTEM},
            {"verb": "create", "namespace": namespace},
            {"verb": "get", "namespace": namespace, "name": "mxjob-webhook-tls"},
        ):
            assert not allowed(**forbidden), forbidden
    finally:
        control_plane.kubectl("delete", "-f", str(IN_CLUSTER_RBAC), "--ignore-not-found")


def _scrape(port: int, token: str | None, *, context: ssl.SSLContext) -> int:
    request = urllib.request.Request(f"https://127.0.0.1:{port}/metrics")
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, context=context, timeout=10) as reply:
            return int(reply.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


@pytest.fixture
def scrapers(control_plane: ControlPlane, namespace: str) -> Iterator[dict[str, str]]:
    """Tokens of a ServiceAccount bound to ``mxjob-metrics-reader`` and of one bound to nothing
    (real ServiceAccount tokens, which only a TokenReview can tell from a forgery)."""
    binding = f"reader-{namespace}"
    for account in ("reader", "nosy"):
        control_plane.kubectl("-n", namespace, "create", "serviceaccount", account)
    control_plane.kubectl(
        "create", "clusterrolebinding", binding, "--clusterrole=mxjob-metrics-reader",
        f"--serviceaccount={namespace}:reader",
    )  # fmt: skip
    tokens = {
        account: control_plane.kubectl("-n", namespace, "create", "token", account).stdout.strip()
        for account in ("reader", "nosy")
    }
    yield {**tokens, "forged": tokens["reader"][:-4] + "AAAA"}
    control_plane.kubectl("delete", "clusterrolebinding", binding, check=False)


EXPECTED_SCRAPES = {None: 401, "forged": 401, "nosy": 403, "reader": 200}
"""What each scraper gets from ``/metrics`` under ``--metrics-secure``."""


def test_the_controllers_rbac_lets_it_answer_only_scrapers_bound_to_the_reader_role(
    local_operator: RunningOperator, identities: Identities, scrapers: dict[str, str]
) -> None:
    process, metrics_port, _ = local_operator.local.start_controller(
        f"--kubeconfig={identities['mxjob-controller']}", "--metrics-secure",
        log_name="controller-secure-metrics.log",
    )  # fmt: skip
    try:
        # No certificate directory: a self-signed certificate, as before a mounted one appears.
        context = ssl._create_unverified_context()
        answers = {who: _scrape(metrics_port, scrapers.get(who or ""), context=context)
                   for who in EXPECTED_SCRAPES}  # fmt: skip
        assert answers == EXPECTED_SCRAPES
    finally:
        stop_process(process.pid)


def test_the_webhooks_rbac_lets_it_answer_only_scrapers_bound_to_the_reader_role(
    control_plane: ControlPlane,
    local_operator: RunningOperator,
    identities: Identities,
    scrapers: dict[str, str],
    tmp_path: Path,
) -> None:
    token_file = tmp_path / "webhook.token"
    token = control_plane.kubectl("-n", SYSTEM, "create", "token", "mxjob-webhook").stdout
    token_file.write_text(token.strip())
    state = control_plane.state()
    assert state is not None
    metrics_port = free_port()
    pid, admission_port = local_operator.local.start_webhook(
        f"--metrics-bind=127.0.0.1:{metrics_port}", f"--api-server={state.server}",
        f"--api-token-file={token_file}", f"--api-ca-file={control_plane.pki / 'ca.crt'}",
        log_name="webhook-secure-metrics.log",
    )  # fmt: skip
    try:
        context = ssl.create_default_context(cafile=str(local_operator.local.dir / "ca.crt"))
        answers = {who: _scrape(metrics_port, scrapers.get(who or ""), context=context)
                   for who in EXPECTED_SCRAPES}  # fmt: skip
        assert answers == EXPECTED_SCRAPES
        # The admission listener serves no metrics, and the metrics listener no reviews.
        assert _scrape(admission_port, scrapers["reader"], context=context) == 404
    finally:
        stop_process(pid)


def test_controller_may_make_and_update_configmaps_but_never_delete_one_and_read_one_webhook(
    identities: Identities, namespace: str
) -> None:
    """ConfigMaps: the CA bundle it publishes (mxjob-webhook-ca-bundle) and every job's
    ``<job>-status-ca``, in any namespace, read, made and updated, never patched nor deleted."""
    controller = Api.from_kubeconfig(identities["mxjob-controller"])
    configmaps = {"resource": "configmaps"}
    bundle = {"namespace": SYSTEM, "name": "mxjob-webhook-ca-bundle"}
    assert _allowed(controller, verb="get", **configmaps, **bundle)
    assert _allowed(controller, verb="update", **configmaps, **bundle)
    assert not _allowed(controller, verb="delete", **configmaps, **bundle)
    for scope in (SYSTEM, namespace, ""):  # "" asks cluster-wide
        for verb in ("get", "list", "watch", "create", "update"):
            assert _allowed(controller, verb=verb, namespace=scope, **configmaps), (verb, scope)
        for verb in ("patch", "delete", "deletecollection"):
            assert not _allowed(controller, verb=verb, namespace=scope, **configmaps), (verb, scope)
    hooks = {"resource": "validatingwebhookconfigurations",
             "group": "admissionregistration.k8s.io"}  # fmt: skip
    assert _allowed(controller, verb="get", name="mxjob-operator-validating", **hooks)
    assert not _allowed(controller, verb="get", name="someone-elses", **hooks)
    # The base install alone grants no patch of it: the in-cluster certificates add that.
    assert not _allowed(controller, verb="patch", name="mxjob-operator-validating", **hooks)
