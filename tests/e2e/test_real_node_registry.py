"""The operator released to a registry and installed from it by digest, on the real node.

``make release`` (``localkube.scenarios.release``) runs against CNCF distribution's ``registry``
v3.0.0 served over TLS on loopback with a CA of the test's own (``localkube.thirdparty.registry``),
which the real node's containerd is told to trust for that registry alone (a ``hosts.toml``,
``localkube.realnode.containerd.trust_registry``). The session's kustomize install is removed and
the operator's two images are removed from containerd's store (exported first, to be put back;
the kubelet's removal of the old containers awaited, so no snapshot keeps their layers), and
containerd pulls both by digest from the registry (``ctr images pull``: see ``pull_by_digest``
for why not the kubelet). Then the chart is installed as a user installs a released one, ``helm
install <release> oci://<registry>/mxjob/charts/mxjob-operator --version <v>``, its values setting
only ``pullPolicy: IfNotPresent`` (the pushed chart names the images by digest). It shows:

- both Deployments run the images pulled from the registry by the pushed digest (the pods'
  ``imageID``; each image's own layer in containerd's store is the registry's compressed blob),
  and an MXJob runs to ``Succeeded`` under them;
- each image's cosign signature verifies against the pushed digest with the release's public
  key; with another key, or for a digest the release did not sign (the chart's), it does not;
- each image carries its CycloneDX SBOM as a signed attestation that lists what the image ships:
  Flask and gunicorn in the webhook's, the Kubernetes client in the controller's, neither in the
  other's;
- the kustomize overlay the release wrote names both images by the same digests.

At the end the chart and its namespace and CRD are removed, the pulled images and the registry's
``hosts.toml`` too, the operator's images are imported again and the default kustomize install is
put back for the session's other real-node tests, even when a step failed.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from localkube.base.builds import BuildError
from localkube.realnode import containerd
from localkube.realnode.cluster import SYSTEM_NAMESPACE, RealCluster
from localkube.realnode.node import node_bin_dir
from localkube.scenarios import release as publishing
from localkube.scenarios.release_plan import IMAGES, Registry, components_named
from localkube.thirdparty import helm
from localkube.thirdparty import registry as oci_registry
from tests.e2e.admission_traffic import single_worker_job
from tests.e2e.helm_fixtures import RELEASE, helm_or_require, remove_release
from tests.e2e.real_node_fixtures import (
    InstalledCluster,
    namespace_for,
    pods_of,
    remove_namespace,
    require,
)
from tests.helpers.waiting import wait_for

pytestmark = [
    pytest.mark.timeout(900),
    pytest.mark.changes_install,
    pytest.mark.late_builds("build-helm", "build-registry", "build-cosign"),
]

PREFIX = "mxjob"
"""The registry's path under which the release goes: ``<registry>/mxjob/{webhook,...}``."""


@dataclass
class FromRegistry:
    installed: InstalledCluster
    registry: oci_registry.Registry
    released: publishing.Released
    cosign: Path
    work: Path

    @property
    def cluster(self) -> RealCluster:
        return self.installed.cluster

    def cosign_env(self) -> dict[str, str]:
        return publishing.Trust(self.registry.ca_file).cosign_env(self.work)


def ctr(cluster: RealCluster, *args: str, timeout: float = 300) -> str:
    return containerd.ctr(node_bin_dir(), cluster.node.containerd_paths.socket, *args,
                          timeout=timeout)  # fmt: skip


def image_targets(cluster: RealCluster) -> dict[str, str]:
    """Each image reference in containerd's store → the digest of the manifest it names (the
    CRI plugin adds a ``sha256:<image id>`` reference of its own beside each name)."""
    rows = (line.split() for line in ctr(cluster, "images", "ls").splitlines()[1:])
    return {row[0]: row[2] for row in rows if len(row) >= 3}


