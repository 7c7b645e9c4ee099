"""Parsing AdmissionReview and ConversionReview bodies: well-formed in, everything else refused."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers.mxjobs import mxjob
from tests.webhook.reviews_samples import admission_review, conversion_review
from webhook.reviews import (
    MalformedReview,
    decode_json,
    encode_json,
    parse_admission_review,
    parse_conversion_review,
    review_uid,
)

JOB = mxjob("job", namespace="ns", mode=None, replicas=None)
"""A job of an empty spec: these tests read the review around it, not the job."""


def _body(document: Any) -> bytes:
    return json.dumps(document).encode()


def _review(**changes: Any) -> dict[str, Any]:
    review = admission_review(JOB, uid="u-1")
    review["request"].update(changes)
    return review


def test_well_formed_admission_review_yields_its_request() -> None:
    request = parse_admission_review(_body(admission_review(JOB, uid="abc", namespace="ns")))
    assert request["uid"] == "abc"
    assert request["operation"] == "CREATE"
    assert request["object"] == JOB
    assert request["namespace"] == "ns"
    assert request["kind"] == {"group": "kubeflow.org", "version": "v1", "kind": "MXJob"}


def test_update_carries_both_objects() -> None:
    old = {**JOB, "metadata": {"name": "job", "namespace": "ns", "resourceVersion": "1"}}
    request = parse_admission_review(_body(admission_review(JOB, old=old, operation="UPDATE")))
    assert request["oldObject"] == old


def test_delete_needs_no_object() -> None:
    request = parse_admission_review(_body(admission_review(None, old=JOB, operation="DELETE")))
    assert request["operation"] == "DELETE"
    assert request.get("object") is None


@pytest.mark.parametrize(
    ("body", "reason_part"),
    [
        (b"", "empty"),
        (b"not json", "not JSON"),
        (b"\xff\xfe\x00garbage", "not JSON"),
        (b"[1, 2]", "must be a JSON object"),
        (b'"AdmissionReview"', "must be a JSON object"),
        (b"null", "must be a JSON object"),
        (_body({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}), "request"),
        (_body({**admission_review(JOB), "apiVersion": "admission.k8s.io/v1beta1"}), "apiVersion"),
        (_body({**admission_review(JOB), "kind": "ConversionReview"}), "kind"),
        (_body(_review(uid=7)), "uid"),
        (_body(_review(uid="")), "uid"),
        (_body(_review(uid=None)), "uid"),
        (_body(_review(operation="PATCH")), "operation"),
        (_body(_review(object=None)), "object"),
        (_body(_review(object=[JOB])), "object"),
        (_body(_review(object="job")), "object"),
        (_body(_review(kind=None)), "request.kind"),
        (_body(_review(kind={"group": "kubeflow.org", "version": 1, "kind": "MXJob"})), "kind"),
        (_body(_review(resource="mxjobs")), "request.resource"),
        (_body(_review(namespace=3)), "namespace"),
        (_body(_review(dryRun="yes")), "dryRun"),
        (_body(_review(userInfo=[])), "userInfo"),
        (_body(_review(operation="UPDATE")), "oldObject"),
        (b'{"apiVersion": NaN}', "NaN"),
        (b'{"apiVersion": "admission.k8s.io/v1", "n": 1e400}', "out of range"),
        (b"[" * 100_000 + b"]" * 100_000, "not JSON"),
        (b'{"n": ' + b"9" * 5000 + b"}", "not JSON"),
    ],
)
def test_malformed_admission_body_is_refused_with_a_reason(body: bytes, reason_part: str) -> None:
    with pytest.raises(MalformedReview) as caught:
        parse_admission_review(body)
    assert reason_part in caught.value.reason


def test_conversion_review_yields_objects_and_desired_version() -> None:
    body = _body(conversion_review([JOB], desired_api_version="kubeflow.org/v1beta1", uid="c1"))
    request = parse_conversion_review(body)
    assert request == {"uid": "c1", "desiredAPIVersion": "kubeflow.org/v1beta1", "objects": [JOB]}


def _conversion(**changes: Any) -> bytes:
    review = conversion_review([JOB], desired_api_version="kubeflow.org/v1", uid="c1")
    review["request"].update(changes)
    return _body(review)


@pytest.mark.parametrize(
    ("body", "reason_part"),
    [
        (_body(admission_review(JOB)), "apiVersion"),
        (_conversion(uid=1), "uid"),
        (_conversion(desiredAPIVersion=None), "desiredAPIVersion"),
        (_conversion(objects=None), "objects"),
        (_conversion(objects=JOB), "objects"),
        (_conversion(objects=[JOB, "x"]), "objects[1]"),
    ],
)
def test_malformed_conversion_body_is_refused_with_a_reason(body: bytes, reason_part: str) -> None:
    with pytest.raises(MalformedReview) as caught:
        parse_conversion_review(body)
    assert reason_part in caught.value.reason


def test_review_uid_is_found_only_where_a_review_keeps_it() -> None:
    assert review_uid(admission_review(JOB, uid="x")) == "x"
    assert review_uid({"request": {"uid": 5}}) is None
    assert review_uid([{"request": {"uid": "x"}}]) is None


def test_answers_are_never_encoded_as_invalid_json() -> None:
    assert encode_json({"a": [1, "é"]}) == b'{"a":[1,"\\u00e9"]}'
    with pytest.raises(ValueError):
        encode_json({"a": float("nan")})


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=512))
def test_arbitrary_bytes_parse_or_are_malformed(body: bytes) -> None:
    for parse in (parse_admission_review, parse_conversion_review):
        try:
            parse(body)
        except MalformedReview as err:
            assert err.reason


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(json_values, st.sampled_from(["request", "object", "uid", "operation", "kind"]))
def test_a_review_with_any_value_in_a_field_parses_or_is_malformed(value: Any, field: str) -> None:
    review = admission_review(JOB, uid="u")
    if field == "request":
        review["request"] = value
    else:
        review["request"][field] = value
    try:
        request = parse_admission_review(_body(review))
    except MalformedReview:
        return
    # What parses honours the shapes the decision code relies on.
    assert isinstance(request["uid"], str) and request["uid"]
    assert request["operation"] in ("CREATE", "UPDATE", "DELETE", "CONNECT")
    assert isinstance(request.get("object"), dict)


def test_decoded_numbers_stay_exact() -> None:
    assert decode_json(b'{"big": 12345678901234567890, "f": 0.5}') == {
        "big": 12345678901234567890,
        "f": 0.5,
    }
