"""Admission decisions for MXJob: AdmissionRequest in, AdmissionResponse out. Pure.

The rules live in ``shared/`` (``validation.validate``, ``defaults.apply_defaults``); this module
only decides which of them to run for a request and shapes the answer:

- ``mutate`` denies what the rules refuse *before* defaulting (defaulting rewrites the owned env
  and would hide a user's value otherwise), then defaults, writes what the pods need to report
  progress (shared/progress_pods.py: admission only, as only the webhook knows the operator's
  namespace), and answers with a base64 JSON Patch from the object as sent to the defaulted one
  (no patch when nothing changes, which makes a second pass a no-op).
- ``validate`` re-checks the final object, after every mutating webhook ran. The install sends
  it UPDATEs only (manifests/webhook/webhook-configurations.yaml): on CREATE ``mutate``'s
  refusal is the one call, and ``manifests/components/validate-on-create`` adds CREATE where
  other mutating webhooks change jobs after ours.

On UPDATE both get the old object, so rules that depend on it (``jobMode`` is immutable, the
owned env may keep the values computed for it) see it. DELETE and CONNECT, and requests on a
subresource (``status``), are allowed untouched: there is no spec to judge. Objects are judged
as v1; a v1beta1 object (the API server sends v1 under ``matchPolicy: Equivalent``, but a
configuration might not) is converted first and its patch computed back in v1beta1 terms.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any, Final, cast

from shared import constants, conversion, defaults, queueing, validation
from shared.progress_pods import inject_progress
from webhook.reviews import AdmissionRequest, AdmissionResponse, JSONObject, JSONPatchOp, Status

INVALID: Final = Status(code=422, reason="Invalid")
"""Status of a refused MXJob: kubectl prints ``Error from server (Invalid)`` and the message."""

BAD_REQUEST: Final = Status(code=400, reason="BadRequest")
"""Status of a request about something that is not an MXJob this webhook knows."""

INTERNAL_ERROR: Final = Status(code=500, reason="InternalError")
"""Status of a review the webhook failed to decide; the review itself is refused (HTTP 200)."""

_API_VERSIONS: Final = {
    constants.API_VERSION_V1: constants.V1,
    constants.API_VERSION_V1BETA1: constants.V1BETA1,
}


class NotAnMXJobError(ValueError):
    """The review's object is not a ``kubeflow.org`` MXJob of a served version."""


def allowed(uid: str, *, patch: Sequence[JSONPatchOp] = ()) -> AdmissionResponse:
    """Admit; with a non-empty ``patch``, as a base64 JSON Patch."""
    response = AdmissionResponse(uid=uid, allowed=True)
    if patch:
        encoded = json.dumps(list(patch), allow_nan=False, separators=(",", ":"))
        response["patch"] = base64.b64encode(encoded.encode("utf-8")).decode("ascii")
        response["patchType"] = "JSONPatch"
    return response


def denied(uid: str, message: str, *, status: Status = INVALID) -> AdmissionResponse:
    """Refuse with ``message`` (every violation, each with its field path)."""
    result: Status = {**status, "message": message}
    return AdmissionResponse(uid=uid, allowed=False, status=result)


def internal_error(uid: str) -> AdmissionResponse:
    """Refuse because the webhook failed; the details are in the webhook's log, not the answer."""
    return denied(
        uid,
        f"internal error in the mxjob webhook while reviewing request {uid}; see the webhook log",
        status=INTERNAL_ERROR,
    )


def judged_operation(request: AdmissionRequest) -> bool:
    return request["operation"] in ("CREATE", "UPDATE") and not request.get("subResource")


def as_v1(obj: JSONObject) -> tuple[JSONObject, str]:
    """The v1 form of an MXJob and the version it came in; ``NotAnMXJobError`` for others."""
    api_version = obj.get("apiVersion")
    version = _API_VERSIONS.get(api_version) if isinstance(api_version, str) else None
    if version is None or obj.get("kind") != constants.KIND:
        raise NotAnMXJobError(
            f"this webhook reviews {constants.KIND} objects of "
            f"{' or '.join(sorted(_API_VERSIONS))}, not {str(api_version)[:80]!r} "
            f"kind {str(obj.get('kind'))[:80]!r}"
        )
    if version == constants.V1:
        return obj, version
    return conversion.convert(obj, constants.V1), version


def _objects(request: AdmissionRequest) -> tuple[JSONObject, JSONObject, str, JSONObject | None]:
    """(object as sent, its v1 form, the version it was sent in, the old object as v1)."""
    sent = request.get("object")
    if sent is None:  # parse_admission_review requires it on CREATE and UPDATE
        raise NotAnMXJobError("the request has no object")
    job, version = as_v1(sent)
    old: JSONObject | None = None
    old_object = request.get("oldObject")
    if request["operation"] == "UPDATE" and old_object is not None:
        old = as_v1(old_object)[0]
    return sent, job, version, old


def _refusal(job: JSONObject, violations: Sequence[validation.Violation]) -> str:
    metadata = job.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return validation.format_violations(violations, name=name if isinstance(name, str) else "")


