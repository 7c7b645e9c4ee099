"""charts/mxjob-operator renders the objects the kustomize install renders, for the same choices.

No cluster: the pinned ``helm`` (``localkube.thirdparty.helm``) renders the chart with ``helm
template`` and the built ``kubectl`` renders the overlays with ``kubectl kustomize``; both
outputs are parsed and compared object by object, keyed by (kind, namespace, name):

- default values and ``manifests/overlays/in-cluster``; ``certificates.mode=cert-manager`` and
  ``overlays/cert-manager``; ``certificates.mode=existingSecret`` with the CA of the Secret
  ``python -m certs webhook`` made and ``overlays/self-signed`` less that Secret (in this mode the
  user creates it: the chart never holds a private key); ``v1beta1``, ``validateOnCreate``,
  ``kueueWorkloads``, ``kubeflowRoles`` and ``katibTrials`` and ``overlays/in-cluster`` with the
  component of the same name; ``metrics.serviceMonitor``, ``metrics.prometheusRule`` and
  ``metrics.dashboard`` and ``overlays/in-cluster`` with ``components/monitoring``.

What Helm adds is left out of the comparison, exactly this:

- Helm's recommended labels on every object (``app.kubernetes.io/name``, ``instance``,
  ``version``, ``managed-by`` and ``helm.sh/chart``): the kustomize objects are compared with
  those five added to their labels (an object that already has ``app.kubernetes.io/name`` must
  have the same value). Nothing else of an object may differ: the selectors and the pods'
  labels are the manifests', so an upgrade from an earlier chart keeps the Deployments'
  immutable selectors;
- the kustomize install's Namespace, unless ``namespace.create`` renders it (then it is compared
  too): by default Helm creates the release namespace itself (``--create-namespace``);
- the annotation ``helm.sh/resource-policy: keep`` of the CRD and the Namespace, which makes
  ``helm uninstall`` leave the CRD (and every MXJob) and the namespace (and what else is in it)
  as ``kubectl delete -k`` of a kustomize overlay would not. The CRD is
  a template, not a file of ``crds/``, because it differs between the choices above (its
  caBundle, cert-manager's annotation, v1beta1 served or not) and Helm renders ``crds/`` as is;
- the ``helm test`` hook's objects (templates/tests/), which exist only while ``helm test`` runs
  and have no kustomize counterpart; they are checked on their own below.

The module also checks the chart's ``kubeVersion`` floor, its Artifact Hub annotations, the
values ``values.schema.json`` refuses, and that ``progress.enabled=false`` renders the chart
exactly as it was without progress reports: the two ``--no-progress-reports`` flags added, and
nothing else of the feature (which has no kustomize counterpart: the manifests always serve it).
That the chart's copies of manifests/ (``files/``) are current is not checked here: ``make
generate`` writes them (hack/chartsync.py) and tests/hack/test_chartsync.py fails when one is
stale.
"""

from __future__ import annotations

import ast
import base64
import copy
import json
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft7Validator

from certs.cli import main as certs_main
from localkube.base.paths import PROJECT_ROOT
from localkube.plane.controlplane import find_binaries
from localkube.thirdparty import helm
from shared.validation import format_violations, validate
from tests.e2e.helm_fixtures import NAMESPACE, RELEASE, Docs, helm_or_require, parse, values_file

MANIFESTS = PROJECT_ROOT / "manifests"
CHART = helm.CHART
CRD = "mxjobs.kubeflow.org"
KEEP = "helm.sh/resource-policy"
Key = tuple[str, str | None, str]
Values = dict[str, Any]
MONITORING: Values = {"metrics": {"serviceMonitor": {"enabled": True},
                                  "prometheusRule": {"enabled": True},
                                  "dashboard": {"enabled": True}}}  # fmt: skip
"""What renders manifests/components/monitoring."""


@pytest.fixture(scope="module")
def helm_binary() -> Path:
    return helm_or_require()


@pytest.fixture(scope="module")
def kubectl() -> Path:
    return find_binaries() / "kubectl"


