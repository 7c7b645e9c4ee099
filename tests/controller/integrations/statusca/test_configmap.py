"""controller/integrations/statusca/configmap.py: a job's ConfigMap holds the CA as ca.crt, owned
by the job, and is put back when its CA differs."""

from __future__ import annotations

from controller.integrations.statusca.configmap import build_configmap, configmap_update
from controller.job.desired import job_labels
from tests.controller.samples import job, view_of

MNIST = view_of(job())
PEM = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def test_the_configmap_is_named_after_the_job_owned_by_it_and_holds_the_ca() -> None:
    made = build_configmap(MNIST, labels=job_labels(MNIST), ca=PEM)
    meta = made["metadata"]
    assert (meta["name"], meta["namespace"]) == ("mnist-status-ca", "ns")
    assert meta["labels"] == job_labels(MNIST)
    (owner,) = meta["ownerReferences"]
    assert (owner["kind"], owner["uid"], owner["controller"]) == ("MXJob", "job-uid", True)
    assert made["data"] == {"ca.crt": PEM.decode()}


def test_one_holding_the_ca_is_left_and_any_other_is_put_back() -> None:
    wanted = build_configmap(MNIST, labels=job_labels(MNIST), ca=PEM)
    stored = {**wanted, "metadata": {**wanted["metadata"], "resourceVersion": "7"}}
    assert configmap_update(stored, wanted) is None
    renewed = build_configmap(MNIST, labels=job_labels(MNIST), ca=b"NEW")
    update = configmap_update(stored, renewed)
    assert update is not None
    assert update["data"] == {"ca.crt": "NEW"}
    assert update["metadata"]["resourceVersion"] == "7", "written with the version read"
    edited = {**stored, "data": {"ca.crt": PEM.decode(), "extra": "x"}, "binaryData": {"b": ""}}
    put_back = configmap_update(edited, wanted)
    assert put_back is not None
    assert put_back["data"] == wanted["data"] and "binaryData" not in put_back
