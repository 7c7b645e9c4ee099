"""training-operator v1.8.1's own MXJob test cases, fed to this operator's admission.

Transcribed from its ``pkg/apis/kubeflow.org/v1/mxnet_validation_test.go`` (TestValidateV1MXJob,
which its controller runs on every reconcile; its webhook only warns that MXJob is deprecated)
and the job of ``pkg/controller.v1/mxnet/mxjob_controller_test.go``. What it accepts we accept,
what it refuses we refuse at admission (with a message), except one case, on purpose: a sole
container without a name is named ``mxnet`` by our defaults instead of failing (docs/migrating.md).
"""

from __future__ import annotations

from typing import Any, cast

import jsonpatch
import pytest

from tests.helpers.mxjobs import container, mxjob, replica
from tests.webhook.reviews_samples import admission_review, decode_patch
from webhook.admission import mutate, validate
from webhook.reviews import AdmissionRequest

Job = dict[str, Any]


IMAGE = "mxjob/mxnet"
"""The image of training-operator's cases."""
TRAIN_ARGS = [
    "/incubator-mxnet/example/image-classification/train_mnist.py",
    "--num-epochs=10",
    "--num-layers=2",
    "--kv-store=dist_device_sync",
]
VALID_SPECS: Job = {
    "Scheduler": replica(1, restart_policy="Never", containers=[container(image=IMAGE)]),
    "Server": replica(1, restart_policy="Never", containers=[container(image=IMAGE)]),
    "Worker": replica(
        1,
        restart_policy="Never",
        containers=[container(image=IMAGE, command=["python"], args=TRAIN_ARGS)],
    ),
}

PORT = {"name": "mxjob-port", "containerPort": 9091, "protocol": "TCP"}
CONTROLLER_TEST_SPECS: Job = {
    rtype: replica(count, containers=[container(image="test-image", ports=[PORT])])
    for rtype, count in (("Server", 1), ("Scheduler", 1), ("Worker", 2))
}


def _job(name: str, specs: Job | None) -> Job:
    """A case's job: in namespace ``ns``, no jobMode, ``specs`` (None: no mxReplicaSpecs)."""
    return mxjob(name, namespace="ns", mode=None, replicas=specs)


def _only_worker(sole: Job) -> Job:
    return {"Worker": replica(None, containers=[sole])}


ACCEPTED = {
    "valid mxJob": _job("test", VALID_SPECS),
    "the controller test's job": _job("test-job", CONTROLLER_TEST_SPECS),
    # training-operator refuses this one ("MXJobSpec is not valid"); we name the container.
    "mxnet default container name doesn't find": _job(
        "test", _only_worker(container("", image=IMAGE))
    ),
}
REFUSED = {
    "mxReplicaSpecs is nil": (_job("test", None), "spec.mxReplicaSpecs"),
    "mxJob name does not meet DNS1035": (_job("10test", VALID_SPECS), "metadata.name"),
    "no containers": (
        _job("test", {"Worker": replica(None, containers=[])}),
        "containers",
    ),
    "image is empty": (_job("test", _only_worker(container(image=""))), "image"),
}


def _admit(job: Job) -> dict[str, Any]:
    """Mutate, then validate what mutation made of it, as the API server calls the webhooks."""
    request = cast(AdmissionRequest, admission_review(job)["request"])
    mutated = mutate(request)
    if not mutated["allowed"]:
        return dict(mutated)
    patched = jsonpatch.apply_patch(job, decode_patch(mutated))
    return dict(validate(cast(AdmissionRequest, admission_review(patched)["request"])))


@pytest.mark.parametrize("case", ACCEPTED)
def test_what_training_operator_accepts_is_admitted(case: str) -> None:
    answer = _admit(ACCEPTED[case])
    assert answer["allowed"] is True, answer.get("status")


ADDED_ONLY = {"/spec/jobMode", "/spec/runPolicy"} | {
    f"/spec/mxReplicaSpecs/{rtype}/{field}"
    for rtype in VALID_SPECS
    for field in ("replicas", "restartPolicy", "restartScope")
}
"""What the mutating webhook adds to those jobs besides the mxnet container's port and env."""


@pytest.mark.parametrize("case", ["valid mxJob", "the controller test's job"])
def test_what_training_operator_accepts_only_gains_the_defaults(case: str) -> None:
    """Nothing the user wrote is replaced or removed: the patch adds the defaults (the run
    policy with its disruptionPolicy, each replica's restartScope) and the container's env."""
    job = ACCEPTED[case]
    request = cast(AdmissionRequest, admission_review(job)["request"])
    patch = decode_patch(mutate(request))
    assert {op["op"] for op in patch} == {"add"}
    containers = "/template/spec/containers/0/"
    other = {
        op["path"] for op in patch if op["path"] not in ADDED_ONLY and containers not in op["path"]
    }
    assert other == set()
    policy = next(op["value"] for op in patch if op["path"] == "/spec/runPolicy")
    assert policy == {"cleanPodPolicy": "Running", "backoffLimit": 6, "disruptionPolicy": "Ignore"}
    scopes = {op["value"] for op in patch if op["path"].endswith("/restartScope")}
    assert scopes == {"Job"}


@pytest.mark.parametrize("case", REFUSED)
def test_what_training_operator_refuses_is_refused_at_admission_naming_the_field(
    case: str,
) -> None:
    job, field = REFUSED[case]
    answer = _admit(job)
    assert answer["allowed"] is False
    assert field in answer["status"]["message"]