@pytest.fixture(scope="module")
def manifests(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of ``manifests/`` with the self-signed Secret made as docs/how-to/install.md
    ("With your own PKI") says, and an
    overlay per component: ``resources: [../in-cluster]`` with it (kustomize takes components
    and resources by relative path only, hence the copy)."""
    copy_dir = tmp_path_factory.mktemp("manifests") / "manifests"
    shutil.copytree(MANIFESTS, copy_dir, ignore=shutil.ignore_patterns("webhook-tls-secret.yaml"))
    assert certs_main(["webhook", "--out", str(copy_dir / "overlays" / "self-signed")]) == 0
    for component in (
        "v1beta1",
        "validate-on-create",
        "kueue-workloads",
        "kubeflow",
        "katib",
        "monitoring",
        "network-policies",
        "network-policies/jobs",
    ):
        overlay = copy_dir / "overlays" / f"in-cluster-{component.replace('/', '-')}"
        overlay.mkdir()
        (overlay / "kustomization.yaml").write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "kustomize.config.k8s.io/v1beta1",
                    "kind": "Kustomization",
                    "resources": ["../in-cluster"],
                    "components": [f"../../components/{component}"],
                }
            )
        )
    return copy_dir


def kustomize(kubectl: Path, overlay: Path) -> Docs:
    done = subprocess.run(
        [str(kubectl), "kustomize", str(overlay)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return parse(done.stdout)


def template(
    helm_binary: Path, tmp_path: Path, values: Values | None = None, *, namespace: str = NAMESPACE
) -> Docs:
    args = ["template", RELEASE, str(CHART), "--namespace", namespace]
    if values is not None:
        args += ["--values", str(values_file(tmp_path, "values", values))]
    return parse(helm.run(helm_binary, *args).stdout)


def keyed(docs: Docs) -> dict[Key, dict[str, Any]]:
    found: dict[Key, dict[str, Any]] = {}
    for doc in docs:
        key = (doc["kind"], doc["metadata"].get("namespace"), doc["metadata"]["name"])
        assert key not in found, f"{key} rendered twice"
        found[key] = doc
    return found


CHART_META = yaml.safe_load((CHART / "Chart.yaml").read_text())
HELM_LABELS = {
    "app.kubernetes.io/name": "mxjob-operator",
    "app.kubernetes.io/instance": RELEASE,
    "app.kubernetes.io/version": CHART_META["appVersion"],
    "app.kubernetes.io/managed-by": "Helm",
    "helm.sh/chart": f"mxjob-operator-{CHART_META['version']}",
}
"""Helm's recommended labels, as the chart gives them to every object it renders."""
TEST_HOOKS = {
    (kind, NAMESPACE, "mxjob-operator-test")
    for kind in ("ServiceAccount", "Role", "RoleBinding", "ConfigMap", "Pod")
}
"""The objects of ``helm test`` (templates/tests/check-install.yaml)."""


def is_test_hook(doc: dict[str, Any]) -> bool:
    return (doc["metadata"].get("annotations") or {}).get("helm.sh/hook") == "test"


def without_helms_own(docs: Docs) -> dict[Key, dict[str, Any]]:
    """The chart's objects less what Helm needs that kustomize has no use for: the ``helm test``
    hooks and the keep annotation of the CRD and the Namespace (asserted there, then
    removed)."""
    hooks = {key for key, doc in keyed(docs).items() if is_test_hook(doc)}
    assert hooks == TEST_HOOKS
    objects = {key: doc for key, doc in keyed(copy.deepcopy(docs)).items() if key not in hooks}
    kept = [key for key in objects if key[0] in ("CustomResourceDefinition", "Namespace")]
    for key in kept:
        metadata = objects[key]["metadata"]
        annotations = metadata["annotations"]
        assert annotations.pop(KEEP) == "keep", key
        if not annotations:
            del metadata["annotations"]
    return objects


def with_helm_labels(objects: dict[Key, dict[str, Any]]) -> dict[Key, dict[str, Any]]:
    """The kustomize objects with Helm's recommended labels added, the one difference the chart
    may make to an object; a label kustomize already has must keep its value."""
    labelled = copy.deepcopy(objects)
    for key, doc in labelled.items():
        labels = doc["metadata"].setdefault("labels", {})
        clash = {k: v for k, v in labels.items() if k in HELM_LABELS and HELM_LABELS[k] != v}
        assert not clash, (key, clash)
        labels.update(HELM_LABELS)
    return labelled


def without_namespace(docs: Docs) -> dict[Key, dict[str, Any]]:
    """The kustomize install's objects less its Namespace (which Helm makes), with Helm's
    labels."""
    objects = keyed(docs)
    assert objects.pop(("Namespace", None, NAMESPACE))
    return with_helm_labels(objects)


def assert_same_objects(chart: dict[Key, Any], kustomized: dict[Key, Any]) -> None:
    assert sorted(chart) == sorted(kustomized)
    different = [key for key in chart if chart[key] != kustomized[key]]
    assert not different, "\n".join(
        f"{key}:\n--- helm\n{yaml.safe_dump(chart[key])}--- kustomize\n"
        f"{yaml.safe_dump(kustomized[key])}"
        for key in different[:2]
    )


def secret_ca(docs: Docs) -> str:
    (secret,) = [d for d in docs if d["kind"] == "Secret"]
    return str(secret["data"]["ca.crt"])


def one(docs: Docs, kind: str, name: str) -> dict[str, Any]:
    (found,) = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    return found


def container(docs: Docs, deployment: str) -> dict[str, Any]:
    (found,) = one(docs, "Deployment", deployment)["spec"]["template"]["spec"]["containers"]
    return dict(found)


# -- lint ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("strict", [False, True], ids=["lint", "lint-strict"])
def test_helm_lint_passes(helm_binary: Path, strict: bool) -> None:
    done = helm.run(helm_binary, "lint", str(CHART), *(["--strict"] if strict else []))
    assert "1 chart(s) linted, 0 chart(s) failed" in done.stdout, done.stdout
    assert "[ERROR]" not in done.stdout and "[WARNING]" not in done.stdout, done.stdout


def test_the_chart_and_the_schema_name_the_pinned_versions() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert (chart["apiVersion"], chart["version"], chart["appVersion"]) == ("v2", "0.1.0", "0.1.0")
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    kustomization = yaml.safe_load((MANIFESTS / "base" / "kustomization.yaml").read_text())
    tags = {entry["name"]: entry["newTag"] for entry in kustomization["images"]}
    for name in ("webhook", "controller"):
        image = values["images"][name]
        assert tags[image["repository"]] == image["tag"] == chart["appVersion"]


# -- the same objects as kustomize --------------------------------------------------------------
def test_default_values_render_the_in_cluster_overlay(
    helm_binary: Path, kubectl: Path, tmp_path: Path
) -> None:
    chart = without_helms_own(template(helm_binary, tmp_path))
    kustomized = kustomize(kubectl, MANIFESTS / "overlays" / "in-cluster")
    assert_same_objects(chart, without_namespace(kustomized))
    # A comparison of something: the whole install, the namespace being the only one left out.
    assert len(chart) == len(kustomized) - 1 >= 20


def test_namespace_create_renders_the_kustomize_namespace_too(
    helm_binary: Path, kubectl: Path, tmp_path: Path
) -> None:
    """With ``namespace.create`` the chart renders the whole in-cluster overlay, its Namespace
    with Pod Security "restricted" included; another level changes only those labels."""
    chart = template(helm_binary, tmp_path, {"namespace": {"create": True}})
    kustomized = kustomize(kubectl, MANIFESTS / "overlays" / "in-cluster")
    assert_same_objects(without_helms_own(chart), with_helm_labels(keyed(kustomized)))
    assert len(without_helms_own(chart)) == len(kustomized)
    baseline = template(helm_binary, tmp_path, {"namespace": {"create": True,
                                                              "podSecurity": "baseline"}},
                        namespace="ml-ops")  # fmt: skip
    labels = one(baseline, "Namespace", "ml-ops")["metadata"]["labels"]
    assert {k: v for k, v in labels.items() if k.startswith("pod-security")} == {
        "pod-security.kubernetes.io/enforce": "baseline",
        "pod-security.kubernetes.io/enforce-version": "latest",
        "pod-security.kubernetes.io/warn": "baseline",
        "pod-security.kubernetes.io/warn-version": "latest",
    }


def test_cert_manager_mode_renders_the_cert_manager_overlay(
    helm_binary: Path, kubectl: Path, tmp_path: Path
) -> None:
    chart = template(helm_binary, tmp_path, {"certificates": {"mode": "cert-manager"}})
    kustomized = kustomize(kubectl, MANIFESTS / "overlays" / "cert-manager")
    assert_same_objects(without_helms_own(chart), without_namespace(kustomized))
    assert {d["kind"] for d in chart} >= {"Issuer", "Certificate"}


def test_cert_manager_mode_issues_from_an_issuer_of_the_platforms_own(
    helm_binary: Path, tmp_path: Path
) -> None:
    """With ``certificates.certManager.issuerRef``, only the serving Certificate is made, from
    that issuer, and the CA injector reads the CA from its Secret (``ca.crt``)."""
    ref = {"name": "platform-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"}
    values = {"certificates": {"mode": "cert-manager", "certManager": {"issuerRef": ref}}}
    docs = template(helm_binary, tmp_path, values)
    issued = [d for d in docs if d["kind"] in ("Issuer", "Certificate")]
    assert [(d["kind"], d["metadata"]["name"]) for d in issued] == [
        ("Certificate", "mxjob-webhook")
    ]
    assert issued[0]["spec"]["issuerRef"] == ref
    injected = {
        (d["kind"], d["metadata"]["name"]): d["metadata"]["annotations"][
            "cert-manager.io/inject-ca-from"
        ]
        for d in docs
        if "cert-manager.io/inject-ca-from" in (d["metadata"].get("annotations") or {})
    }
    assert set(injected.values()) == {f"{NAMESPACE}/mxjob-webhook"}
    assert {kind for kind, _ in injected} == {
        "CustomResourceDefinition", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"
    }  # fmt: skip


def test_existing_secret_mode_renders_the_self_signed_overlay_less_its_secret(
    helm_binary: Path, kubectl: Path, manifests: Path, tmp_path: Path
) -> None:
    kustomized = kustomize(kubectl, manifests / "overlays" / "self-signed")
    ca = secret_ca(kustomized)
    values = {"certificates": {"mode": "existingSecret", "existingSecret": {"caBundle": ca}}}
    chart = template(helm_binary, tmp_path, values)
    expected = without_namespace(kustomized)
    assert expected.pop(("Secret", NAMESPACE, "mxjob-webhook-tls"))
    assert_same_objects(without_helms_own(chart), expected)
    assert not [d for d in chart if d["kind"] == "Secret"]
    crd = one(chart, "CustomResourceDefinition", CRD)
    assert crd["spec"]["conversion"]["webhook"]["clientConfig"]["caBundle"] == ca


@pytest.mark.parametrize(
    "option",
    [
        ({"v1beta1": True}, "v1beta1"),
        ({"validateOnCreate": True}, "validate-on-create"),
        ({"kueueWorkloads": True}, "kueue-workloads"),
        ({"kubeflowRoles": True}, "kubeflow"),
        ({"katibTrials": True}, "katib"),
        (MONITORING, "monitoring"),
        ({"networkPolicy": {"enabled": True}}, "network-policies"),
        ({"networkPolicy": {"jobs": True}}, "network-policies-jobs"),
    ],
    ids=lambda option: str(option[1]),
)
def test_each_install_option_renders_the_in_cluster_overlay_with_its_component(
    helm_binary: Path, kubectl: Path, manifests: Path, tmp_path: Path, option: tuple[Values, str]
) -> None:
    values, component = option
    chart = template(helm_binary, tmp_path, values)
    kustomized = kustomize(kubectl, manifests / "overlays" / f"in-cluster-{component}")
    assert_same_objects(without_helms_own(chart), without_namespace(kustomized))
    # ... and the option changes something: the render differs from the default one.
    assert without_helms_own(chart) != without_helms_own(template(helm_binary, tmp_path))


def test_the_crd_is_kept_at_uninstall_in_every_mode(helm_binary: Path, tmp_path: Path) -> None:
    for mode in ("in-cluster", "cert-manager"):
        crd = one(
            template(helm_binary, tmp_path, {"certificates": {"mode": mode}}),
            "CustomResourceDefinition",
            CRD,
        )
        assert crd["metadata"]["annotations"][KEEP] == "keep"


def test_every_object_goes_into_the_release_namespace(helm_binary: Path, tmp_path: Path) -> None:
    """Namespaced objects, the ServiceAccount subjects, the Services the webhook configurations
    and the CRD conversion call, the certificate's names and cert-manager's inject-ca-from: no
    ``mxjob-system`` is left anywhere in the render."""
    values = {"certificates": {"mode": "cert-manager"}, **MONITORING, "kueueWorkloads": True}
    args = ["template", RELEASE, str(CHART), "-n", "ml-ops",
            "--values", str(values_file(tmp_path, "values", values))]  # fmt: skip
    text = helm.run(helm_binary, *args).stdout
    assert "mxjob-system" not in text
    docs = parse(text)
    assert {d["metadata"].get("namespace") for d in docs} == {None, "ml-ops"}
    certificate = one(docs, "Certificate", "mxjob-webhook")
    assert certificate["spec"]["dnsNames"] == [
        "mxjob-webhook.ml-ops.svc", "mxjob-webhook.ml-ops.svc.cluster.local",
        *progress_hosts("ml-ops"),
    ]  # fmt: skip
    assert container(docs, "mxjob-webhook")["env"] == [OPERATOR_NAMESPACE_ENV]
    webhook = one(docs, "ValidatingWebhookConfiguration", "mxjob-operator-validating")
    assert webhook["webhooks"][0]["clientConfig"]["service"]["namespace"] == "ml-ops"
    # Kueue's own manager keeps its namespace, as the kustomize component has it.
    binding = one(docs, "ClusterRoleBinding", "mxjob-kueue-manager")
    assert binding["subjects"][0]["namespace"] == "kueue-system"


# -- Helm's labels, the selectors as they were ----------------------------------------------------
EVERY_OPTION: Values = {
    "namespace": {"create": True}, "certificates": {"mode": "cert-manager"}, **MONITORING,
    "v1beta1": True, "validateOnCreate": True, "kueueWorkloads": True, "kubeflowRoles": True,
    "katibTrials": True,
}  # fmt: skip
"""Every option at once: every template renders something."""
SELECTED_BY = {
    "mxjob-webhook": {"app.kubernetes.io/name": "mxjob-operator",
                      "app.kubernetes.io/component": "webhook"},
    "mxjob-controller": {"app.kubernetes.io/name": "mxjob-operator",
                         "app.kubernetes.io/component": "controller"},
}  # fmt: skip
"""The Deployments' selectors, as every earlier version of the chart rendered them: immutable,
so ``helm upgrade`` from one of those would fail on any other."""


def test_every_object_carries_helms_recommended_labels(helm_binary: Path, tmp_path: Path) -> None:
    docs = template(helm_binary, tmp_path, EVERY_OPTION)
    assert len(docs) >= 40
    for doc in docs:
        labels = doc["metadata"].get("labels") or {}
        assert labels.items() >= HELM_LABELS.items(), (doc["kind"], doc["metadata"]["name"])


def test_the_selectors_and_the_pods_labels_stay_the_manifests(
    helm_binary: Path, tmp_path: Path
) -> None:
    """Helm's labels are on the objects only: a Deployment's selector, which an upgrade cannot
    change, and its pods' labels (a new chart version alone rolls no pod) are as before."""
    docs = template(helm_binary, tmp_path, EVERY_OPTION)
    for name, selector in SELECTED_BY.items():
        spec = one(docs, "Deployment", name)["spec"]
        assert spec["selector"] == {"matchLabels": selector}
        assert spec["template"]["metadata"]["labels"] == selector
        (spread,) = spec["template"]["spec"]["topologySpreadConstraints"]
        assert spread["labelSelector"] == {"matchLabels": selector}
        assert one(docs, "PodDisruptionBudget", name)["spec"]["selector"] == spec["selector"]
    for service in services(docs):
        component = "webhook" if "webhook" in service["metadata"]["name"] else "controller"
        assert service["spec"]["selector"] == SELECTED_BY[f"mxjob-{component}"]


# -- values land where they say -----------------------------------------------------------------
PLACEMENT: Values = {
    "nodeSelector": {"node-role.example.com/infra": "true"},
    "tolerations": [
        {"key": "infra", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
    ],
    "affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [
                        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}
                ]
            }
        }
    },
    "priorityClassName": "system-cluster-critical",
}  # fmt: skip


