"""Fuzzing the webhook's review endpoints: whatever arrives, the answer is well-formed and sane.

The properties run on ``webhook.answers`` (bytes in, HTTP answer out: the whole protocol of a
review endpoint without Flask or sockets), which is fast enough for ``make fuzz`` to answer
100,000 bodies in minutes; the size limit lives in the Flask adapter, so that property goes
through the app. The example-based tests of the same endpoints are in ``tests/webhook/``.
"""

from __future__ import annotations

import base64
import copy
import json
import logging
from typing import Any
from unittest import mock

import jsonpatch
from hypothesis import given
from hypothesis import strategies as st
from werkzeug.test import EnvironBuilder
from werkzeug.wrappers import Request

from shared import constants
from shared.logformat import fields_of
from tests.fuzz import strategies as gen
from tests.fuzz.harness import (
    check_admission_answer,
    check_conversion_answer,
    check_malformed,
    check_not_crashed,
    count,
    fuzz_settings,
)
from tests.webhook.reviews_samples import admission_review, conversion_review
from webhook import answers, reviews
from webhook.answers import Answer, answer_admission, answer_conversion
from webhook.app import CONVERT_PATH, MUTATE_PATH, VALIDATE_PATH, create_app
from webhook.reviews import decode_json, review_uid
from webhook.settings import MIB, WebhookSettings

Job = dict[str, Any]
VERSIONS = (constants.API_VERSION_V1, constants.API_VERSION_V1BETA1)


def _mutate(body: bytes) -> Answer:
    count("mutate")
    return answer_admission(body, endpoint="mutate", decide=answers.ENDPOINT_DECISIONS["mutate"])


def _validate(body: bytes) -> Answer:
    count("validate")
    return answer_admission(
        body, endpoint="validate", decide=answers.ENDPOINT_DECISIONS["validate"]
    )


def _convert(body: bytes) -> Answer:
    count("convert")
    return answer_conversion(body)


def _sent_uid(body: bytes) -> str | None:
    try:
        return review_uid(decode_json(body))
    except ValueError:
        return None


@fuzz_settings()
@given(gen.raw_bodies())
def test_any_body_is_answered_with_a_well_formed_review_or_a_400(body: bytes) -> None:
    """Every endpoint, any bytes: a 400 ``{"error": ...}`` or a 200 review echoing the uid."""
    uid = _sent_uid(body)
    for answer in (_mutate(body), _validate(body)):
        check_not_crashed(answer)
        if answer.status == 400:
            check_malformed(answer)
        else:
            assert uid is not None  # only a review with a uid is answered as one
            check_admission_answer(answer, uid=uid)
    converted = _convert(body)
    check_not_crashed(converted)
    if converted.status == 400:
        check_malformed(converted)
    else:
        assert uid is not None
        check_conversion_answer(converted, uid=uid, objects=None, desired=None)


def _patched(sent: Job, response: dict[str, Any]) -> Job:
    if "patch" not in response:
        return copy.deepcopy(sent)
    operations = json.loads(base64.b64decode(response["patch"]))
    patched: Job = jsonpatch.apply_patch(sent, operations)
    return patched


@fuzz_settings()
@given(gen.admission_reviews())
def test_mutation_is_idempotent_and_validation_admits_what_mutation_admits(
    review: dict[str, Any],
) -> None:
    """The two admission webhooks agree, and defaulting settles after one pass.

    - mutation refuses exactly what validation refuses (both judge the object as sent);
    - the mutated object passes validation: defaulting never makes a valid job invalid;
    - mutating the mutated object again changes nothing: no patch.
    """
    request = review["request"]
    uid = request["uid"]
    mutated = check_admission_answer(_mutate(gen.encode(review)), uid=uid)
    validated = check_admission_answer(_validate(gen.encode(review)), uid=uid)
    assert mutated["allowed"] == validated["allowed"], (mutated, validated)
    judged = request["operation"] in ("CREATE", "UPDATE") and "subResource" not in request
    if not judged:
        assert mutated == {"uid": uid, "allowed": True}
        return
    if not mutated["allowed"]:
        return
    sent: Job = request["object"]
    patched = _patched(sent, mutated)
    assert patched["apiVersion"] == sent["apiVersion"]  # patched in the version it came in
    again_review = copy.deepcopy(review)
    again_review["request"]["object"] = patched
    again = check_admission_answer(_mutate(gen.encode(again_review)), uid=uid)
    assert again == {"uid": uid, "allowed": True}, "a second mutation must not patch"
    final = check_admission_answer(_validate(gen.encode(again_review)), uid=uid)
    assert final == {"uid": uid, "allowed": True}, final


