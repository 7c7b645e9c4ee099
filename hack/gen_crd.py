"""Generate the MXJob CRD ``manifests/crd/mxjobs.kubeflow.org.yaml`` from the API's OpenAPI.

Why generated: the pod template part of the schema must match the Kubernetes release exactly
(``kubectl explain mxjob.spec.mxReplicaSpecs.template.spec.containers`` must work: explain steps
into a map's values without naming a key), and hand-writing thousands of lines of PodTemplateSpec
schema would drift. The script reads
``/openapi/v3/api/v1`` from a running kube-apiserver of the pinned release (it starts a throwaway
local control plane when none is given), inlines every ``$ref`` into a structural schema, and adds
the MXJob fields, which are written here once and read from ``shared.constants``.

Run: ``make crd`` (or ``python hack/gen_crd.py [--kubeconfig PATH] [--check]``).
"""

from __future__ import annotations

import argparse
import copy
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

from gen_crd_columns import PRINTER_COLUMNS
from gen_crd_openapi import Inliner
from gen_crd_rules import spec_rules
from gen_crd_status import non_negative as _non_negative
from gen_crd_status import status_schema
from gen_crd_status import text as _text
from localkube.base.api import Api
from localkube.base.paths import PROJECT_ROOT
from localkube.plane.controlplane import ControlPlane
from localkube.plane.settings import ControlPlaneSettings
from shared.constants import (
    GROUP,
    KIND,
    PLURAL,
    SHORT_NAME,
    SINGULAR,
    V1,
    V1BETA1,
    CleanPodPolicy,
    DisruptionPolicy,
    JobMode,
    RestartPolicy,
    RestartScope,
)

OUTPUT = PROJECT_ROOT / "manifests" / "crd" / "mxjobs.kubeflow.org.yaml"


def _enum(values: list[str], description: str) -> dict[str, Any]:
    return {"type": "string", "enum": values, "description": description}


RUN_POLICY_FIELDS: dict[str, dict[str, Any]] = {
    "cleanPodPolicy": _enum(
        [p.value for p in CleanPodPolicy],
        "Which pods to delete when the job finishes: All, Running (default; finished pods stay "
        "for `kubectl logs`) or None.",
    ),
    "ttlSecondsAfterFinished": _non_negative(
        "Seconds after the job finished before the MXJob itself is deleted; unset keeps it."
    ),
    "activeDeadlineSeconds": {
        **_non_negative("Seconds from the job's start after which it fails (DeadlineExceeded)."),
        "format": "int64",
    },
    "backoffLimit": _non_negative(
        "Restarts allowed before the job fails (BackoffLimitExceeded); default 6. A restart "
        "caused by a disruption counts only under disruptionPolicy Count."
    ),
}


def _run_policy() -> dict[str, Any]:
    return {
        "type": "object",
        "description": "How the job runs: cleanup, deadlines, retries, suspension.",
        "properties": {
            **copy.deepcopy(RUN_POLICY_FIELDS),
            "suspend": {
                "type": "boolean",
                "description": "true deletes the job's pods and services; false resumes it.",
            },
            "managedBy": {
                "type": "string",
                "description": "The controller that manages this job; empty means this operator.",
            },
            "progressDeadlineSeconds": {
                "type": "integer",
                "format": "int32",
                "minimum": 1,
                "description": "Opt-in hang detection, as a Deployment's: a Running job whose "
                "pods sent no progress report (status.trainerStatus) for this many seconds gets "
                "Progressing False (ProgressDeadlineExceeded) and is restarted as a whole, "
                "counted against backoffLimit. The clock runs only once the job has reported "
                "at least once, from the later of its newest report and its attempt's start: a "
                "job that never reports is never restarted by it. Unset: no deadline.",
            },
            "disruptionPolicy": _enum(
                [p.value for p in DisruptionPolicy],
                "Whether a restart caused by a disruption (a pod ended with the DisruptionTarget "
                "condition: drain, preemption, taint eviction) counts against backoffLimit: "
                "Ignore (default) or Count.",
            ),
            "schedulingPolicy": {
                "type": "object",
                "description": (
                    "Gang scheduling, with training-operator v1.8's field meanings: the "
                    "controller's --gang-scheduler (native Workload API, volcano, "
                    "scheduler-plugins or none) places "
                    "minAvailable pods (default: every replica) together; "
                    "docs/how-to/gang-scheduling.md."
                ),
                "properties": {
                    "priorityClass": {
                        "type": "string",
                        "description": (
                            "The gang's PriorityClass (volcano: the PodGroup's; native: the "
                            "PodGroup's, with disruptionMode PodGroup: preempted whole or not "
                            "at all)."
                        ),
                    },
                    "topologyKey": {
                        "type": "string",
                        "description": (
                            "native only: a node-label key (e.g. topology.kubernetes.io/rack); "
                            "every pod of the gang is placed in one domain of it."
                        ),
                    },
                },
                "x-kubernetes-preserve-unknown-fields": True,
            },
        },
    }