def test_images_replicas_resources_placement_args_and_pdbs_land_in_their_objects(
    helm_binary: Path, tmp_path: Path
) -> None:
    values = {
        "images": {
            "webhook": {"repository": "registry.example.com/mx/webhook", "tag": "1.2.3",
                        "pullPolicy": "IfNotPresent"},
            "controller": {"repository": "registry.example.com/mx/controller", "tag": "1.2.4"},
        },
        "webhook": {
            "replicas": 3,
            "resources": {"requests": {"cpu": "200m"}, "limits": {"cpu": "1"}},
            **PLACEMENT,
            "extraArgs": ["--max-connection-age=60"],
            "pdb": {"minAvailable": "50%"},
        },
        "controller": {"replicas": 1, "extraArgs": ["--gang-scheduler=volcano"],
                       "pdb": {"enabled": False}},
    }  # fmt: skip
    docs = template(helm_binary, tmp_path, values)
    webhook, controller = container(docs, "mxjob-webhook"), container(docs, "mxjob-controller")
    assert webhook["image"] == "registry.example.com/mx/webhook:1.2.3"
    assert webhook["imagePullPolicy"] == "IfNotPresent"
    assert controller["image"] == "registry.example.com/mx/controller:1.2.4"
    assert "imagePullPolicy" not in controller
    # Resources given are merged into the defaults.
    assert webhook["resources"] == {
        "requests": {"cpu": "200m", "memory": "64Mi"}, "limits": {"cpu": "1", "memory": "256Mi"}
    }  # fmt: skip
    assert webhook["args"][-1] == "--max-connection-age=60"
    assert webhook["args"][:-1] == ["--bind=0.0.0.0:9443", "--metrics-bind=0.0.0.0:8443",
                                    "--cert-dir=/etc/mxjob-webhook/tls",
                                    "--graceful-timeout=20", "--log-format=json"]  # fmt: skip
    assert controller["args"][-2:] == ["--manage-webhook-certificates", "--gang-scheduler=volcano"]
    pod = one(docs, "Deployment", "mxjob-webhook")["spec"]["template"]["spec"]
    assert {key: pod[key] for key in PLACEMENT} == PLACEMENT
    assert one(docs, "Deployment", "mxjob-webhook")["spec"]["replicas"] == 3
    assert one(docs, "Deployment", "mxjob-controller")["spec"]["replicas"] == 1
    controller_pod = one(docs, "Deployment", "mxjob-controller")["spec"]["template"]["spec"]
    assert not set(PLACEMENT) & set(controller_pod)
    assert one(docs, "PodDisruptionBudget", "mxjob-webhook")["spec"]["minAvailable"] == "50%"
    assert not [d for d in docs if d["metadata"]["name"] == "mxjob-controller"
                and d["kind"] == "PodDisruptionBudget"]  # fmt: skip