def _convert_objects(objects: list[Job], desired: str) -> list[Job]:
    """``objects`` converted through the ``/convert`` protocol; fails unless all succeed."""
    review = conversion_review(objects, desired_api_version=desired)
    response = check_conversion_answer(
        _convert(gen.encode(review)),
        uid=review["request"]["uid"],
        objects=len(objects),
        desired=desired,
    )
    assert response["result"] == {"status": "Success"}, response["result"]
    converted: list[Job] = response["convertedObjects"]
    return converted


@fuzz_settings(share=0.5)
@given(st.lists(gen.v1_objects(), min_size=1, max_size=3))
def test_v1_to_v1beta1_and_back_is_identical(objects: list[Job]) -> None:
    """What is stored (v1) survives any read and write through v1beta1 unchanged."""
    there = _convert_objects(objects, constants.API_VERSION_V1BETA1)
    assert _convert_objects(there, constants.API_VERSION_V1) == objects


@fuzz_settings(share=0.5)
@given(st.lists(gen.v1beta1_objects(), min_size=1, max_size=3))
def test_v1beta1_to_v1_and_back_is_identical(objects: list[Job]) -> None:
    """A v1beta1 object as read from storage, or as a user wrote it, comes back unchanged."""
    there = _convert_objects(objects, constants.API_VERSION_V1)
    assert _convert_objects(there, constants.API_VERSION_V1BETA1) == objects


@fuzz_settings(share=0.25)
@given(gen.edited_v1beta1_objects())
def test_an_edited_v1beta1_object_keeps_its_v1_form_however_often_it_goes_around(
    job: Job,
) -> None:
    """After an edit through v1beta1 the annotation may mention what is gone; going around
    again may drop such a stale mention, but never changes what the object says in v1."""
    stored = _convert_objects([job], constants.API_VERSION_V1)
    again = _convert_objects(
        _convert_objects(stored, constants.API_VERSION_V1BETA1), constants.API_VERSION_V1
    )
    assert again == stored


@fuzz_settings()
@given(gen.conversion_reviews())
def test_a_conversion_review_of_generated_jobs_is_answered_in_full_or_refused(
    review: dict[str, Any],
) -> None:
    """Mixed objects and versions: all converted, in order, or one Failure naming why."""
    request = review["request"]
    answer = _convert(gen.encode(review))
    response = check_conversion_answer(
        answer,
        uid=request["uid"],
        objects=len(request["objects"]),
        desired=request["desiredAPIVersion"],
    )
    servable = all(
        obj.get("kind") == constants.KIND and obj.get("apiVersion") in VERSIONS
        for obj in request["objects"]
    )
    assert (response["result"]["status"] == "Success") == servable, response["result"]
    # The API server refuses a conversion that touches metadata other than labels/annotations.
    # It always sends an object there; the generated non-objects only have to convert at all.
    for sent, converted in zip(request["objects"], response["convertedObjects"], strict=False):
        if isinstance(sent.get("metadata"), dict):
            assert _fixed_metadata(converted) == _fixed_metadata(sent)


def _fixed_metadata(obj: Job) -> dict[str, Any]:
    """The metadata a conversion may not touch: everything but labels and annotations."""
    metadata = obj["metadata"]
    assert isinstance(metadata, dict)
    return {k: v for k, v in metadata.items() if k not in ("labels", "annotations")}


_DEFAULT_APP = create_app()
_LIMITS = (64, 1000, 4096)
_SMALL_APPS = {
    limit: create_app(settings=WebhookSettings(max_body_bytes=limit)) for limit in _LIMITS
}
_ENDPOINTS = {MUTATE_PATH: "mutate", VALIDATE_PATH: "validate", CONVERT_PATH: "convert"}
_PATHS = tuple(_ENDPOINTS)


def _padded(review: dict[str, Any], size: int) -> bytes:
    """``review`` as JSON padded with trailing whitespace (still valid JSON) to ``size`` bytes."""
    body = gen.encode(review)
    return body + b" " * max(0, size - len(body))


