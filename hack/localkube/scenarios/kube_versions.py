"""``make test-kube-versions``: the Helm install and an MXJob on other kube-apiserver releases.

For each release given (by default the oldest the chart's ``kubeVersion`` admits and the newest
the Go module proxy serves), kube-apiserver of that release is built once per machine
(``hack/build-kube-apiserver.sh``) and a local control plane runs it
(``ControlPlaneSettings.apiserver_binary``) beside the pinned etcd and kube-controller-manager,
with the controllers Deployments need and webhook calls routed to the Service's endpoints, as in
tests/e2e/test_install_running.py. A test kubelet runs the pods as local processes (its install
profile: the webhook and controller images as their console scripts). Then, timed:

1. ``helm install`` of charts/mxjob-operator with ``namespace.create`` (into a namespace made
   first, taken over) and the default certificate mode (the controller makes the webhook's
   certificate and fills every caBundle): helm checks the chart's ``kubeVersion`` against the
   server's, the API server takes the CRD's validation rules and the webhooks' matchConditions;
2. both Deployments rolled out, and the webhook reached through its Service (a server-side dry
   run of a valid MXJob admitted);
3. an invalid MXJob refused with the webhook's message; the webhooks' matchConditions and the
   CRD rules' reason and fieldPath kept by the API server (one that does not know a field drops
   it);
4. an MXJob created: admitted, defaulted, its pod made by the controller and run by the test
   kubelet to ``Succeeded``;
5. on a release that serves kube-scheduler's Workload API in a version the controller writes
   (``GANG_APIS``: v1.37's ``scheduling.k8s.io/v1alpha3``, served with ``GenericWorkload`` and
   ``TopologyAwareWorkloadScheduling`` on), the native gang of an MXJob with a
   ``topologyKey`` and a ``priorityClass``: the controller (``--gang-scheduler=auto``) picked that
   version, and the API server kept every field it wrote (``workloadRef``,
   ``schedulingConstraints``, ``priorityClassName``, ``disruptionMode: {all: {}}``) and filled in
   the ``priority``; no ``GangFieldNotKept`` Warning on the job. The MXJobs of step 4 then run
   as gangs too (the test kubelet binds their pods).

Not in ``make test``: each release's first build takes about six minutes. Prints one line per
step and a table at the end; exits non-zero if a step failed on any release.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from localkube.base.api import Api, ApiError, ensure_namespace
from localkube.base.paths import PROJECT_ROOT
from localkube.kubelet.core import TestKubelet
from localkube.kubelet.profile.operator_node import operator_kubelet
from localkube.plane.controlplane import ControlPlane, ControlPlaneError
from localkube.plane.settings import INSTALL_CONTROLLERS, ControlPlaneSettings
from localkube.thirdparty import helm

VERSIONS = ("v1.28.15", "v1.37.2")
"""The oldest release the chart's kubeVersion admits (its last patch) and the newest release."""
SYSTEM = "mxjob-system"
JOBS = "kube-versions"
BUILD_SCRIPT = PROJECT_ROOT / "hack" / "build-kube-apiserver.sh"
STEPS = ("build kube-apiserver", "helm install to admission", "refusal and fields kept",
         "an MXJob to Succeeded", "native gang fields kept")  # fmt: skip
GANG_APIS = {"v1.37.2": "v1alpha3"}
"""Releases whose Workload API version the controller writes, beside the pinned v1.36's."""
GANG_GATES = "GenericWorkload=true,TopologyAwareWorkloadScheduling=true"
"""v1.37's gates for that API (pkg/features/kube_features.go of its module): GangScheduling and
WorkloadAwarePreemption are gone there, their fields served without a gate."""
RACK = "topology.kubernetes.io/rack"


class StepError(Exception):
    """A step did not reach what it waited for."""


@dataclass
class Result:
    version: str
    served: str = ""
    """``/version``'s gitVersion: the release that answered."""
    seconds: dict[str, float] = field(default_factory=dict)
    failed: str = ""


def build_apiserver(version: str) -> Path:
    done = subprocess.run(
        [str(BUILD_SCRIPT), version], stdout=subprocess.PIPE, text=True, check=True
    )
    return Path(done.stdout.strip().splitlines()[-1])


