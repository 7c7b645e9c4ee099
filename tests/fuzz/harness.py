"""What the fuzz properties share: how many inputs they ran, and what a well-formed answer is.

``make test`` runs a short pass of ``tests/fuzz`` (a few hundred generated inputs); ``make fuzz``
runs the same properties with ``MXJOB_FUZZ_EXAMPLES`` examples each and ``MXJOB_FUZZ_MIN_INPUTS``
as the number of inputs the run must reach, or fail. An *input* is one body answered by a review
endpoint; one generated example usually yields several (the review, its re-mutation, its
validation, the conversion back ...). ``tests/fuzz/conftest.py`` prints the count at the end.
"""

from __future__ import annotations

import base64
import json
import os
from collections import Counter
from typing import Any, Final

from hypothesis import HealthCheck, settings

from webhook.answers import Answer
from webhook.reviews import (
    ADMISSION_API_VERSION,
    ADMISSION_KIND,
    CONVERSION_API_VERSION,
    CONVERSION_KIND,
)

SHORT_EXAMPLES: Final = 60
"""Examples per property in ``make test``: about 300 inputs in all, in a few seconds."""

EXAMPLES_ENV: Final = "MXJOB_FUZZ_EXAMPLES"
MIN_INPUTS_ENV: Final = "MXJOB_FUZZ_MIN_INPUTS"

INPUTS: Counter[str] = Counter()
"""Bodies answered in this process, by endpoint."""


def examples(share: float = 1.0) -> int:
    """Examples for one property: ``share`` of the configured per-property count."""
    configured = int(os.environ.get(EXAMPLES_ENV, SHORT_EXAMPLES))
    return max(1, round(configured * share))


def min_inputs() -> int:
    """The count this run must reach (0 in the short pass, which only has to be quick)."""
    return int(os.environ.get(MIN_INPUTS_ENV, "0"))


def fuzz_settings(share: float = 1.0) -> settings:
    """Hypothesis settings for a fuzz property; generous generation, no deadlines.

    No example database in the long run: it would replay stored failures first, which is what a
    regression run wants but skews the count of new inputs, and 100,000 entries are clutter.
    """
    extra: dict[str, Any] = {"database": None} if EXAMPLES_ENV in os.environ else {}
    return settings(
        max_examples=examples(share),
        deadline=None,
        **extra,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.large_base_example,
            HealthCheck.filter_too_much,
        ],
    )


def count(endpoint: str, n: int = 1) -> None:
    INPUTS[endpoint] += n


def document_of(answer: Answer) -> dict[str, Any]:
    """The answer's body as JSON; fails unless it is a JSON object."""
    document = json.loads(answer.body)
    assert isinstance(document, dict), answer.body[:200]
    return document


def check_not_crashed(answer: Answer) -> None:
    """No exception escaped the decision code (the safety net turned none into a refusal)."""
    assert answer.error is None, f"{answer.reason}: {answer.error!r}"
    assert answer.result != "error", answer.reason
    assert answer.status in (200, 400), answer.status


def check_malformed(answer: Answer) -> None:
    """A 400 is ``{"error": <reason>}`` and nothing else."""
    document = document_of(answer)
    assert set(document) == {"error"}, document
    assert isinstance(document["error"], str) and document["error"]


def check_admission_answer(answer: Answer, *, uid: str | None) -> dict[str, Any]:
    """A well-formed AdmissionReview answer echoing ``uid``; returns its ``response``."""
    check_not_crashed(answer)
    assert answer.status == 200
    document = document_of(answer)
    assert document["apiVersion"] == ADMISSION_API_VERSION
    assert document["kind"] == ADMISSION_KIND
    response = document["response"]
    assert isinstance(response, dict)
    assert isinstance(response["uid"], str) and response["uid"]
    if uid is not None:
        assert response["uid"] == uid
    assert isinstance(response["allowed"], bool)
    assert set(response) <= {"uid", "allowed", "status", "patch", "patchType", "warnings"}
    if "patch" in response:
        assert response["allowed"] is True
        assert response["patchType"] == "JSONPatch"
        operations = json.loads(base64.b64decode(response["patch"], validate=True))
        assert isinstance(operations, list) and operations
    if not response["allowed"]:
        status = response["status"]
        assert isinstance(status["code"], int) and 400 <= status["code"] < 500, status
        assert isinstance(status["message"], str) and status["message"]
    return response


def check_conversion_answer(
    answer: Answer, *, uid: str | None, objects: int | None, desired: str | None
) -> dict[str, Any]:
    """A well-formed ConversionReview answer; returns its ``response``."""
    check_not_crashed(answer)
    assert answer.status == 200
    document = document_of(answer)
    assert document["apiVersion"] == CONVERSION_API_VERSION
    assert document["kind"] == CONVERSION_KIND
    response = document["response"]
    assert isinstance(response, dict)
    assert isinstance(response["uid"], str) and response["uid"]
    if uid is not None:
        assert response["uid"] == uid
    result = response["result"]
    assert result["status"] in ("Success", "Failure"), result
    converted = response["convertedObjects"]
    assert isinstance(converted, list)
    if result["status"] == "Failure":
        assert isinstance(result["message"], str) and result["message"]
        assert converted == []
    else:
        if objects is not None:
            assert len(converted) == objects
        if desired is not None:
            assert all(obj["apiVersion"] == desired for obj in converted)
    return response