def _judge(
    request: AdmissionRequest, *, kueue_workloads: bool
) -> AdmissionResponse | tuple[JSONObject, JSONObject, str]:
    """What both webhooks decide first: the answer when there is nothing more to decide (an
    operation we do not judge, not an MXJob, an invalid one), else the valid job as
    (object as sent, its v1 form, the version it was sent in). With ``kueue_workloads``
    (Kueue's Workload route, shared/queueing.py) its rules for queued jobs apply too."""
    uid = request["uid"]
    if not judged_operation(request):
        return allowed(uid)
    try:
        sent, job, version, old = _objects(request)
    except NotAnMXJobError as err:
        return denied(uid, str(err), status=BAD_REQUEST)
    violations = validation.validate(job, old=old)
    if kueue_workloads:
        violations += [
            validation.Violation(path, message)
            for path, message in queueing.queueing_problems(job, old=old)
        ]
    if violations:
        return denied(uid, _refusal(job, violations))
    return sent, job, version


def mutate(
    request: AdmissionRequest,
    *,
    kueue_workloads: bool = False,
    progress_namespace: str | None = None,
) -> AdmissionResponse:
    """The mutating webhook's answer: refuse an invalid MXJob, else patch in the defaults.

    With ``kueue_workloads``, a queued job is created suspended: it waits for Kueue to admit
    its Workload (controller/integrations/kueue/contract.py), as Kueue's own webhooks do for the
    kinds they know. With ``progress_namespace`` (the operator's namespace, where the
    controller's progress Service is), every replica's template gets the env and the volume its
    pods report progress with (shared/progress_pods.py); None: nothing of it.
    """
    judged = _judge(request, kueue_workloads=kueue_workloads)
    if not isinstance(judged, tuple):
        return judged
    sent, job, version = judged
    defaulted = defaults.apply_defaults(job)
    if (
        kueue_workloads
        and request["operation"] == "CREATE"
        and queueing.suspend_for_queue(defaulted)
    ):
        defaulted["spec"]["runPolicy"]["suspend"] = True
    if progress_namespace is not None:
        inject_progress(
            defaulted,
            operator_namespace=progress_namespace,
            namespace=request.get("namespace") or "",
        )
    # The defaulted object is not validated again here: defaulting a valid job yields a valid
    # one (tests/fuzz checks that property). Re-validating cost 40 % of a mutate review
    # (bench/findings.md). What another mutating webhook makes of the job afterwards is judged
    # when this one is reinvoked (reinvocationPolicy IfNeeded), and by the controller before it
    # runs anything (controller/job/status/verdicts.py, MXJobFailedValidation).
    target = defaulted if version == constants.V1 else conversion.convert(defaulted, version)
    return allowed(request["uid"], patch=make_patch(sent, target))


def validate(request: AdmissionRequest, *, kueue_workloads: bool = False) -> AdmissionResponse:
    """The validating webhook's answer: every violation of the final object, or allowed."""
    judged = _judge(request, kueue_workloads=kueue_workloads)
    return judged if not isinstance(judged, tuple) else allowed(request["uid"])


def make_patch(source: JSONObject, target: JSONObject) -> list[JSONPatchOp]:
    """The RFC 6902 operations turning ``source`` into ``target`` (empty when they are equal).

    A structural diff: objects are compared key by key and recursed into; lists of the same
    length element by element (defaulting changes the ``mxnet`` container in place, so its
    sidecars stay out of the patch); anything else that differs (a list that grew, a scalar, a
    change of type) is replaced whole. ``jsonpatch.make_patch`` also searches lists for
    minimal moves, which made patching a third of a mutate review's time (bench/findings.md)
    for no benefit to the API server: defaulting appends env entries and ports, and replacing
    such a list is one operation that cannot misplace an element. Equality is Python's
    (``1 == True``), which defaulting never relies on.
    """
    operations: list[dict[str, Any]] = []
    _diff(source, target, "", operations)
    return cast(list[JSONPatchOp], operations)


def _pointer_token(key: str) -> str:
    """A JSON Pointer reference token (RFC 6901): ``~`` and ``/`` escaped."""
    return key.replace("~", "~0").replace("/", "~1")


def _diff(source: Any, target: Any, path: str, operations: list[dict[str, Any]]) -> None:
    if source == target and type(source) is type(target):
        return
    if isinstance(source, list) and isinstance(target, list) and len(source) == len(target):
        for index, (before, after) in enumerate(zip(source, target, strict=True)):
            if before == after and type(before) is type(after):
                continue
            _diff(before, after, f"{path}/{index}", operations)
        return
    if not (isinstance(source, dict) and isinstance(target, dict)):
        operations.append({"op": "replace", "path": path, "value": target})
        return
    for key in source:
        if key not in target:
            operations.append({"op": "remove", "path": f"{path}/{_pointer_token(key)}"})
    for key, value in target.items():
        if key not in source:
            operations.append(
                {"op": "add", "path": f"{path}/{_pointer_token(key)}", "value": value}
            )
            continue
        before = source[key]
        if before == value and type(before) is type(value):
            continue  # most of a job is unchanged: no pointer is built for it
        _diff(before, value, f"{path}/{_pointer_token(key)}", operations)
