"""kwok on the local control plane: simulated nodes whose pods live by declarative stages.

Why: a scale run needs thousands of pods placed by the real kube-scheduler and moved through
their phases, which the test kubelet (``localkube.kubelet.core``, one Python process that binds and
runs pods) cannot do at that size. kwok's ``kwok`` controller (built from the Go module proxy by
``hack/build-kwok.sh``, pinned in ``hack/kwok/go.mod``) is the tool Kubernetes' own scale tests
use: it manages the Nodes that carry :data:`NODE_ANNOTATION` and plays *stages* on them and
their pods, each a selector over the object and the status it gets next.

The stages (:func:`stages`):

- kwok's own ``fast`` node-initialize (a managed node becomes Ready with the capacity it was
  created with) and pod-delete (a deleted pod goes: kwok deletes it with grace 0; a finalizer
  keeps it until its owner lets go), read from the pinned module's ``kustomize/stage``;
- :data:`READY_STAGE`: kwok's fast pod-ready (a pod bound to a managed node becomes Running,
  every container running) without pod IPs;
- :data:`EXIT_STAGE`, this project's: a Running pod that carries :data:`EXIT_CODE_ANNOTATION`
  ends with every container terminated with that exit code, ``Succeeded`` for 0 and ``Failed``
  otherwise. The controller reads exit codes from ``containerStatuses``
  (``controller/job/observed.py``), so the driver decides how each pod ends by annotating it.

No node heartbeats: this plane runs no node-lifecycle controller, so nothing would mark a silent
node NotReady, and heartbeats would only add writes to what is measured.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from localkube.base import programs
from localkube.base.api import AlreadyExists, Api
from localkube.base.paths import PROJECT_ROOT
from localkube.base.ports import free_port
from localkube.plane.controlplane import ControlPlane
from localkube.thirdparty.base import GoModulePin

PIN: Final = GoModulePin(
    module="sigs.k8s.io/kwok",
    version_variable="KWOK_VERSION",
    module_dir=PROJECT_ROOT / "hack" / "kwok",
    build_script=PROJECT_ROOT / "hack" / "build-kwok.sh",
)
"""Built by ``hack/build-kwok.sh`` (about a minute or two the first time); its stages are read
from the module's ``kustomize/stage``."""
version = PIN.version
module_source = PIN.module_source
NODE_ANNOTATION: Final = "kwok.x-k8s.io/node"
NODE_ANNOTATION_VALUE: Final = "fake"
EXIT_CODE_ANNOTATION: Final = "localkube.mxjob.io/exit-code"
"""Set on a Running pod of a kwok node: its containers end with this exit code."""
KWOK_STAGES: Final = ("node/fast/node-initialize", "pod/fast/pod-delete")
POD_CIDR: Final = "10.128.0.1/14"
"""kwok hands pod IPs out of this range (its default /24 runs out after 254 pods)."""
PODS_PER_NODE: Final = 110
"""A kubelet's default ``maxPods``: nodes are sized as a real cluster's would be."""

READY_STAGE: Final[dict[str, Any]] = {
    "apiVersion": "kwok.x-k8s.io/v1alpha1",
    "kind": "Stage",
    "metadata": {"name": "pod-ready"},
    "spec": {
        "resourceRef": {"apiGroup": "v1", "kind": "Pod"},
        "selector": {
            "matchExpressions": [
                {"key": ".metadata.deletionTimestamp", "operator": "DoesNotExist"},
                {"key": ".status.phase", "operator": "In", "values": ["Pending"]},
            ]
        },
        "next": {
            "statusTemplate": """\
{{ $now := Now }}
conditions:
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: Initialized
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: Ready
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: ContainersReady
containerStatuses:
{{ range .spec.containers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: true
  restartCount: 0
  started: true
  state:
    running:
      startedAt: {{ $now | Quote }}
{{ end }}
phase: Running
startTime: {{ $now | Quote }}
"""
        },
    },
}
"""kwok's fast pod-ready stage without the pod IPs: kwok hands out an IP on every attempt, so
a status patch retried after a conflict carries a second IP of the same family, which the API
server refuses, and the pod stays Pending for good (1,495 refusals in a 20,000-pod run). Nothing
here reads pod IPs."""

EXIT_STAGE: Final[dict[str, Any]] = {
    "apiVersion": "kwok.x-k8s.io/v1alpha1",
    "kind": "Stage",
    "metadata": {"name": "pod-exit"},
    "spec": {
        "resourceRef": {"apiGroup": "v1", "kind": "Pod"},
        "selector": {
            "matchExpressions": [
                {"key": ".metadata.deletionTimestamp", "operator": "DoesNotExist"},
                {"key": ".status.phase", "operator": "In", "values": ["Running"]},
                {
                    "key": f'.metadata.annotations["{EXIT_CODE_ANNOTATION}"]',
                    "operator": "Exists",
                },
            ]
        },
        "next": {
            "statusTemplate": f"""\
{{{{ $now := Now }}}}
{{{{ $code := index .metadata.annotations "{EXIT_CODE_ANNOTATION}" }}}}
{{{{ $root := . }}}}
conditions:
- lastTransitionTime: {{{{ $now | Quote }}}}
  status: "False"
  type: Ready
  reason: PodCompleted
- lastTransitionTime: {{{{ $now | Quote }}}}
  status: "False"
  type: ContainersReady
  reason: PodCompleted
containerStatuses:
{{{{ range $index, $item := .spec.containers }}}}
- image: {{{{ $item.image | Quote }}}}
  name: {{{{ $item.name | Quote }}}}
  ready: false
  restartCount: 0
  started: false
  state:
    terminated:
      exitCode: {{{{ $code }}}}
      finishedAt: {{{{ $now | Quote }}}}
      reason: {{{{ if eq $code "0" }}}}Completed{{{{ else }}}}Error{{{{ end }}}}
      startedAt: {{{{ or $root.status.startTime $now | Quote }}}}
{{{{ end }}}}
phase: {{{{ if eq $code "0" }}}}Succeeded{{{{ else }}}}Failed{{{{ end }}}}
"""
        },
    },
}


