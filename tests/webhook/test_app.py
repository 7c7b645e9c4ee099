"""The HTTP surface of the in-process app: status codes, bodies, health, metrics, logs."""

from __future__ import annotations

import base64
import copy
import json
import logging
from pathlib import Path
from typing import Any

import jsonpatch
import pytest
from flask import Flask
from flask.testing import FlaskClient
from hypothesis import given, settings
from hypothesis import strategies as st
from werkzeug.test import EnvironBuilder, TestResponse
from werkzeug.wrappers import Request

from certs import CertificateAuthority
from shared.defaults import apply_defaults
from shared.progress_pods import inject_progress
from tests.webhook.reviews_samples import admission_review
from tests.webhook.reviews_samples import conversion_review as make_conversion_review
from webhook import answers, conversion_review
from webhook.app import CONVERT_PATH, MUTATE_PATH, VALIDATE_PATH, create_app, webhook_state
from webhook.logconfig import fields_of
from webhook.reviews import Operation
from webhook.settings import MIB, WebhookSettings

REVIEW_PATHS = (MUTATE_PATH, VALIDATE_PATH, CONVERT_PATH)


def _post(client: FlaskClient, path: str, document: Any) -> TestResponse:
    return client.post(path, data=json.dumps(document), content_type="application/json")


def _response(http: TestResponse) -> dict[str, Any]:
    assert http.status_code == 200, http.get_data(as_text=True)
    assert http.mimetype == "application/json"
    document = http.get_json()
    assert isinstance(document, dict)
    assert document["apiVersion"] == "admission.k8s.io/v1"
    assert document["kind"] == "AdmissionReview"
    response = document["response"]
    assert isinstance(response, dict)
    return response


