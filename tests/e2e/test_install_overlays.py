"""Every install overlay renders with ``kubectl kustomize`` and a real API server accepts it.

The overlays are applied as docs/how-to/install.md says (plain ``kubectl apply -k``, and
``kubectl apply --server-side``) with ``--dry-run=server``: every object goes through the API
server's validation and admission (Pod Security "restricted" on the Deployments included) without
being stored. They go to a control
plane of their own, one the operator was never installed on, as a user's cluster: the session's
plane carries the CRD with its conversion pointed at a loopback ``url``, and a server-side apply
of the manifests' ``service`` reference would be merged with it into an invalid CRD.
"""

from __future__ import annotations

import atexit
import base64
import json
import shutil
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509

from certs.cli import main as certs_main
from localkube.base.paths import PROJECT_ROOT
from localkube.plane.controlplane import ControlPlane
from localkube.plane.operator import wait_established
from localkube.plane.settings import ControlPlaneSettings
from localkube.thirdparty import cert_manager, prometheus
from tests.helpers import pods

# A component built in the background by make test: its first user waits for it (late_builds).
pytestmark = [
    pytest.mark.timeout(1200),
    pytest.mark.late_builds(
        "build-prometheus", "build-kube-network-policies", "third-party-cert-manager"
    ),
]

MANIFESTS = PROJECT_ROOT / "manifests"
NAMESPACE = "mxjob-system"
OVERLAYS = ("in-cluster", "cert-manager", "self-signed")
Docs = list[dict[str, Any]]
SERVING_NAMES = [
    f"mxjob-webhook.{NAMESPACE}.svc", f"mxjob-webhook.{NAMESPACE}.svc.cluster.local",
    f"mxjob-controller-progress.{NAMESPACE}.svc",
    f"mxjob-controller-progress.{NAMESPACE}.svc.cluster.local",
]  # fmt: skip
"""The serving certificate's names: the webhook's Service, then the controller's progress
Service (the controller serves its jobs' progress reports with the same pair)."""


def render(plane: ControlPlane, path: Path) -> Docs:
    out = plane.kubectl("kustomize", str(path)).stdout
    # libyaml's loader: the CRD is about 300 KB, which the pure-Python loader reads slowly.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return [doc for doc in yaml.load_all(out, Loader=loader) if doc]


def find(docs: Docs, kind: str, name: str | None = None) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind and name in (None, d["metadata"]["name"])]


def one(docs: Docs, kind: str, name: str) -> dict[str, Any]:
    (found,) = find(docs, kind, name)
    return found


def as_list(docs: Docs) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": docs})


@pytest.fixture(scope="module")
def fresh_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """A control plane of this module's own, with cert-manager's CRDs and the namespace.

    The namespace is created for real: a server-side dry run stores nothing, so the namespaced
    objects of the same dry run would not find it.
    """
    plane = ControlPlane(ControlPlaneSettings(state_dir=tmp_path_factory.mktemp("install-plane")))
    atexit.register(plane.down)
    try:
        plane.up()
        plane.kubectl("apply", "--server-side", "-f", str(cert_manager.build() / "crds"))
        # Polled: kubectl wait fails outright on a CRD that has no conditions yet.
        for crd in ("certificates.cert-manager.io", "issuers.cert-manager.io"):
            wait_established(plane, crd)
        namespace = one(render(plane, MANIFESTS / "base"), "Namespace", NAMESPACE)
        plane.kubectl("apply", "--server-side", "-f", "-", input_text=json.dumps(namespace))
        yield plane
    finally:
        plane.down()
        atexit.unregister(plane.down)