def wait(what: str, check: Callable[[], bool], *, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise StepError(f"{what}: not within {timeout:g} s")
        time.sleep(0.5)


@contextmanager
def plane_with(version: str, apiserver: Path, state_dir: Path) -> Iterator[ControlPlane]:
    """A plane running ``apiserver`` and a test kubelet with the install profile."""
    plane = ControlPlane(
        ControlPlaneSettings(
            state_dir=state_dir / "plane",
            apiserver_binary=apiserver,
            # kube-apiserver v1.28 routes webhook calls by a Service's Endpoints (the pinned
            # v1.36 by its EndpointSlices): the Endpoints controller keeps them.
            extra_controllers=(*INSTALL_CONTROLLERS, "endpoint"),
            extra_apiserver_args=("--enable-aggregator-routing=true", *_gang_args(version)),
        )
    )
    kubelet: TestKubelet | None = None
    try:
        state = plane.up()
        api = Api.from_kubeconfig(plane.kubeconfig)
        kubelet = operator_kubelet(
            api, work=state_dir, api_port=state.apiserver_port, node_name=f"node-{version}"
        )
        yield plane
    finally:
        if kubelet is not None:
            kubelet.stop()
        plane.down()


def _gang_args(version: str) -> tuple[str, ...]:
    if version not in GANG_APIS:
        return ()
    return (
        f"--runtime-config=scheduling.k8s.io/{GANG_APIS[version]}=true",
        f"--feature-gates={GANG_GATES}",
    )


def mxjob(name: str, *, workers: int = 1) -> dict[str, Any]:
    container = {"name": "mxnet", "image": "busybox", "command": ["true"]}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "MXJob",
        "metadata": {"name": name, "namespace": JOBS},
        "spec": {"mxReplicaSpecs": {"Worker": {
            "replicas": workers, "restartPolicy": "Never",
            "template": {"spec": {"containers": [container]}},
        }}},
    }  # fmt: skip


def kubectl_create(plane: ControlPlane, job: dict[str, Any], *flags: str) -> Any:
    return plane.kubectl(
        "create", *flags, "-f", "-", input_text=json.dumps(job), check=False, timeout=60
    )


def install(plane: ControlPlane, binary: Path, state_dir: Path) -> None:
    values = state_dir / "values.yaml"
    values.write_text(yaml.safe_dump({"namespace": {"create": True}}))
    # docs/how-to/install.md, "Let the chart make a restricted namespace": the namespace first,
    # then the chart takes it over.
    plane.kubectl("create", "namespace", SYSTEM)
    helm.run(
        binary, "install", "mxjob-operator", str(helm.CHART), "--namespace", SYSTEM,
        "--values", str(values), "--take-ownership", kubeconfig=plane.kubeconfig, timeout=180,
    )  # fmt: skip
    plane.kubectl(
        "-n", SYSTEM, "rollout", "status", "--timeout=180s",
        "deployment/mxjob-webhook", "deployment/mxjob-controller", timeout=190,
    )  # fmt: skip
    probe = mxjob("admission-probe")
    wait("the webhook admits through its Service",
         lambda: kubectl_create(plane, probe, "--dry-run=server").returncode == 0,
         timeout=120)  # fmt: skip


