"""CRD conversion: ConversionReview answers, in process and through POST /convert."""

from __future__ import annotations

import copy
import json
from typing import Any

from flask.testing import FlaskClient
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.defaults import apply_defaults
from tests.webhook.reviews_samples import conversion_review
from webhook.app import CONVERT_PATH
from webhook.conversion_review import convert_review
from webhook.reviews import ConversionRequest, ConversionResponse

Job = dict[str, Any]


def _request(objects: list[Job], desired: str, *, uid: str = "c-1") -> ConversionRequest:
    return ConversionRequest(uid=uid, desiredAPIVersion=desired, objects=objects)


def _convert_over_http(client: FlaskClient, objects: list[Job], desired: str) -> ConversionResponse:
    review = conversion_review(objects, desired_api_version=desired, uid="http-uid")
    http = client.post(CONVERT_PATH, data=json.dumps(review), content_type="application/json")
    assert http.status_code == 200
    document = http.get_json()
    assert isinstance(document, dict)
    assert document["apiVersion"] == "apiextensions.k8s.io/v1"
    assert document["kind"] == "ConversionReview"
    response: ConversionResponse = document["response"]
    assert response["uid"] == "http-uid"
    return response


def test_the_seed_job_converts_to_v1_and_back_identically(
    client: FlaskClient, seed_v1beta1: Job
) -> None:
    to_v1 = _convert_over_http(client, [seed_v1beta1], "kubeflow.org/v1")
    assert to_v1["result"] == {"status": "Success"}
    (v1,) = to_v1["convertedObjects"]
    assert v1["apiVersion"] == "kubeflow.org/v1"
    assert v1["spec"]["runPolicy"]["cleanPodPolicy"] == "All"
    assert "cleanPodPolicy" not in v1["spec"]
    back = _convert_over_http(client, [v1], "kubeflow.org/v1beta1")
    assert back["result"] == {"status": "Success"}
    assert back["convertedObjects"] == [seed_v1beta1]


def test_the_tuner_server_key_becomes_the_v1beta1_label_and_back(
    client: FlaskClient, tune_job: Job
) -> None:
    (v1beta1,) = _convert_over_http(client, [tune_job], "kubeflow.org/v1beta1")["convertedObjects"]
    assert v1beta1["spec"]["mxReplicaSpecs"]["TunerServer"]["label"] == "2080ti"
    (v1,) = _convert_over_http(client, [v1beta1], "kubeflow.org/v1")["convertedObjects"]
    assert v1 == tune_job


def _tracker_env(job: Job, replica_type: str) -> dict[str, str]:
    template = job["spec"]["mxReplicaSpecs"][replica_type]["template"]
    [container] = template["spec"]["containers"]
    return {e["name"]: e["value"] for e in container["env"] if e["name"].startswith("TVM_")}


def test_the_injected_tracker_env_survives_v1beta1_and_back(
    client: FlaskClient, tune_job: Job
) -> None:
    defaulted = apply_defaults(tune_job)
    (v1beta1,) = _convert_over_http(client, [defaulted], "kubeflow.org/v1beta1")["convertedObjects"]
    # In v1beta1 the key is the replica's label; the env still names it.
    assert v1beta1["spec"]["mxReplicaSpecs"]["TunerServer"]["label"] == "2080ti"
    for replica_type in ("TunerServer", "Tuner"):
        assert _tracker_env(v1beta1, replica_type) == {
            "TVM_TRACKER_HOST": "auto-tuning-job-tunertracker-0",
            "TVM_TRACKER_PORT": "9091",
            "TVM_TRACKER_KEY": "2080ti",
        }
    (v1,) = _convert_over_http(client, [v1beta1], "kubeflow.org/v1")["convertedObjects"]
    assert v1 == defaulted
    assert apply_defaults(v1) == v1  # nothing for defaulting to recompute


