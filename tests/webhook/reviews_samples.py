"""Reviews shaped as the API server sends them, for tests, fuzzers and benchmarks of the webhook.

One module, so the webhook's tests, the fuzzing in tests/fuzz and the load in bench/ build requests
the same way instead of each copying an AdmissionReview by hand. Test support, not product: it
lives outside the ``webhook`` package, so the wheel and the webhook's image do not carry it.
"""

from __future__ import annotations

import base64
import json
import uuid
from typing import Any, cast

from shared import constants
from webhook.reviews import (
    ADMISSION_API_VERSION,
    ADMISSION_KIND,
    CONVERSION_API_VERSION,
    CONVERSION_KIND,
    AdmissionResponse,
    JSONObject,
    JSONPatchOp,
    Operation,
)


def admission_review(
    obj: JSONObject | None,
    *,
    operation: Operation = "CREATE",
    old: JSONObject | None = None,
    uid: str | None = None,
    namespace: str | None = None,
    sub_resource: str | None = None,
    version: str = constants.V1,
) -> dict[str, Any]:
    """An admission.k8s.io/v1 AdmissionReview about an MXJob, as the API server would send it.

    ``namespace`` and ``name`` are taken from the object when not given, as the API server does.
    """
    subject = obj if obj is not None else old
    metadata = subject.get("metadata", {}) if isinstance(subject, dict) else {}
    metadata = metadata if isinstance(metadata, dict) else {}
    gvk = {"group": constants.GROUP, "version": version, "kind": constants.KIND}
    gvr = {"group": constants.GROUP, "version": version, "resource": constants.PLURAL}
    request: dict[str, Any] = {
        "uid": uid if uid is not None else str(uuid.uuid4()),
        "kind": gvk,
        "resource": gvr,
        "requestKind": gvk,
        "requestResource": gvr,
        "operation": operation,
        "userInfo": {"username": "tester", "groups": ["system:authenticated"]},
        "object": obj,
        "oldObject": old,
        "dryRun": False,
        "options": None,
    }
    name = metadata.get("name")
    if isinstance(name, str):
        request["name"] = name
    ns = namespace if namespace is not None else metadata.get("namespace")
    if isinstance(ns, str):
        request["namespace"] = ns
    if sub_resource is not None:
        request["subResource"] = sub_resource
        request["requestSubResource"] = sub_resource
    return {"apiVersion": ADMISSION_API_VERSION, "kind": ADMISSION_KIND, "request": request}


def conversion_review(
    objects: list[JSONObject], *, desired_api_version: str, uid: str | None = None
) -> dict[str, Any]:
    """An apiextensions.k8s.io/v1 ConversionReview asking for ``desired_api_version``."""
    return {
        "apiVersion": CONVERSION_API_VERSION,
        "kind": CONVERSION_KIND,
        "request": {
            "uid": uid if uid is not None else str(uuid.uuid4()),
            "desiredAPIVersion": desired_api_version,
            "objects": objects,
        },
    }


def decode_patch(response: AdmissionResponse) -> list[JSONPatchOp]:
    """The JSON Patch of an admission response (empty without one), as the API server reads the
    ``patch`` that ``webhook.admission.allowed`` encodes."""
    encoded = response.get("patch")
    if encoded is None:
        return []
    return cast(list[JSONPatchOp], json.loads(base64.b64decode(encoded)))