def _replica_spec(template: dict[str, Any], *, with_label: bool) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "replicas": _non_negative("Number of pods of this replica type; default 1."),
        "restartPolicy": _enum(
            [p.value for p in RestartPolicy],
            "Always/OnFailure: the kubelet restarts the container in place; Never: a failure "
            "fails the job; ExitCode (default): the operator recreates the pod when the mxnet "
            "container's exit code is retryable (128+signal) and fails the job otherwise.",
        ),
        "restartScope": _enum(
            [s.value for s in RestartScope],
            "What a retryable end of this replica restarts: Job (every pod ends, then all are "
            "made again as a new attempt; the default of MXTrain replicas, which ps-lite cannot "
            "take back alone) or Replica (its pod alone is made again; the default of MXTune "
            "replicas). The Scheduler is always Job.",
        ),
        "template": copy.deepcopy(template),
    }
    if with_label:
        properties["label"] = {
            "type": "string",
            "description": "The TVM tuner-server key (MXTune TunerServer only).",
        }
    return {"type": "object", "properties": properties}


def _replica_specs(replica: dict[str, Any]) -> dict[str, Any]:
    """The replica map: one schema for every key, so the pod template is written out once.

    `additionalProperties` rather than a property per replica type: the CRD carries the pod
    template schema once per version instead of six times, which keeps it small enough for a
    client-side `kubectl apply` (its last-applied annotation is limited to 256 KiB). Every key's
    value is pruned and validated with the same schema, so a non-canonical key (`worker`) keeps
    its fields until the mutating webhook rewrites it; the validating webhook then rejects any key
    that is not a replica type of the job's mode (`shared/validation.py`).
    """
    return {
        "type": "object",
        "description": (
            "The replica types of the job, keyed by type: Scheduler, Server, Worker (MXTrain) or "
            "TunerTracker, TunerServer, Tuner (MXTune). Keys are matched case-insensitively."
        ),
        "additionalProperties": {
            **copy.deepcopy(replica),
            "description": "One replica type: how many pods, how they restart, their template.",
        },
    }


def _opaque_template() -> dict[str, Any]:
    """v1beta1's pod template: kept whole and checked after conversion to v1.

    The webhooks see every object as v1 (matchPolicy Equivalent) and storage prunes it with the
    complete v1 schema, so repeating the pod template schema here would only double the CRD.
    """
    return {
        "type": "object",
        "description": "The pod template (see the v1 schema for its fields).",
        "x-kubernetes-preserve-unknown-fields": True,
    }


def _common_spec_fields() -> dict[str, Any]:
    return {
        "jobMode": {
            **_enum(
                ["", *(m.value for m in JobMode)],
                'MXTrain (default; also what absent or "" means): distributed training '
                "(Scheduler, Server, Worker). MXTune: TVM auto-tuning (TunerTracker, TunerServer, "
                "Tuner).",
            ),
            # Absent on read too: jobs stored by training-operator, whose CRD had it optional.
            "default": JobMode.MXTRAIN.value,
        },
        "managedBy": {
            "type": "string",
            "description": (
                "kueue.x-k8s.io/multikueue: MultiKueue runs the job in a worker cluster (the "
                "path MultiKueue reads); any other controller goes in runPolicy.managedBy. "
                "Immutable."
            ),
        },
        "successPolicy": _enum(
            ["", "AllWorkers"],
            '"" (default): the Scheduler\'s exit 0 decides success; AllWorkers: all Workers must '
            "exit 0.",
        ),
    }


# What every Kubernetes object has, described as controller-gen describes it (shortened).
OBJECT_FIELDS: dict[str, dict[str, Any]] = {
    "apiVersion": _text(
        "APIVersion defines the versioned schema of this representation of an object: "
        "kubeflow.org/v1 (or kubeflow.org/v1beta1)."
    ),
    "kind": _text("Kind is the REST resource this object represents: MXJob."),
    # The API server refuses a CRD whose schema says anything of metadata but its type
    # ("must not specify anything other than name and generateName"), a description included.
    "metadata": {"type": "object"},
}


