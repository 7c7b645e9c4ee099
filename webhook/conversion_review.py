"""CRD conversion decisions: ConversionRequest in, ConversionResponse out. Pure.

The API server sends every object it needs in another served version (reads through v1beta1 of
objects stored as v1, writes through v1beta1); the conversion itself is
``shared.conversion.convert``, lossless both ways. This module checks the request names versions
this CRD serves, converts every object, and answers ``Success`` with all of them or ``Failure``
with the first reason: the API server fails the whole request on a failure, so partial answers
would be useless.
"""

from __future__ import annotations

from typing import Final

from shared import constants, conversion
from webhook.reviews import ConversionRequest, ConversionResponse, JSONObject

SERVED_VERSIONS: Final = (constants.V1, constants.V1BETA1)


class ConversionRefusedError(ValueError):
    """An object this webhook will not convert; the message says which and why."""


def succeeded(uid: str, objects: list[JSONObject]) -> ConversionResponse:
    """A ``Success`` answer with the converted objects, in request order."""
    return ConversionResponse(uid=uid, convertedObjects=objects, result={"status": "Success"})


def failed(uid: str, message: str) -> ConversionResponse:
    """A ``Failure`` answer; the API server reports ``message`` to its client."""
    return ConversionResponse(
        uid=uid, convertedObjects=[], result={"status": "Failure", "message": message}
    )


def internal_error(uid: str) -> ConversionResponse:
    """A ``Failure`` because the webhook failed; the details are in its log."""
    return failed(
        uid,
        f"internal error in the mxjob webhook while converting request {uid}; see the webhook log",
    )


def _target_version(desired_api_version: str) -> str:
    group, _, version = desired_api_version.rpartition("/")
    if group != constants.GROUP or version not in SERVED_VERSIONS:
        raise ConversionRefusedError(
            f"desiredAPIVersion {desired_api_version[:100]!r} is not served by this CRD "
            f"(served: {', '.join(f'{constants.GROUP}/{v}' for v in SERVED_VERSIONS)})"
        )
    return version


def _convert_one(obj: JSONObject, *, index: int, desired: str, version: str) -> JSONObject:
    api_version = obj.get("apiVersion")
    kind = obj.get("kind")
    if kind != constants.KIND:
        raise ConversionRefusedError(
            f"objects[{index}]: kind {str(kind)[:80]!r} is not {constants.KIND}"
        )
    if api_version == desired:
        return obj
    if not isinstance(api_version, str) or api_version.rpartition("/")[::2] not in {
        (constants.GROUP, v) for v in SERVED_VERSIONS
    }:
        raise ConversionRefusedError(
            f"objects[{index}]: apiVersion {str(api_version)[:80]!r} is not a served version"
        )
    try:
        return conversion.convert(obj, version)
    except conversion.ConversionError as err:
        # Checked above already; kept so a refusal of shared.conversion is never a crash.
        raise ConversionRefusedError(f"objects[{index}]: {err}") from err


def convert_review(request: ConversionRequest) -> ConversionResponse:
    """Convert every object of the request to its ``desiredAPIVersion``; ``uid`` is echoed."""
    uid = request["uid"]
    desired = request["desiredAPIVersion"]
    try:
        version = _target_version(desired)
        converted = [
            _convert_one(obj, index=index, desired=desired, version=version)
            for index, obj in enumerate(request["objects"])
        ]
    except ConversionRefusedError as err:
        return failed(uid, str(err))
    return succeeded(uid, converted)