@pytest.fixture(scope="module")
def overlay_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The overlays, the self-signed one in a copy of ``manifests/`` after ``python -m certs``.

    A copy, so the generated Secret (a private key) never lands in the working tree.
    """
    copy = tmp_path_factory.mktemp("manifests") / "manifests"
    shutil.copytree(MANIFESTS, copy, ignore=shutil.ignore_patterns("webhook-tls-secret.yaml"))
    self_signed = copy / "overlays" / "self-signed"
    assert certs_main(["webhook", "--out", str(self_signed)]) == 0
    return {
        "in-cluster": MANIFESTS / "overlays" / "in-cluster",
        "cert-manager": MANIFESTS / "overlays" / "cert-manager",
        "self-signed": self_signed,
    }


@pytest.fixture(scope="module")
def rendered(fresh_plane: ControlPlane, overlay_dirs: dict[str, Path]) -> dict[str, Docs]:
    return {name: render(fresh_plane, path) for name, path in overlay_dirs.items()}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_overlay_applies_server_side_with_every_object_accepted_and_no_warning(
    fresh_plane: ControlPlane, rendered: dict[str, Docs], overlay: str
) -> None:
    docs = rendered[overlay]
    result = fresh_plane.kubectl(
        "apply", "--server-side", "--dry-run=server", "-f", "-", input_text=as_list(docs)
    )
    # No "Warning:" either: Pod Security "restricted" (warn label on the namespace) would name
    # every Deployment whose pods it would refuse, and deprecated APIs would be reported.
    assert result.stderr == ""
    applied = [line for line in result.stdout.splitlines() if line.strip()]
    assert len(applied) == len(docs)
    assert all(line.endswith("serverside-applied (server dry run)") for line in applied)
    kinds = {d["kind"] for d in docs}
    assert {
        "Namespace", "CustomResourceDefinition", "ServiceAccount", "ClusterRole",
        "ClusterRoleBinding", "Role", "RoleBinding", "Deployment", "Service",
        "PodDisruptionBudget", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
    } <= kinds  # fmt: skip
    tls = {"in-cluster": set(), "cert-manager": {"Issuer", "Certificate"},
           "self-signed": {"Secret"}}[overlay]  # fmt: skip
    assert tls <= kinds
    if overlay == "in-cluster":  # the controller makes the Secret and fills every caBundle
        assert "Secret" not in kinds and "caBundle" not in json.dumps(docs)
        controller = one(docs, "Deployment", "mxjob-controller")
        assert "--manage-webhook-certificates" in controller["spec"]["template"]["spec"][
            "containers"][0]["args"]  # fmt: skip


def test_every_overlay_directory_is_one_these_tests_apply() -> None:
    found = {path.name for path in (MANIFESTS / "overlays").iterdir() if path.is_dir()}
    assert found == set(OVERLAYS)


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_plain_client_side_kubectl_apply_k_of_the_overlay_is_accepted(
    fresh_plane: ControlPlane, overlay_dirs: dict[str, Path], overlay: str
) -> None:
    """The CRD, the largest object, fits in client-side apply's last-applied annotation.

    The API server refuses annotations over 256 KiB in total, and client-side apply copies the
    whole object into one; `hack/gen_crd.py` writes the pod template's schema once per version
    (`additionalProperties` over the replica map) so that the CRD stays well under it.
    """
    result = fresh_plane.kubectl(
        "apply", "--dry-run=server", "-k", str(overlay_dirs[overlay]), check=False
    )
    assert result.returncode == 0, result.stderr
    # The one warning: the fixture created the namespace for real without kubectl's annotation.
    namespace_note = f"namespaces/{NAMESPACE} is missing the kubectl.kubernetes.io/last-applied"
    assert [line for line in result.stderr.splitlines() if namespace_note not in line] == []
    crd_line = "customresourcedefinition.apiextensions.k8s.io/mxjobs.kubeflow.org"
    assert any(line.startswith(crd_line) for line in result.stdout.splitlines()), result.stdout


def with_component(overlay_dirs: dict[str, Path], component: str) -> Path:
    """An overlay of a user's own, as docs/how-to/install.md shows them: the self-signed overlay
    plus ``manifests/components/<component>``."""
    mine = overlay_dirs["self-signed"].parent.parent / f"mine-{component}"
    mine.mkdir(exist_ok=True)
    (mine / "kustomization.yaml").write_text(
        f"resources:\n  - ../overlays/self-signed\ncomponents:\n  - ../components/{component}\n"
    )
    return mine


COMPONENTS = (
    "v1beta1", "validate-on-create", "kueue-workloads", "kubeflow", "katib", "monitoring",
    "network-policies",  # applied for real by tests/e2e/test_real_node_network_policies.py
)  # fmt: skip


def test_every_component_directory_is_one_these_tests_apply() -> None:
    found = {path.name for path in (MANIFESTS / "components").iterdir() if path.is_dir()}
    assert found == set(COMPONENTS)


def test_the_default_install_serves_v1_alone_and_keeps_the_conversion_webhook(
    rendered: dict[str, Docs],
) -> None:
    """As training-operator did: v1beta1 stays in the CRD (objects an older install stored as
    v1beta1 still read back as v1, through the conversion webhook) but is not served."""
    for overlay, docs in rendered.items():
        crd = one(docs, "CustomResourceDefinition", "mxjobs.kubeflow.org")
        served = {v["name"]: (v["served"], v["storage"]) for v in crd["spec"]["versions"]}
        assert served == {"v1": (True, True), "v1beta1": (False, False)}, overlay
        assert crd["spec"]["conversion"]["strategy"] == "Webhook", overlay


def _applies_and_changes_only(
    plane: ControlPlane, docs: Docs, plain: Docs, *, kind: str, name: str, change: Any
) -> None:
    """``docs`` are ``plain`` with ``change`` made to one object, and the API server takes them."""
    changed = one(plain, kind, name)
    change(changed)
    assert one(docs, kind, name) == changed
    assert len(docs) == len(plain)
    result = plane.kubectl(
        "apply", "--server-side", "--dry-run=server", "-f", "-", input_text=as_list(docs)
    )
    assert result.stderr == ""


def test_v1beta1_component_serves_v1beta1_and_changes_nothing_else(
    fresh_plane: ControlPlane, overlay_dirs: dict[str, Path], rendered: dict[str, Docs]
) -> None:
    """An overlay of a user's own, as docs/how-to/install.md shows it: an overlay plus the
    component."""
    docs = render(fresh_plane, with_component(overlay_dirs, "v1beta1"))

    def serve_v1beta1(crd: dict[str, Any]) -> None:
        crd["spec"]["versions"][1]["served"] = True

    _applies_and_changes_only(
        fresh_plane, docs, rendered["self-signed"],
        kind="CustomResourceDefinition", name="mxjobs.kubeflow.org", change=serve_v1beta1,
    )  # fmt: skip


def test_validate_on_create_component_adds_create_to_the_validating_webhook_only(
    fresh_plane: ControlPlane, overlay_dirs: dict[str, Path], rendered: dict[str, Docs]
) -> None:
    docs = render(fresh_plane, with_component(overlay_dirs, "validate-on-create"))
    plain = one(
        rendered["self-signed"], "ValidatingWebhookConfiguration", "mxjob-operator-validating"
    )
    assert plain["webhooks"][0]["rules"][0]["operations"] == ["UPDATE"]

    def validate_creations(configuration: dict[str, Any]) -> None:
        configuration["webhooks"][0]["rules"][0]["operations"] = ["CREATE", "UPDATE"]

    _applies_and_changes_only(
        fresh_plane, docs, rendered["self-signed"],
        kind="ValidatingWebhookConfiguration", name="mxjob-operator-validating",
        change=validate_creations,
    )  # fmt: skip


def test_kueue_workloads_component_turns_the_route_on_in_both_processes_and_grants_its_rbac(
    fresh_plane: ControlPlane, overlay_dirs: dict[str, Path], rendered: dict[str, Docs]
) -> None:
    docs = render(fresh_plane, with_component(overlay_dirs, "kueue-workloads"))
    for name in ("mxjob-controller", "mxjob-webhook"):
        args = one(docs, "Deployment", name)["spec"]["template"]["spec"]["containers"][0]["args"]
        plain = one(rendered["self-signed"], "Deployment", name)
        assert args == [
            *plain["spec"]["template"]["spec"]["containers"][0]["args"],
            "--kueue-workloads",
        ]
    role = one(docs, "ClusterRole", "mxjob-controller-kueue")
    granted = {(g, r, v) for rule in role["rules"] for g in rule["apiGroups"]
               for r in rule["resources"] for v in rule["verbs"]}  # fmt: skip
    assert ("kueue.x-k8s.io", "workloads/status", "patch") in granted
    assert ("kubeflow.org", "mxjobs", "update") in granted
    binding = one(docs, "ClusterRoleBinding", "mxjob-kueue-manager")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "kueue-controller-manager", "namespace": "kueue-system"}
    ]
    assert len(docs) == len(rendered["self-signed"]) + 4
    result = fresh_plane.kubectl(
        "apply", "--server-side", "--dry-run=server", "-f", "-", input_text=as_list(docs)
    )
    assert result.stderr == ""


def test_kubeflow_component_adds_roles_for_kubeflows_aggregated_roles_and_nothing_else(
    fresh_plane: ControlPlane, overlay_dirs: dict[str, Path], rendered: dict[str, Docs]
) -> None:
    docs = render(fresh_plane, with_component(overlay_dirs, "kubeflow"))
    plain = {(d["kind"], d["metadata"]["name"]) for d in rendered["self-signed"]}
    added = [d for d in docs if (d["kind"], d["metadata"]["name"]) not in plain]
    assert sorted(d["metadata"]["name"] for d in added) == [
        "mxjob-operator-kubeflow-edit",
        "mxjob-operator-kubeflow-view",
    ]
    for role in added:
        assert all(
            k.startswith("rbac.authorization.kubeflow.org/") for k in role["metadata"]["labels"]
        )
    result = fresh_plane.kubectl(
        "apply", "--server-side", "--dry-run=server", "-f", "-", input_text=as_list(docs)
    )
    assert result.stderr == ""


def test_katib_component_adds_only_mxjob_access_for_katibs_controller(
    fresh_plane: ControlPlane, overlay_dirs: dict[str, Path], rendered: dict[str, Docs]
) -> None:
    docs = render(fresh_plane, with_component(overlay_dirs, "katib"))
    plain = {(d["kind"], d["metadata"]["name"]) for d in rendered["self-signed"]}
    added = {d["kind"]: d for d in docs if (d["kind"], d["metadata"]["name"]) not in plain}
    assert sorted(added) == ["ClusterRole", "ClusterRoleBinding"]
    assert added["ClusterRole"]["rules"] == [{
        "apiGroups": ["kubeflow.org"], "resources": ["mxjobs"],
        "verbs": ["get", "list", "watch", "create", "delete"]}]  # fmt: skip
    assert added["ClusterRoleBinding"]["subjects"] == [
        {"kind": "ServiceAccount", "name": "katib-controller", "namespace": "kubeflow"}
    ]
    result = fresh_plane.kubectl(
        "apply", "--server-side", "--dry-run=server", "-f", "-", input_text=as_list(docs)
    )
    assert result.stderr == ""


def test_monitoring_component_adds_monitors_rules_and_a_dashboard_the_crds_accept(
    fresh_plane: ControlPlane, overlay_dirs: dict[str, Path], rendered: dict[str, Docs]
) -> None:
    """Applied with the pinned prometheus-operator's CRDs (ServiceMonitor, PrometheusRule), which
    this module's own plane gets here: the objects pass their schemas, not only kustomize."""
    docs = render(fresh_plane, with_component(overlay_dirs, "monitoring"))
    plain = {(d["kind"], d["metadata"]["name"]) for d in rendered["self-signed"]}
    added = sorted((d["kind"], d["metadata"]["name"]) for d in docs
                   if (d["kind"], d["metadata"]["name"]) not in plain)  # fmt: skip
    assert added == [
        ("ConfigMap", "mxjob-operator-dashboard"),
        ("PrometheusRule", "mxjob-operator"),
        ("ServiceMonitor", "mxjob-controller-metrics"),
        ("ServiceMonitor", "mxjob-webhook-metrics"),
    ]
    assert len(docs) == len(rendered["self-signed"]) + 4
    assert one(docs, "ConfigMap", "mxjob-operator-dashboard")["metadata"]["labels"][
        "grafana_dashboard"] == "1"  # fmt: skip
    for crd in prometheus.operator_crds():
        fresh_plane.kubectl("apply", "--server-side", "-f", str(crd))
    for plural in prometheus.MONITORING_KINDS:
        wait_established(fresh_plane, f"{plural}.monitoring.coreos.com")
    result = fresh_plane.kubectl(
        "apply", "--server-side", "--dry-run=server", "-f", "-", input_text=as_list(docs)
    )
    assert result.stderr == ""