def test_pull_secrets_pod_metadata_security_contexts_and_spread_land_in_the_pods(
    helm_binary: Path, tmp_path: Path
) -> None:
    """What a platform team sets on every workload: a private registry's pull Secret, a mesh
    opt-out annotation, its own labels, OpenShift's assigned user (the fixed one removed with
    null) and a spread of its own; unset, each stays as the manifests have it."""
    zone_spread = [
        {
            "maxSkew": 2,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app.kubernetes.io/component": "controller"}},
        }
    ]
    values = {
        "imagePullSecrets": [{"name": "mirror"}],
        "webhook": {
            "podAnnotations": {"sidecar.istio.io/inject": "false"},
            "podLabels": {"team": "ml"},
            "podSecurityContext": {"runAsUser": None, "runAsGroup": None},
            "securityContext": {"readOnlyRootFilesystem": None},
            "topologySpreadConstraints": [],
        },
        "controller": {"topologySpreadConstraints": zone_spread},
    }  # fmt: skip
    docs = template(helm_binary, tmp_path, values)
    webhook = one(docs, "Deployment", "mxjob-webhook")["spec"]["template"]
    controller = one(docs, "Deployment", "mxjob-controller")["spec"]["template"]
    for pod in (webhook, controller):
        assert pod["spec"]["imagePullSecrets"] == [{"name": "mirror"}]
    assert webhook["metadata"]["annotations"] == {"sidecar.istio.io/inject": "false"}
    assert webhook["metadata"]["labels"] == {"app.kubernetes.io/name": "mxjob-operator",
                                             "app.kubernetes.io/component": "webhook",
                                             "team": "ml"}  # fmt: skip
    assert webhook["spec"]["securityContext"] == {
        "runAsNonRoot": True, "fsGroup": 65532, "seccompProfile": {"type": "RuntimeDefault"}
    }  # fmt: skip
    assert "readOnlyRootFilesystem" not in webhook["spec"]["containers"][0]["securityContext"]
    assert "topologySpreadConstraints" not in webhook["spec"]
    assert controller["spec"]["topologySpreadConstraints"] == zone_spread
    # The controller keeps what was not set: the manifests' user and container hardening.
    assert controller["spec"]["securityContext"]["runAsUser"] == 65532
    assert controller["spec"]["containers"][0]["securityContext"]["readOnlyRootFilesystem"]
    assert "annotations" not in controller["metadata"]


def notes(helm_binary: Path, tmp_path: Path, values: Values) -> str:
    """templates/NOTES.txt as ``helm install`` prints it. ``helm template`` leaves NOTES out, so
    a copy of the chart carries it as a manifest's block scalar, rendered by the same engine."""
    chart = tmp_path / "chart"
    shutil.copytree(CHART, chart)
    text = (chart / "templates" / "NOTES.txt").read_text()
    (chart / "templates" / "NOTES.txt").unlink()
    block = "".join(f"  {line}\n" for line in text.splitlines())
    (chart / "templates" / "notes.yaml").write_text("notes: |\n" + block)
    args = ["template", RELEASE, str(chart), "--namespace", NAMESPACE,
            "--values", str(values_file(tmp_path, "values", values)),
            "--show-only", "templates/notes.yaml"]  # fmt: skip
    rendered = yaml.safe_load(helm.run(helm_binary, *args).stdout)
    return str(rendered["notes"])


@pytest.mark.parametrize(
    ("values", "said"),
    [
        ({}, "the controller makes and renews the webhook's Secret mxjob-webhook-tls"),
        ({"certificates": {"mode": "cert-manager",
                           "certManager": {"issuerRef": {"name": "platform-ca"}}}},
         "cert-manager issues mxjob-webhook-tls from platform-ca"),
    ],
    ids=["in-cluster", "cert-manager-issuer"],
)  # fmt: skip
def test_the_install_notes_say_where_it_went_and_what_to_do_next(
    helm_binary: Path, tmp_path: Path, values: Values, said: str
) -> None:
    text = notes(helm_binary, tmp_path, values)
    assert f"installed in {NAMESPACE}" in text
    assert said in text
    assert f"kubectl -n {NAMESPACE} rollout status deployment/mxjob-webhook" in text
    assert "kubectl get mxjobs -w" in text


def test_option_flags_come_before_extra_args(helm_binary: Path, tmp_path: Path) -> None:
    values = {"kueueWorkloads": True, "webhook": {"extraArgs": ["--threads=8"]},
              "controller": {"extraArgs": ["--log-level=debug"]}}  # fmt: skip
    docs = template(helm_binary, tmp_path, values)
    assert container(docs, "mxjob-webhook")["args"][-2:] == ["--kueue-workloads", "--threads=8"]
    assert container(docs, "mxjob-controller")["args"][-3:] == [
        "--manage-webhook-certificates", "--kueue-workloads", "--log-level=debug"]  # fmt: skip
    off = template(helm_binary, tmp_path, {**values, **PROGRESS_OFF})
    assert container(off, "mxjob-webhook")["args"][-3:] == [
        "--kueue-workloads", "--no-progress-reports", "--threads=8"]  # fmt: skip
    assert container(off, "mxjob-controller")["args"][-3:] == [
        "--manage-webhook-certificates", "--kueue-workloads", "--log-level=debug"]  # fmt: skip


# -- progress reports ---------------------------------------------------------------------------
PROGRESS_OFF: Values = {"progress": {"enabled": False}}
CONTROLLER_LABELS = {"app.kubernetes.io/name": "mxjob-operator",
                     "app.kubernetes.io/component": "controller"}  # fmt: skip
