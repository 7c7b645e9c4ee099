"""Wire formats of the webhook: AdmissionReview v1, ConversionReview v1 and JSON Patch.

The API server speaks plain JSON; everything past this module works on the typed views defined
here. Parsing is strict on purpose: a body that is not a well-formed review is answered with
HTTP 400 before any decision code sees it, so the decision code can rely on the shapes below
(``uid`` is a non-empty string, ``object`` is a JSON object when the operation carries one, ...).
The objects inside a review (the MXJob itself) are *not* checked here: a well-formed review of a
malformed MXJob is a question for validation, answered with ``allowed: false``.

Nothing here does I/O or knows about Flask.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, Final, Literal, NotRequired, TypedDict, TypeGuard, cast

ADMISSION_API_VERSION: Final = "admission.k8s.io/v1"
ADMISSION_KIND: Final = "AdmissionReview"
CONVERSION_API_VERSION: Final = "apiextensions.k8s.io/v1"
CONVERSION_KIND: Final = "ConversionReview"

Operation = Literal["CREATE", "UPDATE", "DELETE", "CONNECT"]
OPERATIONS: Final[frozenset[str]] = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT"})

JSONObject = dict[str, Any]


class MalformedReview(ValueError):  # noqa: N818 -- the name the brief and callers use
    """The body is not a well-formed review; answered with HTTP 400 and ``reason``."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# --- AdmissionReview v1 ------------------------------------------------------------------------


class GroupVersionKind(TypedDict):
    group: str
    version: str
    kind: str


class GroupVersionResource(TypedDict):
    group: str
    version: str
    resource: str


class UserInfo(TypedDict, total=False):
    username: str
    uid: str
    groups: list[str]
    extra: dict[str, list[str]]


class AdmissionRequest(TypedDict):
    """``AdmissionReview.request`` (admission.k8s.io/v1 ``AdmissionRequest``)."""

    uid: str
    kind: GroupVersionKind
    resource: GroupVersionResource
    operation: Operation
    subResource: NotRequired[str]
    requestKind: NotRequired[GroupVersionKind]
    requestResource: NotRequired[GroupVersionResource]
    requestSubResource: NotRequired[str]
    name: NotRequired[str]
    namespace: NotRequired[str]
    userInfo: NotRequired[UserInfo]
    object: NotRequired[JSONObject | None]
    oldObject: NotRequired[JSONObject | None]
    dryRun: NotRequired[bool]
    options: NotRequired[JSONObject | None]


class Status(TypedDict, total=False):
    """The subset of ``metav1.Status`` a webhook answer carries."""

    code: int
    reason: str
    message: str


PatchType = Literal["JSONPatch"]


class AdmissionResponse(TypedDict):
    """``AdmissionReview.response``; ``patch`` is base64 of a JSON Patch document."""

    uid: str
    allowed: bool
    status: NotRequired[Status]
    patch: NotRequired[str]
    patchType: NotRequired[PatchType]
    warnings: NotRequired[list[str]]


class AdmissionReviewResponse(TypedDict):
    apiVersion: str
    kind: str
    response: AdmissionResponse


# --- JSON Patch (RFC 6902) ---------------------------------------------------------------------

PatchOpName = Literal["add", "remove", "replace", "move", "copy", "test"]

# ``from`` is a Python keyword, hence the functional form.
JSONPatchOp = TypedDict(
    "JSONPatchOp",
    {
        "op": PatchOpName,
        "path": str,
        "value": NotRequired[Any],
        "from": NotRequired[str],
    },
)


# --- ConversionReview (apiextensions.k8s.io/v1) ------------------------------------------------


class ConversionRequest(TypedDict):
    uid: str
    desiredAPIVersion: str
    objects: list[JSONObject]


class ConversionResult(TypedDict):
    """``metav1.Status`` as ConversionReview uses it: ``status`` is Success or Failure."""

    status: Literal["Success", "Failure"]
    message: NotRequired[str]


class ConversionResponse(TypedDict):
    uid: str
    convertedObjects: list[JSONObject]
    result: ConversionResult