def remove_images(cluster: RealCluster, digests: set[str]) -> None:
    """Every reference to a manifest of ``digests``, and what only they kept (``--sync``)."""
    refs = [ref for ref, digest in image_targets(cluster).items() if digest in digests]
    if refs:
        ctr(cluster, "images", "rm", "--sync", *refs)


def containers_of(cluster: RealCluster, refs: set[str]) -> list[str]:
    rows = (line.split() for line in ctr(cluster, "containers", "ls").splitlines()[1:])
    return [row[0] for row in rows if len(row) >= 2 and row[1] in refs]


def built_tools() -> tuple[Path, Path]:
    """cosign and the registry, built once per machine (make test builds them late)."""
    try:
        return publishing.cosign_binary(), oci_registry.binary()
    except BuildError as error:
        require(f"cosign or the distribution registry could not be built: {error}")
        raise


def take_out_operator_images(cluster: RealCluster, work: Path) -> tuple[dict[str, Path], set[str]]:
    """Export the preloaded operator images (to be put back), wait for the kubelet to remove the
    uninstalled pods' containers (their snapshots would keep the images' layers), then remove
    the images from containerd; the exports and the removed manifests' digests."""
    targets = image_targets(cluster)
    names = {getattr(cluster.images, name).ref for name in IMAGES}
    digests = {targets[name] for name in names}
    refs = {ref for ref, digest in targets.items() if digest in digests}
    saved = {}
    for name in IMAGES:
        ref = getattr(cluster.images, name).ref
        saved[ref] = work / f"preloaded-{name}.tar"
        ctr(cluster, "images", "export", str(saved[ref]), ref)
    wait_for(
        "the kubelet to remove the uninstalled operator's containers",
        lambda: containers_of(cluster, refs),
        lambda left: not left,
        timeout=240,
    )
    remove_images(cluster, digests)
    left = set(image_targets(cluster)) & refs
    assert not left, f"still in containerd's store: {left}"
    return saved, digests


def put_back(cluster: RealCluster, saved: dict[str, Path], digests: set[str], address: str) -> None:
    """Remove every image pulled from the registry at ``address`` (and the preloaded ones'
    leftovers, ``digests``) and its ``hosts.toml``; import the preloaded images again, from
    the session's archives as at its start (the exports when an archive went meanwhile)."""
    targets = image_targets(cluster)
    pulled = {d for ref, d in targets.items() if address and ref.startswith(address + "/")}
    remove_images(cluster, pulled | digests)
    if address:
        shutil.rmtree(cluster.node.containerd_paths.hosts_dir / address, ignore_errors=True)
    for name in IMAGES:
        image = getattr(cluster.images, name)
        archive = image.archive if image.archive.is_file() else saved.get(image.ref)
        if archive is not None and archive.is_file():
            containerd.import_image(node_bin_dir(), cluster.node.containerd_paths.socket, archive)
    missing = {getattr(cluster.images, n).ref for n in IMAGES} - set(image_targets(cluster))
    assert not missing, f"not imported again: {missing}"


def pull_by_digest(cluster: RealCluster, ref: str) -> None:
    """containerd pulls ``ref`` (``repository@digest``) from the registry its ``hosts.toml``
    trusts, unpacked for the CRI plugin. Not the kubelet: a kubelet pull records the image id as
    pulled from that repository, and the kubelet then refuses the same image under the
    session's name with ``pullPolicy: Never`` (KubeletEnsureSecretPulledImages, on by default
    since Kubernetes 1.35), which would break the install put back at the end."""
    hosts = cluster.node.containerd_paths.hosts_dir
    ctr(cluster, "images", "pull", "--hosts-dir", str(hosts), "--snapshotter", "overlayfs", ref)