PROGRESS_SERVICE_SPEC = {
    "selector": CONTROLLER_LABELS,
    "ports": [{"name": "https-progress", "port": 8444, "targetPort": "https-progress",
               "protocol": "TCP"}],
}  # fmt: skip
"""Service mxjob-controller-progress: every controller replica's progress port."""
PROGRESS_POLICY_SPEC = {
    "podSelector": {"matchLabels": CONTROLLER_LABELS},
    "policyTypes": ["Ingress"],
    "ingress": [{
        "from": [{
            "namespaceSelector": {},
            "podSelector": {
                "matchLabels": {"training.kubeflow.org/operator-name": "mxjob-operator"},
                "matchExpressions": [{"key": "training.kubeflow.org/job-name",
                                      "operator": "Exists"}],
            },
        }],
        "ports": [{"port": "https-progress", "protocol": "TCP"}],
    }],
}  # fmt: skip
"""NetworkPolicy mxjob-controller-progress: the pods of MXJobs of any namespace, on that port."""
PROGRESS_RULES = [
    {"apiGroups": [""], "resources": ["configmaps"],
     "verbs": ["get", "list", "watch", "create", "update"]},
    {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
]  # fmt: skip
"""The controller's rules for each job's <job>-status-ca and the reports' TokenReviews."""
PROGRESS_PORT = {"name": "https-progress", "containerPort": 8444, "protocol": "TCP"}
CERT_DIR_ARG = "--metrics-cert-dir=/etc/mxjob-controller/metrics-tls"
TMP_VOLUME = {"name": "tmp", "emptyDir": {"sizeLimit": "16Mi"}}
TMP_MOUNT = {"name": "tmp", "mountPath": "/tmp"}
METRICS_TLS_MOUNT = {"name": "metrics-tls", "mountPath": "/etc/mxjob-controller/metrics-tls",
                     "readOnly": True}  # fmt: skip
CA_ITEM = {"key": "ca.crt", "path": "ca.crt"}
METRICS_TLS_VOLUME = {
    "name": "metrics-tls",
    "secret": {"secretName": "mxjob-webhook-tls", "optional": True, "defaultMode": 0o440,
               "items": [{"key": "tls.crt", "path": "tls.crt"},
                         {"key": "tls.key", "path": "tls.key"}, CA_ITEM]},
}  # fmt: skip
"""The serving pair with its CA, which the controller hands the jobs' pods."""
OPERATOR_NAMESPACE_ENV = {
    "name": "MXJOB_WEBHOOK_OPERATOR_NAMESPACE",
    "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}},
}
"""The webhook's: the progress URL it writes into the jobs' pods names the release namespace."""


def progress_hosts(namespace: str) -> list[str]:
    return [f"mxjob-controller-progress.{namespace}.svc",
            f"mxjob-controller-progress.{namespace}.svc.cluster.local"]  # fmt: skip


def take(items: list[Any], item: Any) -> None:
    """Remove ``item`` from ``items``, which must hold it once."""
    assert items.count(item) == 1, (item, items)
    items.remove(item)


def _controller_without_progress(pod: dict[str, Any], *, metrics_secure: bool) -> None:
    """The controller's pod less its progress port, its flag turned off, and the pair's CA (the
    whole pair when only the progress endpoint mounted it)."""
    (controller,) = pod["containers"]
    args = controller["args"]
    args[args.index("--progress-bind-address=:8444")] = "--no-progress-reports"
    take(controller["ports"], PROGRESS_PORT)
    if metrics_secure:
        (tls,) = [v for v in pod["volumes"] if v["name"] == "metrics-tls"]
        take(tls["secret"]["items"], CA_ITEM)
    else:
        take(pod["volumes"], METRICS_TLS_VOLUME)
        take(controller["volumeMounts"], METRICS_TLS_MOUNT)
        take(args, CERT_DIR_ARG)


def without_progress(docs: Docs, values: Values) -> dict[Key, dict[str, Any]]:
    """The render of ``values`` less exactly what progress reports add to it, each piece as it
    must be, with the two ``--no-progress-reports`` flags that turn them off."""
    objects = keyed(copy.deepcopy(docs))
    service = objects.pop(("Service", NAMESPACE, "mxjob-controller-progress"))
    assert service["spec"] == PROGRESS_SERVICE_SPEC
    assert service["metadata"]["labels"].items() >= CONTROLLER_LABELS.items()
    policy = objects.pop(("NetworkPolicy", NAMESPACE, "mxjob-controller-progress"), None)
    assert (policy is not None) == bool(values.get("networkPolicy", {}).get("enabled"))
    assert policy is None or policy["spec"] == PROGRESS_POLICY_SPEC
    rules = objects[("ClusterRole", None, "mxjob-controller")]["rules"]
    for rule in PROGRESS_RULES:
        take(rules, rule)
    (status_rule,) = [r for r in rules if r["resources"] == ["mxjobs/status"]]
    take(status_rule["verbs"], "patch")
    pod = objects[("Deployment", NAMESPACE, "mxjob-controller")]["spec"]["template"]["spec"]
    metrics_secure = values.get("metrics", {}).get("secure", True)
    _controller_without_progress(pod, metrics_secure=metrics_secure)
    webhook = objects[("Deployment", NAMESPACE, "mxjob-webhook")]["spec"]["template"]["spec"]
    (webhook_container,) = webhook["containers"]
    assert webhook_container.pop("env") == [OPERATOR_NAMESPACE_ENV]
    webhook_container["args"].append("--no-progress-reports")  # none of values' extraArgs
    certificate = objects.get(("Certificate", NAMESPACE, "mxjob-webhook"))
    cert_manager = values.get("certificates", {}).get("mode") == "cert-manager"
    assert (certificate is not None) == cert_manager
    if certificate is not None:
        for host in progress_hosts(NAMESPACE):
            take(certificate["spec"]["dnsNames"], host)
    return objects


@pytest.mark.parametrize(
    "values",
    [{}, {"metrics": {"secure": False}}, {"certificates": {"mode": "cert-manager"}},
     {**EVERY_OPTION, "networkPolicy": {"enabled": True, "jobs": True}}],
    ids=["defaults", "metrics-insecure", "cert-manager", "every-option"],
)  # fmt: skip
def test_progress_disabled_renders_the_chart_without_the_feature_and_its_flags_off(
    helm_binary: Path, tmp_path: Path, values: Values
) -> None:
    """What progress.enabled=true adds is exactly its Service, its NetworkPolicy, the
    controller's port, flag, rules and the pair's CA, the webhook's namespace env and the
    certificate's names; with false, none of it is rendered and both processes are told
    ``--no-progress-reports``."""
    on = template(helm_binary, tmp_path, values)
    off = template(helm_binary, tmp_path, {**values, **PROGRESS_OFF})
    assert_same_objects(keyed(off), without_progress(on, values))
    policies = bool(values.get("networkPolicy", {}).get("enabled"))
    assert len(keyed(on)) == len(keyed(off)) + (2 if policies else 1)
    # Nothing else of it is left: "progress" is in the two flags alone, but for the CRD (the
    # API, served either way) and the monitoring component's rule and dashboard (which read
    # the controller's series, whatever it serves).
    monitoring = {("PrometheusRule", "mxjob-operator"), ("ConfigMap", "mxjob-operator-dashboard")}
    text = json.dumps([d for d in off if d["kind"] != "CustomResourceDefinition"
                       and (d["kind"], d["metadata"]["name"]) not in monitoring])  # fmt: skip
    assert text.count("progress") == text.count('"--no-progress-reports"') == 2
    assert "8444" not in text and "status-ca" not in text


# -- metrics ------------------------------------------------------------------------------------
def services(docs: Docs) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == "Service"]


def scraped_by(monitor: dict[str, Any], docs: Docs) -> list[str]:
    """The Services a ServiceMonitor scrapes: selected by its labels, in its namespaces, with the
    port its endpoint names (as the Prometheus Operator resolves them)."""
    spec = monitor["spec"]
    wanted = spec["selector"]["matchLabels"].items()
    ports = {endpoint["port"] for endpoint in spec["endpoints"]}
    return [
        s["metadata"]["name"]
        for s in services(docs)
        if wanted <= s["metadata"]["labels"].items()
        and s["metadata"]["namespace"] in spec["namespaceSelector"]["matchNames"]
        and ports & {port["name"] for port in s["spec"]["ports"]}
    ]