class ConversionReviewResponse(TypedDict):
    apiVersion: str
    kind: str
    response: ConversionResponse


# --- parsing -----------------------------------------------------------------------------------


def _reject_constant(name: str) -> float:
    # NaN and ±Infinity are not JSON; Python's decoder accepts them unless told otherwise.
    raise MalformedReview(f"body is not JSON: {name} is not a JSON value")


def _finite_float(text: str) -> float:
    # "1e400" decodes to inf, which could not be encoded back as JSON in an answer.
    value = float(text)
    if not math.isfinite(value):
        raise MalformedReview(f"body is not JSON: number {text[:32]} is out of range")
    return value


def decode_json(body: bytes) -> Any:
    """Decode a request body as strict JSON (no NaN/Infinity, no out-of-range numbers).

    Every decoder failure (bad UTF-8, syntax, nesting too deep, integers longer than Python
    allows) becomes ``MalformedReview`` so the caller has exactly one error to handle.
    """
    if not body:
        raise MalformedReview("body is empty")
    try:
        return json.loads(body, parse_constant=_reject_constant, parse_float=_finite_float)
    except MalformedReview:
        raise
    except RecursionError:
        raise MalformedReview("body is not JSON: nested too deeply") from None
    except ValueError as err:  # JSONDecodeError, UnicodeDecodeError, int digit limit
        raise MalformedReview(f"body is not JSON: {_short(str(err))}") from None


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _is_object(value: object) -> TypeGuard[JSONObject]:
    return isinstance(value, dict)


def _envelope(document: Any, *, api_version: str, kind: str, field: str) -> JSONObject:
    if not _is_object(document):
        raise MalformedReview(f"body must be a JSON object (a {kind}), not {_json_type(document)}")
    if document.get("apiVersion") != api_version:
        raise MalformedReview(
            f"apiVersion must be {api_version!r}, got {_short(repr(document.get('apiVersion')))}"
        )
    if document.get("kind") != kind:
        raise MalformedReview(f"kind must be {kind!r}, got {_short(repr(document.get('kind')))}")
    inner = document.get(field)
    if not _is_object(inner):
        raise MalformedReview(f"{field} must be a JSON object, got {_json_type(inner)}")
    return inner


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _require_uid(request: JSONObject, *, where: str) -> str:
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        raise MalformedReview(f"{where}.uid must be a non-empty string, got {_json_type(uid)}")
    return uid


def _string_fields(value: object, *, where: str, fields: tuple[str, ...]) -> None:
    if not _is_object(value):
        raise MalformedReview(f"{where} must be a JSON object, got {_json_type(value)}")
    for name in fields:
        if not isinstance(value.get(name), str):
            raise MalformedReview(f"{where}.{name} must be a string")


def _optional(
    request: JSONObject, name: str, *, where: str, check: type | tuple[type, ...]
) -> None:
    if name in request and request[name] is not None and not isinstance(request[name], check):
        raise MalformedReview(f"{where}.{name} has the wrong type ({_json_type(request[name])})")


def review_uid(document: Any) -> str | None:
    """The ``request.uid`` of a decoded review body if it has one, to answer after a failure."""
    if _is_object(document):
        request = document.get("request")
        if _is_object(request):
            uid = request.get("uid")
            if isinstance(uid, str) and uid:
                return uid
    return None


def parse_admission_review(body: bytes) -> AdmissionRequest:
    """Parse a request body as an admission.k8s.io/v1 AdmissionReview and return its request.

    Raises ``MalformedReview`` for anything the API server would never send: not JSON, not an
    object, another apiVersion or kind, no ``request``, a ``uid`` that is not a non-empty string,
    an unknown ``operation``, a missing ``kind``/``resource``, or no ``object`` (or, on UPDATE,
    no ``oldObject``) where the operation requires one.
    """
    return admission_request_from(decode_json(body))