@pytest.fixture(scope="module")
def from_registry(real_cluster: InstalledCluster) -> Iterator[FromRegistry]:
    helm_binary = helm_or_require()
    cosign, _ = built_tools()
    cluster = real_cluster.cluster
    work = cluster.plane.dir / "registry-release"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    kubeconfig = cluster.plane.kubeconfig
    # Its images leave containerd's store only once no container uses them: the kubelet removes
    # the containers of the pods it stopped gracefully at once, and a force-deleted pod's only at
    # its next garbage collection.
    cluster.uninstall_operator(real_cluster.install_dir, pods_at_once=False)
    saved: dict[str, Path] = {}
    preloaded: set[str] = set()
    registry: oci_registry.Registry | None = None
    try:
        registry = oci_registry.Registry.start(work / "registry")
        saved, preloaded = take_out_operator_images(cluster, work)
        containerd.trust_registry(
            cluster.node.containerd_paths, registry.address, ca_file=registry.ca_file
        )
        released = publishing.release(
            Registry.parse(f"{registry.address}/{PREFIX}"), work / "out",
            trust=publishing.Trust(registry.ca_file), built=cluster.images,
        )  # fmt: skip
        for name in IMAGES:
            pull_by_digest(cluster, released.images[name])
        cluster.plane.kubectl("create", "namespace", SYSTEM_NAMESPACE)
        helm.run(
            helm_binary, "install", RELEASE, released.chart, "--version", released.chart_version,
            "--ca-file", str(registry.ca_file), "--namespace", SYSTEM_NAMESPACE,
            "--set", "images.webhook.pullPolicy=IfNotPresent",
            "--set", "images.controller.pullPolicy=IfNotPresent",
            "--set", "namespace.create=true", "--take-ownership", kubeconfig=kubeconfig,
        )  # fmt: skip
        cluster.plane.kubectl(
            "-n", SYSTEM_NAMESPACE, "rollout", "status", "--timeout=240s",
            "deployment/mxjob-webhook", "deployment/mxjob-controller", timeout=250,
        )  # fmt: skip
        cluster.wait_admission(timeout=180)
        yield FromRegistry(real_cluster, registry, released, cosign, work)
    finally:
        try:
            remove_release(cluster.plane, helm_binary)
            put_back(cluster, saved, preloaded, registry.address if registry else "")
        finally:
            if registry is not None:
                registry.stop()
            real_cluster.put_back_later()


def test_the_operator_runs_the_images_pulled_from_the_registry_by_digest(
    from_registry: FromRegistry,
) -> None:
    released = from_registry.released
    for name in IMAGES:
        ref = released.images[name]
        assert ref == f"{from_registry.registry.address}/{PREFIX}/{name}@{released.digests[name]}"
        pods = pods_of(from_registry.installed, name)
        assert len(pods) == 2, [p["metadata"]["name"] for p in pods]
        for pod in pods:
            (container,) = pod["spec"]["containers"]
            assert (container["image"], container["imagePullPolicy"]) == (ref, "IfNotPresent")
            (status,) = pod["status"]["containerStatuses"]
            assert status["imageID"] == ref, status
    refs = set(image_targets(from_registry.cluster))
    assert set(released.images.values()) <= refs
    preloaded = {getattr(from_registry.cluster.images, name).ref for name in IMAGES}
    assert not preloaded & refs, "the preloaded images came back before the install ended"
    # The layer each image adds to the base (its /opt/venv) came from the registry: the blob the
    # registry stores (gzip; the preloaded archives held it uncompressed) is in the store.
    content = set(ctr(from_registry.cluster, "content", "ls", "-q").split())
    for name in IMAGES:
        stored = from_registry.registry.manifest(f"{PREFIX}/{name}", released.digests[name])
        assert stored["layers"][-1]["digest"] in content, name


def test_an_mxjob_succeeds_under_the_install_from_the_registry(
    from_registry: FromRegistry,
) -> None:
    installed = from_registry.installed
    namespace = namespace_for(installed, "registry-job")
    job = single_worker_job(
        "registry-job", from_registry.cluster.images.examples.ref,
        ["python", "-c", "print('ran from the registry')"],
    )  # fmt: skip
    kubectl = from_registry.cluster.plane.kubectl
    kubectl("apply", "-n", namespace, "-f", "-", input_text=json.dumps(job))
    path = f"/apis/kubeflow.org/v1/namespaces/{namespace}/mxjobs/registry-job"
    wait_for(
        "the job to succeed",
        lambda: installed.api.request("GET", path).get("status", {}).get("state"),
        lambda state: state == "Succeeded",
        timeout=180,
    )
    logs = kubectl("logs", "-n", namespace, "registry-job-worker-0").stdout
    assert logs.strip() == "ran from the registry"
    remove_namespace(installed, namespace)