def check_refusals(plane: ControlPlane, api: Api) -> None:
    """The webhook refuses an invalid MXJob; the API server kept what the floor is for (a
    server that does not know a field drops it): the webhooks' matchConditions and the CRD's
    validation rules with their reason and fieldPath."""
    invalid = kubectl_create(plane, mxjob("invalid", workers=2))
    if 'admission webhook "mutate.mxjobs.kubeflow.org" denied the request' not in invalid.stderr:
        raise StepError(f"an invalid MXJob was not refused by the webhook: {invalid.stderr}")
    admission = "/apis/admissionregistration.k8s.io/v1"
    for path in (
        f"{admission}/mutatingwebhookconfigurations/zz-mxjob-operator-mutating",
        f"{admission}/validatingwebhookconfigurations/mxjob-operator-validating",
    ):
        if not all(w.get("matchConditions") for w in api.request("GET", path)["webhooks"]):
            raise StepError(f"{path}: the API server dropped the matchConditions")
    crd = api.request(
        "GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/mxjobs.kubeflow.org"
    )
    (v1,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    rules = v1["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"]
    if not any(r.get("reason") == "FieldValueForbidden" and r.get("fieldPath") for r in rules):
        raise StepError(f"the API server dropped the CRD rules' reason and fieldPath: {rules}")


def run_a_job(plane: ControlPlane, api: Api) -> None:
    created = kubectl_create(plane, mxjob("runs"))
    if created.returncode != 0:
        raise StepError(f"a valid MXJob was refused: {created.stderr}")
    path = f"/apis/kubeflow.org/v1/namespaces/{JOBS}/mxjobs/runs"
    job = api.request("GET", path)
    if "mxjob-port" not in json.dumps(job["spec"]):
        raise StepError("the MXJob was not defaulted by the webhook")
    wait("the MXJob's pod made by the controller",
         lambda: bool(api.request("GET", f"/api/v1/namespaces/{JOBS}/pods")["items"]),
         timeout=90)  # fmt: skip
    wait("the MXJob Succeeded",
         lambda: (api.request("GET", path).get("status") or {}).get("state") == "Succeeded",
         timeout=120)  # fmt: skip


def check_native_gang(plane: ControlPlane, api: Api, version: str) -> None:
    """The gang objects of a job with topology and priority, as the API server kept them."""
    gang = f"/apis/scheduling.k8s.io/{GANG_APIS[version]}/namespaces/{JOBS}"
    api.request("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", body={
        "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
        "metadata": {"name": "gang-high"}, "value": 1000})  # fmt: skip
    job = mxjob("gang")
    job["spec"]["runPolicy"] = {
        "schedulingPolicy": {"topologyKey": RACK, "priorityClass": "gang-high"}
    }
    created = kubectl_create(plane, job)
    if created.returncode != 0:
        raise StepError(
            f"an MXJob with topologyKey and priorityClass was refused: {created.stderr}"
        )
    wait("the job's PodGroup", lambda: bool(api.request("GET", f"{gang}/podgroups")["items"]),
         timeout=90)  # fmt: skip
    spec = api.request("GET", f"{gang}/podgroups/gang")["spec"]
    template = api.request("GET", f"{gang}/workloads/gang")["spec"]["podGroupTemplates"][0]
    wanted = {
        "schedulingPolicy": {"gang": {"minCount": 1}},
        "schedulingConstraints": {"topology": [{"key": RACK}]},
        "priorityClassName": "gang-high",
        "disruptionMode": {"all": {}},
    }
    for where, part in (("PodGroup", spec), ("Workload template", template)):
        lost = {k: v for k, v in wanted.items() if part.get(k) != v}
        if lost:
            raise StepError(f"the {where} did not keep {lost}: {part}")
    if spec.get("workloadRef") != {"workloadName": "gang", "templateName": "replicas"}:
        raise StepError(f"the PodGroup's workloadRef: {spec.get('workloadRef')}")
    if spec.get("priority") != 1000:
        raise StepError(f"the Priority admission plugin did not fill in priority: {spec}")
    events = api.request("GET", f"/api/v1/namespaces/{JOBS}/events",
                         query=[("fieldSelector", "reason=GangFieldNotKept")])["items"]  # fmt: skip
    if events:
        raise StepError(f"the controller said a field was not kept: {events[0]['message']}")


def run_version(version: str, state_dir: Path, binary: Path, out: Any) -> Result:
    result = Result(version)
    step = STEPS[0]
    try:
        started = time.monotonic()
        apiserver = build_apiserver(version)
        result.seconds[step] = time.monotonic() - started
        with plane_with(version, apiserver, state_dir) as plane:
            api = Api.from_kubeconfig(plane.kubeconfig)
            result.served = str(api.request("GET", "/version")["gitVersion"])
            out.write(f"{version}: kube-apiserver {result.served} serving\n")
            ensure_namespace(api, JOBS)
            actions: tuple[Callable[[], None], ...] = (
                lambda: install(plane, binary, state_dir),
                lambda: check_refusals(plane, api),
                lambda: run_a_job(plane, api),
            )
            if version in GANG_APIS:
                actions = (*actions, lambda: check_native_gang(plane, api, version))
            for step, action in zip(STEPS[1:], actions, strict=False):
                started = time.monotonic()
                action()
                result.seconds[step] = time.monotonic() - started
                out.write(f"{version}: {step}: {result.seconds[step]:.1f} s\n")
    except (StepError, ControlPlaneError, ApiError, subprocess.SubprocessError, OSError) as error:
        result.failed = f"{step}: {error}"
        out.write(f"{version}: FAILED at {result.failed}\n")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m localkube.scenarios.kube_versions", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    default = " ".join(VERSIONS)
    parser.add_argument("--version", action="append", dest="versions",
                        help=f"a kube-apiserver release (default: {default})")  # fmt: skip
    parser.add_argument("--state-dir", type=Path,
                        default=PROJECT_ROOT / ".local" / "kube-versions")  # fmt: skip
    args = parser.parse_args(argv)
    binary = helm.binary()
    out = sys.stdout
    results = [
        run_version(version, args.state_dir / version, binary, out)
        for version in args.versions or VERSIONS
    ]
    out.write("\n| kube-apiserver | served | " + " | ".join(STEPS) + " | result |\n")
    for r in results:
        figures = " | ".join(f"{r.seconds[s]:.1f} s" if s in r.seconds else "-" for s in STEPS)
        out.write(f"| {r.version} | {r.served} | {figures} | {r.failed or 'passed'} |\n")
    return 1 if any(r.failed for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