def admission_request_from(document: Any) -> AdmissionRequest:
    """``parse_admission_review`` for an already decoded body."""
    where = "request"
    request = _envelope(
        document, api_version=ADMISSION_API_VERSION, kind=ADMISSION_KIND, field=where
    )
    _require_uid(request, where=where)
    operation = request.get("operation")
    if not isinstance(operation, str) or operation not in OPERATIONS:
        raise MalformedReview(
            f"{where}.operation must be one of {', '.join(sorted(OPERATIONS))}, "
            f"got {_short(repr(operation))}"
        )
    _string_fields(request.get("kind"), where=f"{where}.kind", fields=("group", "version", "kind"))
    _string_fields(
        request.get("resource"),
        where=f"{where}.resource",
        fields=("group", "version", "resource"),
    )
    if request.get("requestKind") is not None:
        _string_fields(
            request["requestKind"],
            where=f"{where}.requestKind",
            fields=("group", "version", "kind"),
        )
    if request.get("requestResource") is not None:
        _string_fields(
            request["requestResource"],
            where=f"{where}.requestResource",
            fields=("group", "version", "resource"),
        )
    for name in ("subResource", "requestSubResource", "name", "namespace"):
        _optional(request, name, where=where, check=str)
    _optional(request, "dryRun", where=where, check=bool)
    for name in ("userInfo", "options", "object", "oldObject"):
        _optional(request, name, where=where, check=dict)
    if operation in ("CREATE", "UPDATE") and not _is_object(request.get("object")):
        raise MalformedReview(f"{where}.object must be a JSON object on {operation}")
    if operation == "UPDATE" and not _is_object(request.get("oldObject")):
        raise MalformedReview(f"{where}.oldObject must be a JSON object on UPDATE")
    # Every field that the TypedDict declares has been checked above.
    return cast(AdmissionRequest, request)


def parse_conversion_review(body: bytes) -> ConversionRequest:
    """Parse a request body as an apiextensions.k8s.io/v1 ConversionReview; return its request.

    Raises ``MalformedReview`` unless the body has a ``request`` with a non-empty string ``uid``,
    a ``desiredAPIVersion`` string and ``objects``, an array of JSON objects.
    """
    return conversion_request_from(decode_json(body))


def conversion_request_from(document: Any) -> ConversionRequest:
    """``parse_conversion_review`` for an already decoded body."""
    where = "request"
    request = _envelope(
        document, api_version=CONVERSION_API_VERSION, kind=CONVERSION_KIND, field=where
    )
    uid = _require_uid(request, where=where)
    desired = request.get("desiredAPIVersion")
    if not isinstance(desired, str) or not desired:
        raise MalformedReview(f"{where}.desiredAPIVersion must be a non-empty string")
    objects = request.get("objects")
    if not isinstance(objects, list):
        raise MalformedReview(f"{where}.objects must be an array, got {_json_type(objects)}")
    for index, item in enumerate(objects):
        if not _is_object(item):
            raise MalformedReview(
                f"{where}.objects[{index}] must be a JSON object, got {_json_type(item)}"
            )
    return ConversionRequest(uid=uid, desiredAPIVersion=desired, objects=objects)


# --- answers -----------------------------------------------------------------------------------


def admission_review_response(response: AdmissionResponse) -> AdmissionReviewResponse:
    """Wrap a response in the AdmissionReview envelope the API server expects back."""
    return AdmissionReviewResponse(
        apiVersion=ADMISSION_API_VERSION, kind=ADMISSION_KIND, response=response
    )


def conversion_review_response(response: ConversionResponse) -> ConversionReviewResponse:
    """Wrap a response in the ConversionReview envelope the API server expects back."""
    return ConversionReviewResponse(
        apiVersion=CONVERSION_API_VERSION, kind=CONVERSION_KIND, response=response
    )


def encode_json(document: Mapping[str, Any] | list[Any]) -> bytes:
    """Encode an answer as strict JSON; raises ``ValueError`` rather than emit NaN/Infinity."""
    return json.dumps(document, allow_nan=False, separators=(",", ":")).encode("utf-8")