def test_operator_pods_are_admitted_under_pod_security_restricted(
    fresh_plane: ControlPlane, rendered: dict[str, Docs]
) -> None:
    docs = rendered["self-signed"]
    fresh_plane.kubectl(
        "apply", "--server-side", "-f", "-", input_text=as_list(find(docs, "ServiceAccount"))
    )
    for deployment in find(docs, "Deployment"):
        template = deployment["spec"]["template"]
        pod = pods.pod(deployment["metadata"]["name"], namespace=NAMESPACE, spec=template["spec"])
        # The namespace enforces "restricted": a pod that breaks it is refused, not warned about.
        result = fresh_plane.kubectl(
            "create", "--dry-run=server", "-f", "-", input_text=json.dumps(pod), check=False
        )
        assert result.returncode == 0, result.stderr
        assert result.stderr == ""


def _containers(deployment: dict[str, Any]) -> list[dict[str, Any]]:
    return list(deployment["spec"]["template"]["spec"]["containers"])


def test_containers_are_hardened_beyond_what_pod_security_checks(
    rendered: dict[str, Docs],
) -> None:
    for deployment in find(rendered["self-signed"], "Deployment"):
        spec = deployment["spec"]["template"]["spec"]
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert spec["securityContext"]["runAsUser"] != 0
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        tmp_volumes = {v["name"] for v in spec["volumes"] if "emptyDir" in v}
        for container in _containers(deployment):
            context = container["securityContext"]
            assert context["readOnlyRootFilesystem"] is True
            assert context["allowPrivilegeEscalation"] is False
            assert context["capabilities"] == {"drop": ["ALL"]}
            assert "memory" in container["resources"]["limits"]
            assert set(container["resources"]["requests"]) == {"cpu", "memory"}
            (tmp,) = [m for m in container["volumeMounts"] if m["mountPath"] == "/tmp"]
            assert tmp["name"] in tmp_volumes
    # The webhook's token reviews the scrapers of its /metrics, all its RBAC allows
    # (tests/e2e/test_install_rbac.py).
    webhook = one(rendered["self-signed"], "Deployment", "mxjob-webhook")["spec"]["template"]
    assert webhook["spec"]["automountServiceAccountToken"] is True