@fuzz_settings(share=0.5)
@given(
    st.sampled_from(_LIMITS),
    st.integers(-8, 8),
    st.sampled_from(_PATHS),
    st.booleans(),
    st.one_of(gen.admission_reviews(), gen.conversion_reviews()),
)
def test_a_body_over_the_limit_is_a_413_and_never_parsed(
    limit: int, offset: int, path: str, chunked: bool, review: dict[str, Any]
) -> None:
    """Over the limit: 413 whatever the body (here a valid review), and not one byte decoded."""
    app = _SMALL_APPS[limit]
    body = _padded(review, limit + offset)
    decoded: list[bytes] = []
    real_decode = reviews.decode_json

    def spy(data: bytes) -> Any:
        decoded.append(data)
        return real_decode(data)

    environ = EnvironBuilder(path=path, method="POST", data=body).get_environ()
    if chunked:  # what gunicorn hands the app for a chunked request: no length, a capped stream
        del environ["CONTENT_LENGTH"]
        environ["HTTP_TRANSFER_ENCODING"] = "chunked"
        environ["wsgi.input_terminated"] = True
    with mock.patch.object(answers, "decode_json", spy):
        http = app.test_client().open(Request(environ))
    count(_ENDPOINTS[path])
    document = http.get_json()
    assert isinstance(document, dict)
    if len(body) > limit:
        assert http.status_code == 413, (len(body), limit, http.status_code)
        assert set(document) == {"error"} and str(limit) in document["error"]
        assert decoded == []
    else:
        assert http.status_code in (200, 400)
        assert decoded == [body]


@fuzz_settings(share=0.02)
@given(st.sampled_from(_PATHS), st.integers(-2, 2), st.sampled_from([b" ", b"x"]))
def test_the_api_servers_3_mib_limit_is_the_default(path: str, offset: int, fill: bytes) -> None:
    """At the real limit (3 MiB): one byte over is a 413, at it the body is judged."""
    size = 3 * MIB + offset
    review = admission_review({"apiVersion": constants.API_VERSION_V1, "kind": "MXJob"})
    body = (gen.encode(review) + fill * size)[:size] if fill == b" " else fill * size
    http = _DEFAULT_APP.test_client().post(path, data=body, content_type="application/json")
    count(_ENDPOINTS[path])
    if size > 3 * MIB:
        assert http.status_code == 413
    else:
        assert http.status_code in (200, 400)


MARKER = "s3cr3t-0bject-c0ntent"


def _plant(value: Any) -> Any:
    """``value`` with every string inside it (keys aside) replaced by the marker."""
    if isinstance(value, str):
        return MARKER
    if isinstance(value, list):
        return [_plant(item) for item in value]
    if isinstance(value, dict):
        return {key: _plant(item) for key, item in value.items()}
    return value


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@fuzz_settings(share=0.25)
@given(st.sampled_from(_PATHS), gen.admission_reviews(), st.booleans())
def test_logs_never_carry_object_contents_but_in_the_debug_reason_line(
    path: str, review: dict[str, Any], mangle: bool
) -> None:
    """Whatever an MXJob's spec holds (here: the marker in every string of it), the line the
    webhook logs per review (DEBUG) names the review (uid, kind, namespace/name, result) and
    nothing more; a refusal's reason, which may quote the spec, is a DEBUG line of its own, and
    at INFO and above nothing carries the marker."""
    request = review["request"]
    for field_name in ("object", "oldObject"):
        obj = request.get(field_name)
        if isinstance(obj, dict) and isinstance(obj.get("spec"), dict):
            obj["spec"] = _plant(obj["spec"])
    if path == CONVERT_PATH:
        objects = [o for o in (request.get("object"), request.get("oldObject")) if o]
        body = gen.encode(conversion_review(objects, desired_api_version=constants.API_VERSION_V1))
    else:
        body = gen.encode(review)
    if mangle:  # a body the decoder refuses may be quoted in its 400 reason
        body = body.replace(b'"spec":', b'"spec":!', 1)
    handler = _Records()
    logger = logging.getLogger("webhook")
    previous = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        http = _DEFAULT_APP.test_client().post(path, data=body, content_type="application/json")
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)
    count(_ENDPOINTS[path])
    assert http.status_code in (200, 400)
    answered = [r for r in handler.records if r.getMessage() == "review answered"]
    assert len(answered) == 1, "every review is logged at DEBUG, once"
    for record in handler.records:
        if record.getMessage().startswith("review reason: "):
            assert record.levelno == logging.DEBUG
            continue
        assert MARKER not in record.getMessage()
        assert MARKER not in json.dumps(fields_of(record), default=str)