def test_service_monitors_select_the_metrics_services_by_label(
    helm_binary: Path, tmp_path: Path
) -> None:
    values = {"metrics": {"serviceMonitor": {"enabled": True, "labels": {"release": "prom"},
                                             "interval": "30s"}}}  # fmt: skip
    docs = template(helm_binary, tmp_path, values)
    monitors = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ServiceMonitor"}
    assert sorted(monitors) == ["mxjob-controller-metrics", "mxjob-webhook-metrics"]
    for name, monitor in monitors.items():
        assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
        assert monitor["metadata"]["namespace"] == NAMESPACE
        assert monitor["metadata"]["labels"]["release"] == "prom"
        assert scraped_by(monitor, docs) == [name]
        (endpoint,) = monitor["spec"]["endpoints"]
        assert (endpoint["path"], endpoint["interval"]) == ("/metrics", "30s")
    for monitor in monitors.values():  # both over HTTPS with Prometheus's token
        (endpoint,) = monitor["spec"]["endpoints"]
        assert endpoint["scheme"] == "https"
        assert endpoint["tlsConfig"] == {
            "serverName": f"mxjob-webhook.{NAMESPACE}.svc",
            "ca": {"configMap": {"name": "mxjob-webhook-ca-bundle", "key": "ca.crt"}},
        }
        assert endpoint["bearerTokenFile"] == "/var/run/secrets/kubernetes.io/serviceaccount/token"
    # Off by default: the CRD may not exist in the cluster.
    assert not [d for d in template(helm_binary, tmp_path) if d["kind"] == "ServiceMonitor"]


def test_the_webhook_monitor_verifies_the_name_the_certificate_carries(
    helm_binary: Path, tmp_path: Path
) -> None:
    values = {"certificates": {"mode": "cert-manager"},
              "metrics": {"serviceMonitor": {"enabled": True}}}  # fmt: skip
    docs = template(helm_binary, tmp_path, values, namespace="ml-ops")
    (endpoint,) = one(docs, "ServiceMonitor", "mxjob-webhook-metrics")["spec"]["endpoints"]
    certificate = one(docs, "Certificate", "mxjob-webhook")
    assert endpoint["tlsConfig"]["serverName"] in certificate["spec"]["dnsNames"]
    # Verified against the bundle the controller publishes, not the Secret with the key in it.
    assert endpoint["tlsConfig"]["ca"] == {
        "configMap": {"name": "mxjob-webhook-ca-bundle", "key": "ca.crt"}
    }
    assert one(docs, "ConfigMap", "mxjob-webhook-ca-bundle").get("data") is None


def test_metrics_services_can_be_turned_off_with_their_monitors(
    helm_binary: Path, tmp_path: Path
) -> None:
    values = {"metrics": {"webhookService": {"enabled": False},
                          "serviceMonitor": {"enabled": True}}}  # fmt: skip
    docs = template(helm_binary, tmp_path, values)
    assert [s["metadata"]["name"] for s in services(docs)] == [
        "mxjob-controller-metrics", "mxjob-controller-progress", "mxjob-webhook"]  # fmt: skip
    monitors = [d["metadata"]["name"] for d in docs if d["kind"] == "ServiceMonitor"]
    assert monitors == ["mxjob-controller-metrics"]


def test_the_rule_and_the_dashboard_take_their_labels_and_follow_the_release_namespace(
    helm_binary: Path, tmp_path: Path
) -> None:
    rule_values = {"enabled": True, "labels": {"release": "prom"}}
    dashboard_values = {"enabled": True, "labels": {"grafana_folder": "ml"}}
    values = {"metrics": {"prometheusRule": rule_values, "dashboard": dashboard_values}}
    docs = template(helm_binary, tmp_path, values, namespace="ml-ops")
    rule = one(docs, "PrometheusRule", "mxjob-operator")
    assert rule["metadata"]["namespace"] == "ml-ops"
    assert rule["metadata"]["labels"]["release"] == "prom"
    dashboard = one(docs, "ConfigMap", "mxjob-operator-dashboard")
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert dashboard["metadata"]["labels"]["grafana_folder"] == "ml"
    assert json.loads(dashboard["data"]["mxjob-operator.json"])["uid"] == "mxjob-operator"
    # Off by default: the PrometheusRule CRD may not exist in the cluster.
    defaults = template(helm_binary, tmp_path)
    assert not [d for d in defaults if d["kind"] == "PrometheusRule"]
    assert not [d for d in defaults if d["metadata"]["name"] == "mxjob-operator-dashboard"]


# -- values helm refuses ------------------------------------------------------------------------
PASSED_THROUGH = (".resources", ".affinity", ".podSecurityContext", ".securityContext")
"""Kubernetes objects the chart passes through: their keys are Kubernetes', not defaults."""
Refusal = tuple[Values, Callable[[str], bool]]
REFUSED: dict[str, Refusal] = {
    "no-api-server-port": (
        {"networkPolicy": {"apiServerPorts": []}},
        lambda said: "/networkPolicy/apiServerPorts" in said,
    ),
    "api-server-port-out-of-range": (
        {"networkPolicy": {"apiServerPorts": [70000]}},
        lambda said: "/networkPolicy/apiServerPorts/0" in said,
    ),
    "no-scrape-namespace-label": (
        # null drops a default key (Helm's own rule): none left is refused.
        {"networkPolicy": {"scrapeNamespaceLabels": {"metrics.mxjob.kubeflow.org/scrape": None}}},
        lambda said: "/networkPolicy/scrapeNamespaceLabels" in said,
    ),
    "wrong-type": (
        {"webhook": {"replicas": "three"}},
        lambda said: "/webhook/replicas" in said and "want integer" in said,
    ),
    "unknown-key": (
        {"webhook": {"replica": 3}},
        lambda said: "/webhook" in said and "'replica' not allowed" in said,
    ),
    "pod-label-the-deployment-selects-by": (
        {"controller": {"podLabels": {"app.kubernetes.io/component": "other"}}},
        lambda said: "app.kubernetes.io/component" in said,
    ),
    "issuer-of-another-kind": (
        {"certificates": {"certManager": {"issuerRef": {"name": "x", "kind": "Vault"}}}},
        lambda said: "/certificates/certManager/issuerRef/kind" in said,
    ),
    "pull-secret-without-a-name": (
        {"imagePullSecrets": [{"secret": "mirror"}]},
        lambda said: "/imagePullSecrets/0" in said and "name" in said,
    ),
    "unknown-top-level-key": (
        {"certificate": {"mode": "cert-manager"}},
        lambda said: "'certificate' not allowed" in said,
    ),
    "unknown-mode": (
        {"certificates": {"mode": "self-signed"}},
        lambda said: "/certificates/mode" in said and "existingSecret" in said,
    ),
    "wrong-type-in-a-list": (
        {"controller": {"extraArgs": ["--leader-elect", 3]}},
        lambda said: "/controller/extraArgs/1" in said,
    ),
    "unknown-toleration-field": (
        {"webhook": {"tolerations": [{"key": "a", "efect": "NoSchedule"}]}},
        lambda said: "/webhook/tolerations/0" in said and "'efect' not allowed" in said,
    ),
    "namespace-create-not-a-boolean": (
        {"namespace": {"create": "yes"}},
        lambda said: "/namespace/create" in said and "want boolean" in said,
    ),
    "namespace-pod-security-level-unknown": (
        {"namespace": {"create": True, "podSecurity": "strict"}},
        lambda said: "/namespace/podSecurity" in said and "restricted" in said,
    ),
    "namespace-unknown-key": (
        {"namespace": {"create": True, "name": "ml-ops"}},
        lambda said: "/namespace" in said and "'name' not allowed" in said,
    ),
    "progress-enabled-not-a-boolean": (
        {"progress": {"enabled": "false"}},
        lambda said: "/progress/enabled" in said and "want boolean" in said,
    ),
    "progress-unknown-key": (
        {"progress": {"enabled": True, "port": 9444}},
        lambda said: "/progress" in said and "'port' not allowed" in said,
    ),
    "existing-secret-without-ca": (
        {"certificates": {"mode": "existingSecret"}},
        lambda said: "certificates.existingSecret.caBundle is required" in said,
    ),
    "existing-secret-ca-not-a-certificate": (
        {"certificates": {"mode": "existingSecret", "existingSecret": {
            "caBundle": base64.b64encode(b"not a certificate").decode()}}},
        lambda said: "must be the base64 of a PEM CA certificate" in said,
    ),
}  # fmt: skip