def _version_schema(version: str, template: dict[str, Any]) -> dict[str, Any]:
    if version == V1:
        spec_properties = {
            **_common_spec_fields(),
            "mxReplicaSpecs": _replica_specs(_replica_spec(template, with_label=False)),
            "runPolicy": _run_policy(),
            # The standalone operator's v1 shape: accepted, moved under runPolicy by the webhook.
            **{
                name: {**copy.deepcopy(schema), "description": f"Deprecated: use runPolicy.{name}."}
                for name, schema in RUN_POLICY_FIELDS.items()
            },
        }
        replica_statuses_key = "replicaStatuses"
    else:
        spec_properties = {
            **_common_spec_fields(),
            "mxReplicaSpecs": _replica_specs(_replica_spec(_opaque_template(), with_label=True)),
            **copy.deepcopy(RUN_POLICY_FIELDS),
        }
        replica_statuses_key = "mxReplicaStatuses"
    return {
        "openAPIV3Schema": {
            "type": "object",
            "description": "MXJob runs a distributed MXNet training job or a TVM auto-tuning job.",
            "properties": {
                **copy.deepcopy(OBJECT_FIELDS),
                "spec": {
                    "type": "object",
                    "description": "What to run.",
                    "required": ["mxReplicaSpecs"],
                    "properties": spec_properties,
                    "x-kubernetes-validations": spec_rules(),
                },
                "status": status_schema(replica_statuses_key=replica_statuses_key),
            },
        }
    }


def build_crd(core_openapi: dict[str, Any]) -> dict[str, Any]:
    template = Inliner(core_openapi["components"]["schemas"]).inline(
        "io.k8s.api.core.v1.PodTemplateSpec"
    )
    template["description"] = "The pod template of every replica of this type."
    # Ephemeral containers cannot be set when a pod is created (only through the pods/ephemeral
    # subresource), so a template never carries them: no need to spend CRD size on their schema.
    template["properties"]["spec"]["properties"]["ephemeralContainers"] = {
        "type": "array",
        "description": "Not settable in a pod template.",
        "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    }
    # v1 alone is served, as training-operator served it: a second served version costs a
    # conversion review per MXJob write (its own watch cache). manifests/components/v1beta1
    # serves v1beta1 too; it stays in the CRD, converted, for objects an older install stored.
    versions = []
    for version in (V1, V1BETA1):
        versions.append(
            {
                "name": version,
                "served": version == V1,
                "storage": version == V1,
                "schema": _version_schema(version, template),
                "subresources": {"status": {}},
                "additionalPrinterColumns": copy.deepcopy(PRINTER_COLUMNS),
            }
        )
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{PLURAL}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "names": {
                "kind": KIND,
                "listKind": f"{KIND}List",
                "plural": PLURAL,
                "singular": SINGULAR,
                "shortNames": [SHORT_NAME],
                "categories": ["kubeflow"],
            },
            "scope": "Namespaced",
            "conversion": {
                "strategy": "Webhook",
                "webhook": {
                    "conversionReviewVersions": ["v1"],
                    "clientConfig": {
                        "service": {
                            "namespace": "mxjob-system",
                            "name": "mxjob-webhook",
                            "path": "/convert",
                            "port": 443,
                        }
                    },
                },
            },
            "versions": versions,
        },
    }


def render(crd: dict[str, Any]) -> str:
    header = (
        "# Generated by hack/gen_crd.py from the pinned kube-apiserver's OpenAPI. Do not edit:\n"
        "# change hack/gen_crd.py and run `make crd`.\n"
    )
    return header + yaml.safe_dump(crd, sort_keys=False, width=100)


def fetch_core_openapi(kubeconfig: Path | None) -> dict[str, Any]:
    if kubeconfig is not None:
        return dict(Api.from_kubeconfig(kubeconfig).request("GET", "/openapi/v3/api/v1"))
    with tempfile.TemporaryDirectory(prefix="gen-crd-") as directory:
        plane = ControlPlane(ControlPlaneSettings(state_dir=Path(directory)))
        try:
            plane.up()
            return dict(Api.from_kubeconfig(plane.kubeconfig).request("GET", "/openapi/v3/api/v1"))
        finally:
            plane.down()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--kubeconfig", type=Path, help="a running API server of the pinned release"
    )
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--check", action="store_true", help="fail when the file is out of date")
    args = parser.parse_args(argv)
    text = render(build_crd(fetch_core_openapi(args.kubeconfig)))
    if args.check:
        current = args.output.read_text() if args.output.exists() else ""
        if current != text:
            print(f"{args.output} is out of date: run `make crd`", file=sys.stderr)
            return 1
        return 0
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)
    print(f"wrote {args.output} ({len(text) // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