def _apply(obj: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
    assert response["patchType"] == "JSONPatch"
    operations = json.loads(base64.b64decode(response["patch"]))
    patched: dict[str, Any] = jsonpatch.apply_patch(obj, operations)
    return patched


def _count(app: Flask, **labels: str) -> float:
    value = webhook_state(app).metrics.registry.get_sample_value(
        "mxjob_webhook_reviews_total", labels
    )
    return 0.0 if value is None else value


# --- mutate / validate over HTTP -----------------------------------------------------------------


def test_mutating_the_seed_job_patches_in_its_defaults(
    client: FlaskClient, seed_job: dict[str, Any]
) -> None:
    review = admission_review(seed_job, uid="uid-mutate-1")
    response = _response(_post(client, MUTATE_PATH, review))
    assert response["uid"] == "uid-mutate-1"
    assert response["allowed"] is True
    patched = _apply(seed_job, response)
    expected = apply_defaults(seed_job)
    inject_progress(expected, operator_namespace="mxjob-system")
    assert patched == expected
    worker = patched["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    env = {entry["name"]: entry for entry in worker["env"]}
    assert env["DMLC_ROLE"]["value"] == "worker"
    assert env["DMLC_PS_ROOT_URI"]["value"] == "mxnet-job-scheduler-0"
    assert env["MXJOB_STATUS_URL"]["value"] == (
        "https://mxjob-controller-progress.mxjob-system.svc:8444"
        "/apis/kubeflow.org/v1/namespaces/default/mxjobs/mxnet-job/status"
    )
    assert patched["spec"]["runPolicy"]["backoffLimit"] == 6


@pytest.mark.parametrize(
    ("settings", "url"),
    [
        (WebhookSettings(operator_namespace="ops"), "https://mxjob-controller-progress.ops.svc"),
        (WebhookSettings(progress_reports=False), None),
    ],
    ids=["another-namespace", "off"],
)
def test_the_progress_env_follows_the_settings(
    settings: WebhookSettings, url: str | None, seed_job: dict[str, Any]
) -> None:
    client = create_app(settings=settings).test_client()
    response = _response(_post(client, MUTATE_PATH, admission_review(seed_job)))
    patched = _apply(seed_job, response)
    worker = patched["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]
    env = {entry["name"]: entry.get("value") for entry in worker["containers"][0]["env"]}
    if url is None:
        assert patched == apply_defaults(seed_job)
        assert "MXJOB_STATUS_URL" not in env
        return
    assert str(env["MXJOB_STATUS_URL"]).startswith(url + ":8444/")
    assert [volume["name"] for volume in worker["volumes"]] == ["mxjob-status"]


def test_a_second_mutation_yields_no_patch(client: FlaskClient, seed_job: dict[str, Any]) -> None:
    first = _response(_post(client, MUTATE_PATH, admission_review(seed_job)))
    patched = _apply(seed_job, first)
    second = _response(_post(client, MUTATE_PATH, admission_review(patched, uid="again")))
    assert second == {"uid": "again", "allowed": True}


def test_the_mutated_job_passes_validation(client: FlaskClient, seed_job: dict[str, Any]) -> None:
    patched = _apply(seed_job, _response(_post(client, MUTATE_PATH, admission_review(seed_job))))
    response = _response(_post(client, VALIDATE_PATH, admission_review(patched, uid="v")))
    assert response == {"uid": "v", "allowed": True}


def test_an_invalid_job_is_denied_naming_every_field(
    client: FlaskClient, seed_job: dict[str, Any]
) -> None:
    specs = seed_job["spec"]["mxReplicaSpecs"]
    specs["Scheduler"]["replicas"] = 2
    del specs["Worker"]["template"]["spec"]["containers"][0]["image"]
    for path in (MUTATE_PATH, VALIDATE_PATH):
        response = _response(_post(client, path, admission_review(seed_job, uid="bad")))
        assert response["uid"] == "bad"
        assert response["allowed"] is False
        assert "patch" not in response
        status = response["status"]
        assert (status["code"], status["reason"]) == (422, "Invalid")
        assert "spec.mxReplicaSpecs.Scheduler.replicas" in status["message"]
        assert "spec.mxReplicaSpecs.Worker.template.spec.containers[0].image" in status["message"]


# --- bodies that are not reviews -----------------------------------------------------------------


def _malformed_bodies() -> list[tuple[str, bytes]]:
    review = admission_review({"apiVersion": "kubeflow.org/v1", "kind": "MXJob"}, uid="u")
    no_uid = copy.deepcopy(review)
    no_uid["request"]["uid"] = 42
    no_object = copy.deepcopy(review)
    del no_object["request"]["object"]
    wrong_version = {**review, "apiVersion": "admission.k8s.io/v1beta1"}
    return [
        ("not JSON", b"{not json"),
        ("JSON array", b"[]"),
        (
            "missing request",
            json.dumps({k: v for k, v in review.items() if k != "request"}).encode(),
        ),
        ("uid not a string", json.dumps(no_uid).encode()),
        ("missing object", json.dumps(no_object).encode()),
        ("wrong apiVersion", json.dumps(wrong_version).encode()),
        ("empty", b""),
    ]


@pytest.mark.parametrize(("case", "body"), _malformed_bodies(), ids=lambda v: str(v)[:20])
@pytest.mark.parametrize("path", [MUTATE_PATH, VALIDATE_PATH])
def test_a_body_that_is_not_an_admission_review_is_a_400(
    app: Flask, client: FlaskClient, path: str, case: str, body: bytes
) -> None:
    http = client.post(path, data=body, content_type="application/json")
    assert http.status_code == 400, case
    error = http.get_json()
    assert isinstance(error, dict) and set(error) == {"error"}
    assert error["error"]
    endpoint = "mutate" if path == MUTATE_PATH else "validate"
    assert _count(app, endpoint=endpoint, operation="UNKNOWN", result="malformed") == 1


@pytest.mark.parametrize(
    "body",
    [b"nope", b"{}", json.dumps(admission_review({"kind": "MXJob"})).encode()],
    ids=["not JSON", "empty object", "an AdmissionReview"],
)
def test_a_body_that_is_not_a_conversion_review_is_a_400(client: FlaskClient, body: bytes) -> None:
    http = client.post(CONVERT_PATH, data=body, content_type="application/json")
    assert http.status_code == 400
    error = http.get_json()
    assert isinstance(error, dict) and error["error"]


# --- size limit ----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", REVIEW_PATHS)
def test_a_body_over_3_mib_is_a_413_without_parsing(app: Flask, path: str) -> None:
    client = app.test_client()
    # Not JSON at all: a parse would answer 400, so 413 shows the body was never parsed.
    http = client.post(path, data=b"x" * (3 * MIB + 1), content_type="application/json")
    assert http.status_code == 413
    error = http.get_json()
    assert isinstance(error, dict) and "3145728" in error["error"]
    endpoint = {MUTATE_PATH: "mutate", VALIDATE_PATH: "validate", CONVERT_PATH: "convert"}[path]
    assert _count(app, endpoint=endpoint, operation="UNKNOWN", result="malformed") == 1


def _raw_post(app: Flask, path: str, body: bytes, *, content_length: str | None) -> TestResponse:
    """POST with a Content-Length of our choosing (or none, as for a chunked request)."""
    environ = EnvironBuilder(path=path, method="POST", data=body).get_environ()
    if content_length is None:
        del environ["CONTENT_LENGTH"]
        environ["HTTP_TRANSFER_ENCODING"] = "chunked"
        environ["wsgi.input_terminated"] = True  # what gunicorn says of a dechunked body
    else:
        environ["CONTENT_LENGTH"] = content_length
    return app.test_client().open(Request(environ))  # a Request keeps the environ as is


def test_a_declared_length_over_the_limit_is_refused_before_reading() -> None:
    app = create_app(settings=WebhookSettings(max_body_bytes=100))
    # The declared length alone decides: the 10 bytes actually sent are never looked at.
    assert _raw_post(app, MUTATE_PATH, b"0123456789", content_length="101").status_code == 413
    assert _raw_post(app, MUTATE_PATH, b"0123456789", content_length="10").status_code == 400


def test_a_chunked_body_is_capped_while_reading() -> None:
    app = create_app(settings=WebhookSettings(max_body_bytes=100))
    assert _raw_post(app, CONVERT_PATH, b"a" * 101, content_length=None).status_code == 413
    # Under the limit the same kind of request is read and judged (here: not JSON).
    assert _raw_post(app, CONVERT_PATH, b"a" * 100, content_length=None).status_code == 400


def test_a_review_just_under_the_limit_is_answered(
    client: FlaskClient, seed_job: dict[str, Any]
) -> None:
    review = admission_review(seed_job, uid="big")
    padding = 3 * MIB - len(json.dumps(review)) - 200
    seed_job["metadata"]["annotations"] = {"example.com/padding": "p" * padding}
    body = json.dumps(admission_review(seed_job, uid="big")).encode()
    assert 3 * MIB - 400 < len(body) <= 3 * MIB
    http = client.post(VALIDATE_PATH, data=body, content_type="application/json")
    assert _response(http) == {"uid": "big", "allowed": True}


# --- failures inside the webhook -----------------------------------------------------------------


def test_a_failing_decision_refuses_the_review_instead_of_a_500(
    app: Flask,
    client: FlaskClient,
    seed_job: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    def explode(request: Any, **options: Any) -> Any:
        raise RuntimeError("decision bug")

    monkeypatch.setitem(answers.ENDPOINT_DECISIONS, "mutate", explode)
    with caplog.at_level(logging.INFO, logger="webhook"):
        http = _post(client, MUTATE_PATH, admission_review(seed_job, uid="boom"))
    response = _response(http)
    assert response["uid"] == "boom"
    assert response["allowed"] is False
    assert response["status"]["code"] == 500
    assert response["status"]["reason"] == "InternalError"
    assert "decision bug" not in response["status"]["message"]
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert errors and errors[0].exc_info is not None
    assert "decision bug" in str(errors[0].exc_info[1])
    assert _count(app, endpoint="mutate", operation="CREATE", result="error") == 1


def test_a_failing_conversion_answers_failure_instead_of_a_500(
    client: FlaskClient, seed_v1beta1: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    def explode(request: Any) -> Any:
        raise KeyError("conversion bug")

    monkeypatch.setattr(conversion_review, "convert_review", explode)
    review = make_conversion_review(
        [seed_v1beta1], desired_api_version="kubeflow.org/v1", uid="c-boom"
    )
    http = _post(client, CONVERT_PATH, review)
    assert http.status_code == 200
    document = http.get_json()
    assert isinstance(document, dict)
    assert document["response"]["uid"] == "c-boom"
    assert document["response"]["result"]["status"] == "Failure"
    assert document["response"]["convertedObjects"] == []


def test_an_error_outside_the_answers_still_answers_the_review(
    client: FlaskClient, seed_job: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    def explode(body: bytes, **_: Any) -> Any:
        raise RuntimeError("adapter bug")

    monkeypatch.setattr("webhook.app.answer_admission", explode)
    response = _response(_post(client, VALIDATE_PATH, admission_review(seed_job, uid="last")))
    assert (response["uid"], response["allowed"]) == ("last", False)
    assert response["status"]["reason"] == "InternalError"
    # Without a readable review there is nothing to answer: 400, still not a 500.
    http = client.post(VALIDATE_PATH, data=b"garbage")
    assert http.status_code == 400


# --- other routes ---------------------------------------------------------------------------------


def test_wrong_method_is_405_and_unknown_path_is_404(client: FlaskClient) -> None:
    http = client.get(MUTATE_PATH)
    assert http.status_code == 405
    assert "POST" in http.headers["Allow"]
    assert client.post("/mutate-something-else", data=b"{}").status_code == 404
    assert client.post("/healthz").status_code == 405


def test_health_and_readiness_without_tls(client: FlaskClient) -> None:
    assert client.get("/healthz").status_code == 200
    http = client.get("/readyz")
    assert http.status_code == 200
    assert http.get_json() == {"status": "ok"}


def test_ready_once_the_certificate_has_loaded(tmp_path: Path) -> None:
    settings = WebhookSettings(cert_dir=tmp_path, cert_check_interval=0.0)
    client = create_app(settings=settings).test_client()
    http = client.get("/readyz")
    assert http.status_code == 503
    body = http.get_json()
    assert isinstance(body, dict) and "tls.crt" in body["reason"]
    assert client.get("/healthz").status_code == 200  # alive: a restart would not help
    pair = CertificateAuthority.create().issue_serving(hosts=("127.0.0.1",))
    (tmp_path / "tls.crt").write_bytes(pair.cert_pem)
    (tmp_path / "tls.key").write_bytes(pair.key_pem)
    assert client.get("/readyz").status_code == 200


def test_metrics_count_reviews_by_endpoint_operation_and_result(
    app: Flask, client: FlaskClient, seed_job: dict[str, Any]
) -> None:
    _post(client, MUTATE_PATH, admission_review(seed_job))
    _post(client, MUTATE_PATH, admission_review(seed_job))
    _post(client, VALIDATE_PATH, admission_review(None, old=seed_job, operation="DELETE"))
    invalid = copy.deepcopy(seed_job)
    invalid["spec"]["jobMode"] = "MXSomething"
    _post(client, VALIDATE_PATH, admission_review(invalid))
    client.post(CONVERT_PATH, data=b"[]")
    assert _count(app, endpoint="mutate", operation="CREATE", result="allowed") == 2
    assert _count(app, endpoint="validate", operation="DELETE", result="allowed") == 1
    assert _count(app, endpoint="validate", operation="CREATE", result="denied") == 1
    assert _count(app, endpoint="convert", operation="UNKNOWN", result="malformed") == 1
    text = client.get("/metrics").get_data(as_text=True)
    assert (
        'mxjob_webhook_reviews_total{endpoint="mutate",operation="CREATE",result="allowed"} 2.0'
        in text
    )
    assert 'mxjob_webhook_review_duration_seconds_count{endpoint="mutate"} 2.0' in text
    assert 'mxjob_webhook_review_duration_seconds_bucket{endpoint="mutate",le="0.0001"}' in text


def test_each_app_counts_on_its_own_registry(seed_job: dict[str, Any]) -> None:
    first, second = create_app(), create_app()
    _post(first.test_client(), VALIDATE_PATH, admission_review(seed_job))
    assert _count(first, endpoint="validate", operation="CREATE", result="allowed") == 1
    assert _count(second, endpoint="validate", operation="CREATE", result="allowed") == 0


def test_at_info_an_answered_review_logs_nothing(
    client: FlaskClient, seed_job: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    """The metrics count every answer; a line per review is DEBUG (webhook/app.py)."""
    invalid = copy.deepcopy(seed_job)
    invalid["spec"]["mxReplicaSpecs"]["Worker"]["replicas"] = -1
    with caplog.at_level(logging.INFO, logger="webhook"):
        _post(client, MUTATE_PATH, admission_review(seed_job, uid="quiet-1"))
        _post(client, MUTATE_PATH, admission_review(invalid, uid="quiet-2"))
    assert [r for r in caplog.records if r.name.startswith("webhook")] == []


def test_debug_logs_name_the_review_and_only_the_reason_line_quotes_it(
    client: FlaskClient, seed_job: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    marker = "do-not-log-this-value"
    container = seed_job["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    container["args"].append(marker)
    invalid = copy.deepcopy(seed_job)
    invalid["spec"]["mxReplicaSpecs"]["Worker"]["replicas"] = marker  # quoted in the denial
    with caplog.at_level(logging.DEBUG, logger="webhook"):
        _post(client, MUTATE_PATH, admission_review(seed_job, uid="log-1"))
        _post(client, VALIDATE_PATH, admission_review(invalid, uid="log-2"))
    records = [r for r in caplog.records if r.name.startswith("webhook")]
    answers = [r for r in records if r.getMessage() == "review answered"]
    reasons = [r for r in records if r.getMessage().startswith("review reason: ")]
    assert len(answers) == 2 and len(reasons) == 1 and len(records) == 3
    for record in answers:
        assert marker not in record.getMessage()
        assert marker not in json.dumps(fields_of(record), default=str)
    assert marker in reasons[0].getMessage() and fields_of(reasons[0]) == {"uid": "log-2"}
    answered = {fields_of(r)["uid"]: fields_of(r) for r in answers}
    assert answered["log-1"]["result"] == "allowed"
    assert answered["log-1"]["name"] == "mxnet-job"
    assert answered["log-1"]["namespace"] == "default"
    assert answered["log-1"]["operation"] == "CREATE"
    assert answered["log-2"]["result"] == "denied"
    assert answered["log-2"]["duration_ms"] >= 0


# --- any body ------------------------------------------------------------------------------------

_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["replicas", "template", "spec", "containers", "name", "env", "x"]),
            inner,
            max_size=3,
        )
    ),
    max_leaves=15,
)


@st.composite
def _review_bodies(draw: st.DrawFn) -> bytes:
    """Well-formed reviews about MXJobs whose fields hold anything at all."""
    spec = draw(
        st.fixed_dictionaries(
            {},
            optional={
                "jobMode": st.sampled_from(["MXTrain", "MXTune"]) | _json_values,
                "mxReplicaSpecs": st.dictionaries(
                    st.sampled_from(["Scheduler", "worker", "Tuner", "Other"]), _json_values
                )
                | _json_values,
                "runPolicy": _json_values,
                "cleanPodPolicy": _json_values,
            },
        )
    )
    job = {
        "apiVersion": draw(st.sampled_from(["kubeflow.org/v1", "kubeflow.org/v1beta1"])),
        "kind": "MXJob",
        "metadata": draw(st.fixed_dictionaries({}, optional={"name": _json_values})),
        "spec": spec,
    }
    if draw(st.booleans()):
        review = make_conversion_review(
            [job],
            desired_api_version=draw(st.sampled_from(["kubeflow.org/v1", "kubeflow.org/v1beta1"])),
        )
    else:
        operation: Operation = draw(st.sampled_from(["CREATE", "UPDATE"]))
        review = admission_review(
            job, operation=operation, old=job if operation == "UPDATE" else None
        )
    return json.dumps(review).encode()


_FUZZ_APP = create_app()


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(REVIEW_PATHS),
    st.one_of(st.binary(max_size=300), _review_bodies()),
)
def test_every_body_gets_a_well_formed_answer_or_a_400(path: str, body: bytes) -> None:
    http = _FUZZ_APP.test_client().post(path, data=body, content_type="application/json")
    assert http.status_code in (200, 400)
    document = http.get_json()
    assert isinstance(document, dict)
    if http.status_code == 400:
        assert isinstance(document["error"], str)
        return
    sent = json.loads(body)
    response = document["response"]
    assert response["uid"] == sent["request"]["uid"]
    if path == CONVERT_PATH:
        assert response["result"]["status"] in ("Success", "Failure")
    else:
        assert isinstance(response["allowed"], bool)
        # A refusal is a decision, never the webhook failing on odd input.
        assert response.get("status", {}).get("reason") != "InternalError", response