CHECKED_BY_TEMPLATES = {"existing-secret-without-ca", "existing-secret-ca-not-a-certificate"}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_helm_refuses_bad_values_naming_the_key(
    helm_binary: Path, tmp_path: Path, case: str
) -> None:
    values, names_it = REFUSED[case]
    path = values_file(tmp_path, case, values)
    # helm lint checks the schema; it leaves out a template's own `fail` and `required`.
    commands = ("template", "lint") if case not in CHECKED_BY_TEMPLATES else ("template",)
    for command in commands:
        args = [command, *([RELEASE] if command == "template" else []), str(CHART),
                "--values", str(path)]  # fmt: skip
        done = helm.run(helm_binary, *args, check=False)
        # helm template says why on stderr; helm lint lists it among its findings.
        said = done.stderr if command == "template" else done.stdout
        assert done.returncode != 0, (command, said)
        assert names_it(said), (command, said)


def test_the_schema_is_closed_and_values_yaml_gives_every_value_it_names() -> None:
    """``additionalProperties: false`` on every object of the chart's own (the ones Kubernetes
    objects pass through, like resource quantities or node selectors, are typed instead), and
    values.yaml gives a default for every key the schema names, so the values reference
    generated from it (docs/reference/helm-values.md) is whole."""
    schema = json.loads((CHART / "values.schema.json").read_text())
    defaults = yaml.safe_load((CHART / "values.yaml").read_text())
    open_objects: list[str] = []
    undocumented: list[str] = []

    def walk(node: dict[str, Any], value: Any, path: str) -> None:
        if "properties" not in node:
            return
        if node.get("additionalProperties") is not False:
            open_objects.append(path)
        for key, child in node["properties"].items():
            if isinstance(value, dict) and key in value:
                walk(child, value[key], f"{path}.{key}")
            elif not path.endswith(PASSED_THROUGH):
                undocumented.append(f"{path}.{key}")
            else:
                walk(child, None, f"{path}.{key}")

    walk(schema, defaults, "")
    assert open_objects == []
    assert undocumented == []


# -- the Kubernetes versions it installs on -------------------------------------------------------
FLOOR = (1, 28)
"""The oldest Kubernetes minor the install works on (docs/how-to/install.md, "Kubernetes versions"):
admission webhooks' matchConditions are on by default from 1.28 (beta; alpha and off in 1.27)."""


def test_the_webhooks_use_what_sets_the_floor() -> None:
    """The floor is there for matchConditions: if the webhooks stop using them, revisit it."""
    configurations = list(yaml.safe_load_all(
        (MANIFESTS / "webhook" / "webhook-configurations.yaml").read_text()))  # fmt: skip
    assert all(w.get("matchConditions") for c in configurations for w in c["webhooks"])
    assert CHART_META["kubeVersion"] == f">={FLOOR[0]}.{FLOOR[1]}.0-0"


@pytest.mark.parametrize(
    ("version", "accepted"),
    [
        (f"v1.{FLOOR[1] - 1}.16", False),
        (f"v1.{FLOOR[1]}.0", True),
        (f"v1.{FLOOR[1]}.3-eks-a1b2c3d", True),  # a provider's pre-release suffix: the -0
        ("v1.37.2", True),
    ],
)
def test_helm_refuses_a_kubernetes_older_than_the_floor(
    helm_binary: Path, version: str, accepted: bool
) -> None:
    args = ["template", RELEASE, str(CHART), "--kube-version", version]
    done = helm.run(helm_binary, *args, check=False)
    if accepted:
        assert done.returncode == 0, done.stderr
    else:
        assert done.returncode != 0
        assert f"chart requires kubeVersion: >=1.{FLOOR[1]}.0-0" in done.stderr, done.stderr


# -- helm test ----------------------------------------------------------------------------------
def test_the_helm_test_hook_runs_the_check_in_the_controller_image_as_restricted_pod(
    helm_binary: Path, tmp_path: Path
) -> None:
    """templates/tests/: test hooks only, replaced by each run and deleted once passed; a Pod
    that passes Pod Security "restricted", in the controller's image as installed (its pull
    policy and Secrets), running files/tests/check_install.py with a Role for MXJobs in the
    release namespace only."""
    values = {"images": {"controller": {"repository": "registry.example.com/mx/controller",
                                        "tag": "1.2.4", "pullPolicy": "Never"}},
              "imagePullSecrets": [{"name": "mirror"}]}  # fmt: skip
    hooks = [d for d in template(helm_binary, tmp_path, values) if is_test_hook(d)]
    assert {(d["kind"], d["metadata"]["namespace"], d["metadata"]["name"]) for d in hooks} == (
        TEST_HOOKS
    )
    for doc in hooks:
        annotations = doc["metadata"]["annotations"]
        assert annotations["helm.sh/hook-delete-policy"] == "before-hook-creation,hook-succeeded"
        assert int(annotations["helm.sh/hook-weight"]) == (0 if doc["kind"] == "Pod" else -1)
        assert doc["metadata"]["labels"].items() >= HELM_LABELS.items()
    pod = one(hooks, "Pod", "mxjob-operator-test")["spec"]
    (check,) = pod["containers"]
    assert check["image"] == "registry.example.com/mx/controller:1.2.4"
    assert check["imagePullPolicy"] == "Never"
    assert pod["imagePullSecrets"] == [{"name": "mirror"}]
    assert pod["restartPolicy"] == "Never"
    assert pod["serviceAccountName"] == "mxjob-operator-test"
    # Pod Security "restricted" (and a read-only root filesystem besides).
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert check["securityContext"] == {
        "allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "runAsNonRoot": True,
        "capabilities": {"drop": ["ALL"]},
    }  # fmt: skip
    assert [list(v) for v in pod["volumes"]] == [["name", "configMap"]]
    assert not [key for key in pod if key.startswith("host")]
    script = one(hooks, "ConfigMap", "mxjob-operator-test")["data"]["check_install.py"]
    assert script == (CHART / "files" / "tests" / "check_install.py").read_text()
    assert check["command"] == ["/opt/venv/bin/python",
                                "/etc/mxjob-operator-test/check_install.py"]  # fmt: skip
    (rule,) = one(hooks, "Role", "mxjob-operator-test")["rules"]
    assert rule == {"apiGroups": ["kubeflow.org"], "resources": ["mxjobs"],
                    "verbs": ["get", "create", "delete"]}  # fmt: skip


def test_the_check_script_is_in_the_controller_images_python() -> None:
    """The Pod runs it with the image's interpreter: it imports only the standard library and
    the ``kubernetes`` client the controller's extra installs (pyproject.toml)."""
    source = (CHART / "files" / "tests" / "check_install.py").read_text()
    tree = ast.parse(source)
    imported = {alias.name.split(".")[0] for node in ast.walk(tree)
                if isinstance(node, ast.Import) for alias in node.names}  # fmt: skip
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module}  # fmt: skip
    third_party = imported - set(sys.stdlib_module_names) - {"__future__"}
    assert third_party == {"kubernetes"}
    pyproject = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())
    controller_extra = pyproject["project"]["optional-dependencies"]["controller"]
    assert any(requirement.startswith("kubernetes") for requirement in controller_extra)


