"""Request body in, HTTP answer out, for each review endpoint. No Flask, no sockets.

This is the whole protocol of a review endpoint, so it can be tested and fuzzed without a server:
a body that is not a well-formed review is a 400 with ``{"error": reason}``; a well-formed one is
always a 200 with a well-formed review answer, including when the decision code raises (then the
review is refused with an internal-error message and the exception is handed to the caller to
log). ``webhook.app`` only reads the body, times the call, logs and counts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from webhook import admission, conversion_review, experiments
from webhook.metrics import Endpoint, Result
from webhook.reviews import (
    AdmissionRequest,
    AdmissionResponse,
    MalformedReview,
    admission_request_from,
    admission_review_response,
    conversion_request_from,
    conversion_review_response,
    decode_json,
    encode_json,
)

UNKNOWN_OPERATION = "UNKNOWN"
CONVERT_OPERATION = "CONVERT"


@dataclass(frozen=True)
class Answer:
    """An HTTP answer and the facts about it that logs and metrics need (no object contents)."""

    status: int
    body: bytes
    endpoint: Endpoint
    result: Result
    operation: str = UNKNOWN_OPERATION
    uid: str | None = None
    log_fields: dict[str, Any] = field(default_factory=dict)
    """Metadata to log at INFO: kind, namespace, name, versions, counts. Never the object."""
    reason: str | None = None
    """Why the review was refused or malformed; may quote user input, so logged at DEBUG."""
    error: BaseException | None = None
    """The exception the decision raised, for the caller to log with its traceback."""


def error_body(reason: str) -> bytes:
    """The JSON body of a 4xx answer: ``{"error": reason}``."""
    return encode_json({"error": reason})


def malformed(endpoint: Endpoint, reason: str) -> Answer:
    """400 for a body that is not a well-formed review."""
    return Answer(
        status=400,
        body=error_body(reason),
        endpoint=endpoint,
        result="malformed",
        reason=reason,
    )


def _admission_fields(request: AdmissionRequest) -> dict[str, Any]:
    kind = request["kind"]
    return {
        "kind": f"{kind['group']}/{kind['version']}/{kind['kind']}",
        "namespace": request.get("namespace", ""),
        "name": request.get("name", ""),
        "dry_run": bool(request.get("dryRun", False)),
    }


def answer_admission(
    body: bytes,
    *,
    endpoint: Endpoint,
    decide: Callable[[AdmissionRequest], AdmissionResponse],
) -> Answer:
    """Answer one AdmissionReview body with ``decide`` (``admission.mutate`` or ``validate``)."""
    try:
        request = admission_request_from(decode_json(body))
    except MalformedReview as err:
        return malformed(endpoint, err.reason)
    uid = request["uid"]
    operation = request["operation"]
    fields = _admission_fields(request)
    try:
        response = decide(request)
        response["uid"] = uid  # echoed whatever the decision did
        payload = encode_json(admission_review_response(response))
    except Exception as err:  # the answer must stay a well-formed review
        payload = encode_json(admission_review_response(admission.internal_error(uid)))
        return Answer(
            status=200,
            body=payload,
            endpoint=endpoint,
            result="error",
            operation=operation,
            uid=uid,
            log_fields=fields,
            reason=f"{type(err).__name__} while deciding",
            error=err,
        )
    status = response.get("status", {})
    if response["allowed"]:
        fields["patched"] = "patch" in response
    return Answer(
        status=200,
        body=payload,
        endpoint=endpoint,
        result="allowed" if response["allowed"] else "denied",
        operation=operation,
        uid=uid,
        log_fields=fields,
        reason=None if response["allowed"] else status.get("message"),
    )


def answer_conversion(body: bytes) -> Answer:
    """Answer one ConversionReview body."""
    endpoint: Endpoint = "convert"
    try:
        request = conversion_request_from(decode_json(body))
    except MalformedReview as err:
        return malformed(endpoint, err.reason)
    uid = request["uid"]
    fields: dict[str, Any] = {
        "desired_api_version": request["desiredAPIVersion"][:100],
        "objects": len(request["objects"]),
    }
    try:
        response = conversion_review.convert_review(request)
        response["uid"] = uid
        payload = encode_json(conversion_review_response(response))
    except Exception as err:
        payload = encode_json(conversion_review_response(conversion_review.internal_error(uid)))
        return Answer(
            status=200,
            body=payload,
            endpoint=endpoint,
            result="error",
            operation=CONVERT_OPERATION,
            uid=uid,
            log_fields=fields,
            reason=f"{type(err).__name__} while converting",
            error=err,
        )
    succeeded = response["result"]["status"] == "Success"
    return Answer(
        status=200,
        body=payload,
        endpoint=endpoint,
        result="allowed" if succeeded else "denied",
        operation=CONVERT_OPERATION,
        uid=uid,
        log_fields=fields,
        reason=None if succeeded else response["result"].get("message"),
    )


class Decision(Protocol):
    """``admission.mutate``, ``admission.validate`` or ``experiments.validate_experiment``
    (``admission.mutate`` takes ``progress_namespace`` too: webhook/app.py's ``decision``)."""

    def __call__(
        self, request: AdmissionRequest, *, kueue_workloads: bool = False
    ) -> AdmissionResponse: ...


ENDPOINT_DECISIONS: dict[Endpoint, Decision] = {
    "mutate": admission.mutate,
    "validate": admission.validate,
    "validate-experiment": experiments.validate_experiment,
}