def test_a_v1beta1_label_becomes_the_tracker_key_a_tuner_reads(
    client: FlaskClient, tune_job: Job
) -> None:
    (v1beta1,) = _convert_over_http(client, [tune_job], "kubeflow.org/v1beta1")["convertedObjects"]
    v1beta1["spec"]["mxReplicaSpecs"]["TunerServer"]["label"] = "v100"
    (v1,) = _convert_over_http(client, [v1beta1], "kubeflow.org/v1")["convertedObjects"]
    assert _tracker_env(apply_defaults(v1), "Tuner")["TVM_TRACKER_KEY"] == "v100"


def test_objects_keep_their_order_and_those_already_converted_pass_through(
    seed_job: Job, seed_v1beta1: Job, tune_job: Job
) -> None:
    response = convert_review(_request([seed_v1beta1, tune_job, seed_v1beta1], "kubeflow.org/v1"))
    assert response["uid"] == "c-1"
    assert response["result"] == {"status": "Success"}
    first, second, third = response["convertedObjects"]
    assert second == tune_job  # already v1
    assert first == third
    assert first["spec"]["runPolicy"] == seed_job["spec"]["runPolicy"]


def test_an_unserved_desired_version_fails_with_a_reason(seed_job: Job) -> None:
    for desired in ("kubeflow.org/v2", "batch/v1", "v1", ""):
        response = convert_review(_request([seed_job], desired, uid="u"))
        assert response["uid"] == "u"
        assert response["convertedObjects"] == []
        assert response["result"]["status"] == "Failure"
        assert "desiredAPIVersion" in response["result"].get("message", "")


def test_an_object_that_is_not_a_served_mxjob_fails_naming_it(seed_job: Job) -> None:
    pod: Job = {"apiVersion": "v1", "kind": "Pod"}
    alien = copy.deepcopy(seed_job)
    alien["apiVersion"] = "kubeflow.org/v9"
    for objects, index in (([seed_job, pod], 1), ([alien], 0)):
        response = convert_review(_request(objects, "kubeflow.org/v1beta1"))
        assert response["result"]["status"] == "Failure"
        assert f"objects[{index}]" in response["result"].get("message", "")


def test_an_empty_request_succeeds_with_nothing(client: FlaskClient) -> None:
    response = _convert_over_http(client, [], "kubeflow.org/v1")
    assert response["result"] == {"status": "Success"}
    assert response["convertedObjects"] == []


_json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=5))
_json = st.recursive(
    _json_leaf,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=10,
)
_run_policy_fields = ["cleanPodPolicy", "backoffLimit", "ttlSecondsAfterFinished", "suspend"]


@st.composite
def _v1_jobs(draw: st.DrawFn) -> Job:
    replicas: Job = {}
    for key in draw(st.lists(st.sampled_from(["Scheduler", "Worker", "TunerServer"]), unique=True)):
        template: Job = {"spec": {"containers": [{"name": "mxnet", "image": "i"}]}}
        if draw(st.booleans()):
            annotations = draw(
                st.dictionaries(st.sampled_from(["tuner-server-key", "a"]), st.text(max_size=4))
            )
            template["metadata"] = {"annotations": annotations}
        replicas[key] = {"replicas": draw(st.integers(0, 3)), "template": template}
    spec: Job = {"jobMode": "MXTrain", "mxReplicaSpecs": replicas}
    if draw(st.booleans()):
        spec["runPolicy"] = draw(
            st.dictionaries(st.sampled_from(_run_policy_fields), _json, max_size=3)
        )
    if draw(st.booleans()):
        spec[draw(st.sampled_from(_run_policy_fields))] = draw(_json)
    job: Job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "MXJob",
        "metadata": {"name": "j"},
        "spec": spec,
    }
    if draw(st.booleans()):
        job["status"] = {
            "replicaStatuses": draw(st.dictionaries(st.sampled_from(["Worker"]), _json))
        }
    return job


@settings(max_examples=200, deadline=None)
@given(_v1_jobs())
def test_conversion_there_and_back_is_identical(job: Job) -> None:
    there = convert_review(_request([job], "kubeflow.org/v1beta1"))
    assert there["result"] == {"status": "Success"}
    back = convert_review(_request(there["convertedObjects"], "kubeflow.org/v1"))
    assert back["result"] == {"status": "Success"}
    assert back["convertedObjects"] == [job]