# -- Artifact Hub -------------------------------------------------------------------------------
def annotation(name: str) -> Any:
    return yaml.safe_load(CHART_META["annotations"][f"artifacthub.io/{name}"])


def test_artifact_hub_names_the_images_values_yaml_installs() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    expected = [{"name": name, "image": f"{image['repository']}:{image['tag']}"}
                for name, image in values["images"].items()]  # fmt: skip
    assert annotation("images") == expected


def test_artifact_hub_metadata_is_of_its_kinds() -> None:
    meta = CHART_META["annotations"]
    pyproject = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())
    assert meta["artifacthub.io/license"] == pyproject["project"]["license"]["text"]
    for flag in ("operator", "prerelease", "containsSecurityUpdates"):
        assert meta[f"artifacthub.io/{flag}"] in ("true", "false")
    assert meta["artifacthub.io/operatorCapabilities"] in (
        "Basic Install", "Seamless Upgrades", "Full Lifecycle", "Deep Insights", "Auto Pilot"
    )  # fmt: skip
    assert all(set(link) == {"name", "url"} and link["url"].startswith("https://")
               for link in annotation("links"))  # fmt: skip
    kinds = {"added", "changed", "deprecated", "removed", "fixed", "security"}
    assert all(change["kind"] in kinds and change["description"]
               for change in annotation("changes"))  # fmt: skip
    crd = yaml.safe_load((MANIFESTS / "crd" / f"{CRD}.yaml").read_text())
    assert [(c["kind"], c["version"], c["name"]) for c in annotation("crds")] == [
        (crd["spec"]["names"]["kind"], "v1", crd["metadata"]["name"])
    ]


def test_artifact_hub_crd_examples_are_examples_the_crd_and_the_webhook_admit() -> None:
    """Each crdsExample is an example of examples/ as it is there (comments aside), valid for
    the CRD's v1 schema and for the webhook's rules (shared/validation.py)."""
    crd = yaml.safe_load((MANIFESTS / "crd" / f"{CRD}.yaml").read_text())
    (v1,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    schema = Draft7Validator(v1["schema"]["openAPIV3Schema"])
    files = {
        (doc["kind"], doc["metadata"]["name"]): doc
        for path in sorted((PROJECT_ROOT / "examples" / "v1").rglob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
    }
    examples = annotation("crdsExamples")
    assert len(examples) == 2
    for example in examples:
        assert example == files[(example["kind"], example["metadata"]["name"])]
        errors = [f"{list(e.absolute_path)}: {e.message}" for e in schema.iter_errors(example)]
        assert errors == []
        assert validate(example) == [], format_violations(validate(example))


def test_metrics_secure_off_serves_the_controller_over_http_and_sends_no_token(
    helm_binary: Path, tmp_path: Path
) -> None:
    """/metrics over HTTP; the serving pair is still mounted for the progress endpoint, and
    only for it: with progress.enabled=false the controller mounts no certificate."""
    values = {"metrics": {"secure": False, "serviceMonitor": {"enabled": True}}}
    docs = template(helm_binary, tmp_path, values)
    controller = one(docs, "Deployment", "mxjob-controller")["spec"]["template"]["spec"]
    (container,) = controller["containers"]
    assert container["args"][1:6] == [
        "--metrics-bind-address=:8080", "--no-metrics-secure", CERT_DIR_ARG,
        "--health-probe-bind-address=:8081", "--progress-bind-address=:8444"]  # fmt: skip
    assert controller["volumes"] == [TMP_VOLUME, METRICS_TLS_VOLUME]
    assert container["volumeMounts"] == [TMP_MOUNT, METRICS_TLS_MOUNT]
    off = template(helm_binary, tmp_path, {**values, **PROGRESS_OFF})
    pod = one(off, "Deployment", "mxjob-controller")["spec"]["template"]["spec"]
    (plain,) = pod["containers"]
    assert plain["args"][1:5] == [
        "--metrics-bind-address=:8080", "--no-metrics-secure",
        "--health-probe-bind-address=:8081", "--no-progress-reports"]  # fmt: skip
    assert not [arg for arg in plain["args"] if arg.startswith("--metrics-cert-dir")]
    assert (pod["volumes"], plain["volumeMounts"]) == ([TMP_VOLUME], [TMP_MOUNT])
    webhook = one(docs, "Deployment", "mxjob-webhook")["spec"]["template"]["spec"]
    assert "--no-metrics-secure" in webhook["containers"][0]["args"]
    assert webhook["automountServiceAccountToken"] is False
    (endpoint,) = one(docs, "ServiceMonitor", "mxjob-controller-metrics")["spec"]["endpoints"]
    assert (endpoint["scheme"], endpoint["port"]) == ("http", "http-metrics")
    assert scraped_by(one(docs, "ServiceMonitor", "mxjob-controller-metrics"), docs) == [
        "mxjob-controller-metrics"
    ]
    for monitor in ("mxjob-controller-metrics", "mxjob-webhook-metrics"):
        (endpoint,) = one(docs, "ServiceMonitor", monitor)["spec"]["endpoints"]
        assert "bearerTokenFile" not in endpoint
    names = {(d["kind"], d["metadata"]["name"]) for d in docs}
    assert ("ClusterRole", "mxjob-metrics-auth") not in names
    assert ("ClusterRole", "mxjob-metrics-reader") in names


def test_network_policies_take_the_scrapers_labels_and_the_api_servers_ports(
    helm_binary: Path, tmp_path: Path
) -> None:
    labels = {"team": "observability", "metrics.mxjob.kubeflow.org/scrape": None}
    values = {"networkPolicy": {"enabled": True, "apiServerPorts": [8443],
                                "scrapeNamespaceLabels": labels}}  # fmt: skip
    docs = template(helm_binary, tmp_path, values, namespace="ml-ops")
    metrics = one(docs, "NetworkPolicy", "mxjob-operator-metrics")
    (rule,) = metrics["spec"]["ingress"]
    assert rule["from"] == [{"namespaceSelector": {"matchLabels": {"team": "observability"}}}]
    egress = one(docs, "NetworkPolicy", "mxjob-operator-egress")["spec"]["egress"]
    assert egress[0]["ports"] == [{"port": 8443, "protocol": "TCP"}]
    assert {d["metadata"]["namespace"] for d in docs if d["kind"] == "NetworkPolicy"} == {"ml-ops"}


def test_an_images_digest_pins_it_by_digest_everywhere_the_image_is_named(
    helm_binary: Path, tmp_path: Path
) -> None:
    """``images.<name>.digest`` (what ``make release`` writes into the chart it pushes) renders
    ``repository@digest`` in its Deployment and in the ``helm test`` hook; the other image, with
    no digest, stays ``repository:tag``."""
    digest = "sha256:" + "c" * 64
    values = {"images": {"controller": {"repository": "127.0.0.1:5000/mx/controller",
                                        "digest": digest}}}  # fmt: skip
    docs = template(helm_binary, tmp_path, values)
    ref = f"127.0.0.1:5000/mx/controller@{digest}"
    assert container(docs, "mxjob-controller")["image"] == ref
    assert container(docs, "mxjob-webhook")["image"] == "mxjob-operator/webhook:0.1.0"
    (hook,) = [d for d in docs if d["kind"] == "Pod"]
    (check,) = hook["spec"]["containers"]
    assert check["image"] == ref
    assert {"name": "MXJOB_TEST_IMAGE", "value": ref} in check["env"]