def test_webhook_runs_two_drained_replicas_probed_over_https_behind_a_pdb(
    rendered: dict[str, Docs],
) -> None:
    docs = rendered["self-signed"]
    deployment = one(docs, "Deployment", "mxjob-webhook")
    assert deployment["spec"]["replicas"] == 2
    assert deployment["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    pod = deployment["spec"]["template"]
    (container,) = pod["spec"]["containers"]
    assert container["image"] == "mxjob-operator/webhook:0.1.0"
    assert container["ports"] == [
        {"name": "https", "containerPort": 9443, "protocol": "TCP"},
        {"name": "https-metrics", "containerPort": 8443, "protocol": "TCP"},
    ]
    probes = {
        kind: (p["httpGet"]["path"], p["httpGet"]["port"], p["httpGet"]["scheme"])
        for kind in ("readinessProbe", "livenessProbe")
        for p in [container[kind]]
    }
    assert probes == {
        "readinessProbe": ("/readyz", "https", "HTTPS"),
        "livenessProbe": ("/healthz", "https", "HTTPS"),
    }
    sleep = container["lifecycle"]["preStop"]["exec"]["command"]
    drain = int(sleep[-1])
    graceful = int(next(a for a in container["args"] if a.startswith("--graceful-timeout="))[19:])
    assert drain + graceful < pod["spec"]["terminationGracePeriodSeconds"]
    mount = next(m for m in container["volumeMounts"] if m["name"] == "tls")
    assert f"--cert-dir={mount['mountPath']}" in container["args"]
    # The progress URL it writes into every job's pods names the namespace it runs in.
    assert container["env"] == [
        {
            "name": "MXJOB_WEBHOOK_OPERATOR_NAMESPACE",
            "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}},
        }
    ]
    pdb = one(docs, "PodDisruptionBudget", "mxjob-webhook")
    assert pdb["spec"]["minAvailable"] == 1
    assert pdb["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    service = one(docs, "Service", "mxjob-webhook")
    assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    assert [(p["port"], p["targetPort"]) for p in service["spec"]["ports"]] == [(443, "https")]


def test_controller_runs_two_leader_elected_replicas_with_a_metrics_and_a_progress_service(
    rendered: dict[str, Docs],
) -> None:
    docs = rendered["self-signed"]
    deployment = one(docs, "Deployment", "mxjob-controller")
    assert deployment["spec"]["replicas"] == 2
    pod = deployment["spec"]["template"]
    (container,) = pod["spec"]["containers"]
    assert container["image"] == "mxjob-operator/controller:0.1.0"
    assert "--leader-elect" in container["args"]
    env = {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in container["env"]}
    assert env["MXJOB_CONTROLLER_LEASE_NAMESPACE"] == "metadata.namespace"
    assert pod["spec"]["serviceAccountName"] == "mxjob-controller"
    metrics = one(docs, "Service", "mxjob-controller-metrics")
    assert metrics["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    assert metrics["spec"]["ports"][0]["targetPort"] == "https-metrics"
    assert "--metrics-bind-address=:8443" in container["args"]
    # Every replica serves its jobs' progress reports, behind a Service of their own, with the
    # metrics server's pair and its CA (which the controller hands the jobs' pods).
    assert "--progress-bind-address=:8444" in container["args"]
    assert container["ports"] == [
        {"name": "https-metrics", "containerPort": 8443, "protocol": "TCP"},
        {"name": "health", "containerPort": 8081, "protocol": "TCP"},
        {"name": "https-progress", "containerPort": 8444, "protocol": "TCP"},
    ]
    progress = one(docs, "Service", "mxjob-controller-progress")
    assert progress["spec"] == {
        "selector": pod["metadata"]["labels"],
        "ports": [{"name": "https-progress", "port": 8444, "targetPort": "https-progress",
                   "protocol": "TCP"}],
    }  # fmt: skip
    (tls,) = [v for v in pod["spec"]["volumes"] if v["name"] == "metrics-tls"]
    assert tls["secret"]["items"] == [{"key": key, "path": key}
                                      for key in ("tls.crt", "tls.key", "ca.crt")]  # fmt: skip
    assert tls["secret"]["optional"] is True
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"


def test_image_tags_are_the_project_version() -> None:
    version = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]["version"]
    kustomization = yaml.safe_load((MANIFESTS / "base" / "kustomization.yaml").read_text())
    tags = {image["name"]: image["newTag"] for image in kustomization["images"]}
    assert tags == {"mxjob-operator/webhook": version, "mxjob-operator/controller": version}


def _webhook_services(docs: Docs) -> list[dict[str, Any]]:
    """Every ``clientConfig.service`` the API server will call: both webhooks and conversion."""
    refs = [
        webhook["clientConfig"]["service"]
        for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
        for configuration in find(docs, kind)
        for webhook in configuration["webhooks"]
    ]
    crd = one(docs, "CustomResourceDefinition", "mxjobs.kubeflow.org")
    refs.append(crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"])
    return refs


def _ca_bundles(docs: Docs) -> list[str]:
    bundles = [
        webhook["clientConfig"].get("caBundle", "")
        for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
        for configuration in find(docs, kind)
        for webhook in configuration["webhooks"]
    ]
    crd = one(docs, "CustomResourceDefinition", "mxjobs.kubeflow.org")
    bundles.append(crd["spec"]["conversion"]["webhook"]["clientConfig"].get("caBundle", ""))
    return bundles


def test_every_webhook_call_goes_to_the_webhook_service_on_443(rendered: dict[str, Docs]) -> None:
    for docs in rendered.values():
        refs = _webhook_services(docs)
        assert len(refs) == 4  # mutate, validate, Katib Experiments, conversion
        for ref in refs:
            assert (ref["namespace"], ref["name"], ref["port"]) == (NAMESPACE, "mxjob-webhook", 443)
        one(docs, "Service", "mxjob-webhook")


def test_self_signed_overlay_trusts_exactly_the_ca_of_its_generated_secret(
    rendered: dict[str, Docs],
) -> None:
    docs = rendered["self-signed"]
    secret = one(docs, "Secret", "mxjob-webhook-tls")
    assert secret["type"] == "kubernetes.io/tls"
    assert _ca_bundles(docs) == [secret["data"]["ca.crt"]] * 4
    ca = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["ca.crt"]))
    cert = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
    cert.verify_directly_issued_by(ca)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == SERVING_NAMES
    for ref in _webhook_services(docs):
        assert f"{ref['name']}.{ref['namespace']}.svc" in SERVING_NAMES
    volumes = one(docs, "Deployment", "mxjob-webhook")["spec"]["template"]["spec"]["volumes"]
    # Only the serving pair is mounted: the in-cluster Secret also holds the CA's key.
    pair = [{"key": key, "path": key} for key in ("tls.crt", "tls.key")]
    tls = {
        "name": "tls",
        "secret": {"secretName": "mxjob-webhook-tls", "defaultMode": 0o440, "items": pair},
    }
    assert tls in volumes  # fmt: skip


def test_cert_manager_overlay_injects_its_ca_into_webhooks_and_conversion(
    rendered: dict[str, Docs],
) -> None:
    """The serving certificate comes from a CA Issuer whose CA (kept across renewals with its
    key) is what the caBundles hold: renewing the serving certificate changes no caBundle."""
    docs = rendered["cert-manager"]
    certificate = one(docs, "Certificate", "mxjob-webhook")
    issuer = one(docs, "Issuer", certificate["spec"]["issuerRef"]["name"])
    ca = one(docs, "Certificate", "mxjob-webhook-ca")
    assert issuer["spec"] == {"ca": {"secretName": ca["spec"]["secretName"]}}
    assert ca["spec"]["isCA"] is True
    assert ca["spec"]["privateKey"]["rotationPolicy"] == "Never"
    root = one(docs, "Issuer", ca["spec"]["issuerRef"]["name"])
    assert root["spec"] == {"selfSigned": {}}
    source = f"{ca['metadata']['namespace']}/{ca['metadata']['name']}"
    for kind, name in (
        ("MutatingWebhookConfiguration", "zz-mxjob-operator-mutating"),
        ("ValidatingWebhookConfiguration", "mxjob-operator-validating"),
        ("CustomResourceDefinition", "mxjobs.kubeflow.org"),
    ):
        annotations = one(docs, kind, name)["metadata"]["annotations"]
        assert annotations["cert-manager.io/inject-ca-from"] == source
    assert certificate["spec"]["dnsNames"] == SERVING_NAMES
    for ref in _webhook_services(docs):
        assert f"{ref['name']}.{ref['namespace']}.svc" in SERVING_NAMES
    volumes = one(docs, "Deployment", "mxjob-webhook")["spec"]["template"]["spec"]["volumes"]
    secret_names = [v["secret"]["secretName"] for v in volumes if "secret" in v]
    assert secret_names == [certificate["spec"]["secretName"]]


def test_rbac_names_every_group_resource_and_verb_without_wildcards(
    rendered: dict[str, Docs],
) -> None:
    docs = rendered["self-signed"]
    roles = find(docs, "ClusterRole") + find(docs, "Role")
    assert roles
    for role in roles:
        for rule in role["rules"]:
            for field in ("apiGroups", "resources", "verbs", "resourceNames"):
                assert "*" not in rule.get(field, []), (role["metadata"]["name"], rule)
    bindings = {
        (subject["name"], binding["roleRef"]["name"])
        for kind in ("ClusterRoleBinding", "RoleBinding")
        for binding in find(docs, kind)
        for subject in binding["subjects"]
    }
    assert {account for account, _ in bindings} == {"mxjob-controller", "mxjob-webhook"}
    # The webhook's account may only review the scrapers of its /metrics.
    assert {role for account, role in bindings if account == "mxjob-webhook"} == {
        "mxjob-metrics-auth"
    }