def test_each_image_is_signed_by_digest_with_the_release_key_and_nothing_else_verifies(
    from_registry: FromRegistry,
) -> None:
    released, env = from_registry.released, from_registry.cosign_env()
    for name in IMAGES:
        ref = released.images[name]
        verified = publishing.verify(from_registry.cosign, ref, released=released, env=env)
        assert verified.returncode == 0, verified.stderr
        (claim,) = json.loads(verified.stdout)
        assert claim["critical"]["image"]["docker-manifest-digest"] == released.digests[name]
        assert claim["critical"]["identity"]["docker-reference"] == ref.split("@")[0]
    # Another key pair: the signature does not verify.
    other = from_registry.work / "other"
    publishing.run_step(
        [from_registry.cosign, "generate-key-pair", "--output-key-prefix", other],
        step="another key pair", env=env,
    )  # fmt: skip
    wrong_key = publishing.verify(
        from_registry.cosign, released.images["webhook"], released=released, env=env,
        key=other.with_suffix(".pub"),
    )  # fmt: skip
    assert wrong_key.returncode != 0 and "no matching signatures" in wrong_key.stderr
    # A digest in the same registry the release did not sign: its chart.
    chart = f"{released.chart.removeprefix('oci://')}@{released.chart_digest}"
    unsigned = publishing.verify(from_registry.cosign, chart, released=released, env=env)
    assert unsigned.returncode != 0 and "no signatures found" in unsigned.stderr


def attested_sbom(from_registry: FromRegistry, name: str) -> dict[str, Any]:
    released = from_registry.released
    verified = publishing.verify(
        from_registry.cosign, released.images[name], released=released,
        env=from_registry.cosign_env(), attestation="cyclonedx",
    )  # fmt: skip
    assert verified.returncode == 0, verified.stderr
    (envelope,) = [json.loads(line) for line in verified.stdout.splitlines() if line.strip()]
    statement: dict[str, Any] = json.loads(base64.b64decode(envelope["payload"]))
    assert statement["predicateType"] == "https://cyclonedx.org/bom"
    (subject,) = statement["subject"]
    assert "sha256:" + subject["digest"]["sha256"] == released.digests[name]
    return statement


def test_each_image_carries_its_sbom_as_a_signed_attestation_listing_what_it_ships(
    from_registry: FromRegistry,
) -> None:
    listed = {}
    for name in IMAGES:
        predicate = attested_sbom(from_registry, name)["predicate"]
        assert predicate["bomFormat"] == "CycloneDX"
        assert predicate == json.loads(Path(from_registry.released.sboms[name]).read_text())
        listed[name] = components_named(predicate)
    assert {"flask", "gunicorn", "mxjob-operator"} <= listed["webhook"]
    assert "kubernetes" not in listed["webhook"]
    assert {"kubernetes", "mxjob-operator"} <= listed["controller"]
    assert "flask" not in listed["controller"]


def test_the_release_overlay_names_both_images_by_the_pushed_digests(
    from_registry: FromRegistry,
) -> None:
    released = from_registry.released
    rendered = from_registry.cluster.plane.kubectl("kustomize", released.overlay).stdout
    images = {
        doc["metadata"]["name"]: doc["spec"]["template"]["spec"]["containers"][0]["image"]
        for doc in yaml.safe_load_all(rendered)
        if doc and doc["kind"] == "Deployment"
    }
    assert images == {f"mxjob-{name}": released.images[name] for name in IMAGES}
    assert all(re.fullmatch(r".+@sha256:[0-9a-f]{64}", ref) for ref in images.values())