def build() -> Path:
    """The ``kwok`` binary, built the first time, cached per machine."""
    return PIN.build()


def stages() -> list[dict[str, Any]]:
    """kwok's own fast node-initialize and pod-delete stages, :data:`READY_STAGE` and
    :data:`EXIT_STAGE`."""
    root = module_source() / "kustomize" / "stage"
    own = [yaml.safe_load((root / f"{name}.yaml").read_text()) for name in KWOK_STAGES]
    return [*own, READY_STAGE, EXIT_STAGE]


def node(
    name: str,
    *,
    pods: int = PODS_PER_NODE,
    cpu: str = "64",
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A Node kwok manages, with room for ``pods`` pods and ``cpu`` CPUs (memory to spare),
    and ``labels`` beside its hostname (a topology's levels, say).

    A Node may be created with its status (the API server keeps it on create), which kwok's
    node-initialize stage keeps as the node's capacity.
    """
    resources = {"cpu": cpu, "memory": "256Gi", "pods": str(pods)}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {NODE_ANNOTATION: NODE_ANNOTATION_VALUE},
            "labels": {**(labels or {}), "kubernetes.io/hostname": name, "type": "kwok"},
        },
        "status": {"allocatable": resources, "capacity": dict(resources)},
    }


def nodes_for(pods: int, *, per_node: int = PODS_PER_NODE) -> int:
    """How many nodes of ``per_node`` pods hold ``pods`` pods, with one to spare."""
    return math.ceil(pods / per_node) + 1


class KwokError(RuntimeError):
    """kwok did not start, or its nodes did not become Ready; the message says why."""


def _ready(item: dict[str, Any]) -> bool:
    conditions = (item.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


@dataclass
class LocalKwok:
    """One ``kwok`` process against ``plane``, managing the nodes it is given."""

    plane: ControlPlane
    running: programs.Running | None = None

    @property
    def dir(self) -> Path:
        return self.plane.dir / "kwok"

    def start(self, *, timeout: float = 60, lease_seconds: int = 0) -> programs.Running:
        """Write the stages, start kwok and return once it answers ``/healthz``; stopped again
        when it does not. ``lease_seconds`` > 0: kwok renews each node's Lease, as a kubelet
        does, for a plane whose node lifecycle controller would otherwise find the nodes
        silent and evict their pods; 0 (a plane without it): no heartbeats at all."""
        binary = build()
        self.dir.mkdir(parents=True, exist_ok=True)
        config = self.dir / "stages.yaml"
        config.write_text(yaml.safe_dump_all(stages(), sort_keys=False))
        port = free_port()
        argv = [
            str(binary),
            f"--kubeconfig={self.plane.kubeconfig}",
            f"--config={config}",
            f"--manage-nodes-with-annotation-selector={NODE_ANNOTATION}={NODE_ANNOTATION_VALUE}",
            f"--cidr={POD_CIDR}",
            f"--server-address=127.0.0.1:{port}",
            f"--node-lease-duration-seconds={lease_seconds}",
            "--v=WARN",
        ]
        program = programs.Program("kwok", argv, self.plane.logs / "kwok.log", cwd=self.dir)
        self.running = programs.start(program)
        try:
            programs.wait_ready(
                self.running,
                lambda: programs.answers_200(f"http://127.0.0.1:{port}/healthz"),
                what="kwok's /healthz",
                timeout=timeout,
                error=KwokError,
                interval=0.2,
            )
        except KwokError:
            self.stop()
            raise
        return self.running

    def add_nodes(
        self, api: Api, count: int, *, prefix: str = "kwok-node", timeout: float = 120
    ) -> list[str]:
        """Create ``count`` nodes for kwok and wait until every one is Ready; return their names."""
        made = [node(f"{prefix}-{number}") for number in range(count)]
        return self.add(api, made, timeout=timeout)

    def add(self, api: Api, nodes: Sequence[dict[str, Any]], *, timeout: float = 120) -> list[str]:
        """Create these Nodes (:func:`node`) and wait until every one is Ready; their names."""
        names = [str(made["metadata"]["name"]) for made in nodes]
        count = len(names)
        for made in nodes:
            with contextlib.suppress(AlreadyExists):
                api.request("POST", "/api/v1/nodes", body=made)
        deadline = time.monotonic() + timeout
        while True:
            listed = api.request("GET", "/api/v1/nodes", query=[("labelSelector", "type=kwok")])
            ready = {item["metadata"]["name"] for item in listed.get("items", []) if _ready(item)}
            if ready >= set(names):
                break
            if time.monotonic() > deadline:
                raise KwokError(
                    f"{len(set(names) - ready)} of {count} kwok nodes not Ready "
                    f"after {timeout:.0f} s"
                )
            time.sleep(0.5)
        # The API server taints a new Node not-ready; the node lifecycle controller (not run
        # here) lifts the taint once the node reports Ready, which is what kube-scheduler waits
        # for.
        for name in names:
            api.request(
                "PATCH",
                f"/api/v1/nodes/{name}",
                body={"spec": {"taints": None}},
                content_type="application/merge-patch+json",
            )
        return names

    def stop(self) -> None:
        """Stop kwok (with anything it started), waiting until it is gone."""
        if self.running is not None:
            self.running.stop()
            self.running = None
