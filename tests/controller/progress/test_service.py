"""controller/progress/service.py: the steps of one report in order, cheapest refusal first, and
an accepted report stamped and handed on."""

from __future__ import annotations

import json
from typing import Any

from controller.progress.coalescer import JobKey, Status
from controller.progress.reviews import Refusal
from controller.progress.service import ProgressService
from controller.progress.tokens import Identity
from controller.progress.wire import Reply, Target
from tests.controller.progress.progress_samples import (
    JOB,
    NAMESPACE,
    FakeClock,
    job,
    pod,
    report,
    stores,
)

WORKER = "mnist-worker-0"
TARGET = Target(NAMESPACE, JOB)
WORKER_IDENTITY = Identity(
    username="system:serviceaccount:team:default",
    namespace=NAMESPACE,
    service_account="default",
    pod_name=WORKER,
    pod_uid=f"uid-{WORKER}",
)


class _Offers(list[tuple[JobKey, Status]]):
    def __call__(self, key: JobKey, status: Status) -> None:
        self.append((key, status))


def _service(
    identity: Identity | Refusal = WORKER_IDENTITY, *, synced: bool = True
) -> tuple[ProgressService, _Offers]:
    pods, jobs = stores(job(), pod(WORKER))
    offers = _Offers()
    service = ProgressService(
        identify=lambda header: identity,
        pods=pods,
        jobs=jobs,
        offer=offers,
        write_interval=5.0,
        synced=lambda: synced,
        clock=FakeClock(),
    )
    return service, offers


def _said(reply: Reply) -> tuple[int, str, dict[str, str]]:
    return reply.status, json.loads(reply.body)["message"], dict(reply.headers)


def test_an_accepted_report_is_stamped_and_handed_to_the_flusher() -> None:
    service, offers = _service()
    reply = service.handle(TARGET, {}, report({"progressPercentage": 45}))
    assert _said(reply) == (202, "accepted: written to the status within 5 seconds", {})
    assert offers == [
        (
            (NAMESPACE, JOB),
            {
                "progressPercentage": 45,
                "estimatedRemainingSeconds": None,
                "metrics": None,
                "lastUpdatedTime": "2025-06-15T15:06:40Z",
            },
        )
    ]


def test_a_refused_token_is_401_with_the_bearer_challenge_before_the_body_is_read() -> None:
    service, offers = _service(Refusal(401, "the token was not authenticated"))
    reply = service.handle(TARGET, {}, b"not json")
    assert _said(reply) == (
        401,
        "the token was not authenticated",
        {"WWW-Authenticate": "Bearer"},
    )
    assert offers == []


def test_a_review_that_could_not_be_made_is_503_with_retry_after() -> None:
    service, _ = _service(Refusal(503, "the token cannot be reviewed now: timeout"))
    status, _, headers = _said(service.handle(TARGET, {}, report()))
    assert (status, headers) == (503, {"Retry-After": "5"})


def test_caches_still_filling_are_503_not_403() -> None:
    service, _ = _service(synced=False)
    assert _said(service.handle(TARGET, {}, report())) == (
        503,
        "the controller's caches are still filling; try again shortly",
        {"Retry-After": "5"},
    )


def test_the_pod_is_checked_before_the_body() -> None:
    stranger = Identity(username="system:serviceaccount:team:default", namespace=NAMESPACE)
    service, _ = _service(stranger)
    assert _said(service.handle(TARGET, {}, b"not json"))[:2] == (403, "the token names no pod")


def test_a_missing_job_is_404() -> None:
    service, _ = _service()
    reply = service.handle(Target(NAMESPACE, "gone"), {}, report())
    assert _said(reply)[:2] == (404, "mxjob team/gone not found")


def test_a_bad_body_from_a_pod_of_the_job_is_400_naming_the_field() -> None:
    service, offers = _service()
    body: dict[str, Any] = {"progressPercentage": 120}
    assert _said(service.handle(TARGET, {}, report(body)))[:2] == (
        400,
        "trainerStatus.progressPercentage: must be an integer from 0 to 100, got 120",
    )
    assert offers == []
