"""controller/progress/endpoint.py: the endpoint as a pod meets it, over real HTTPS on
127.0.0.1, with a fake API server behind it: every answer of the contract, one TokenReview per
token per cache period, and a burst of reports coalesced into one write per job per interval."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from controller.progress.endpoint import ProgressEndpoint, progress_endpoint
from controller.progress.settings import ProgressSettings
from tests.controller.progress.progress_samples import (
    NAMESPACE,
    STATUS_PATH,
    T0,
    Answer,
    FakeClock,
    FakeKube,
    Tls,
    job,
    pod,
    post,
    report,
    serving_tls,
    stores,
    writer,
)
from tests.helpers.waiting import wait_for

WORKERS = [f"mnist-worker-{i}" for i in range(8)]


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Tls:
    return serving_tls(tmp_path_factory.mktemp("tls"))


@dataclass
class Served:
    endpoint: ProgressEndpoint
    kube: FakeKube
    clock: FakeClock
    tls: Tls
    synced: list[bool]

    def post(self, body: bytes = b"{}", **kw: Any) -> Answer:
        return post(self.endpoint.port, self.tls, body, **kw)


def _serve(tls: Tls, *, interval: float = 5.0) -> Served:
    kube, clock, synced = FakeKube(), FakeClock(), [True]
    pods, jobs = stores(
        job(),
        *(pod(name) for name in WORKERS),
        pod("mnist-worker-done", phase="Succeeded"),
        pod("other-worker-0", job_name="other", job_uid="uid-other"),
    )
    settings = ProgressSettings(host="127.0.0.1", port=0, write_interval=interval)
    endpoint = progress_endpoint(
        settings,
        client=kube,
        pods=pods,
        jobs=jobs,
        tls=lambda: tls.server,
        write=writer(kube),
        synced=lambda: synced[0],
        clock=clock,
    )
    assert endpoint is not None
    return Served(endpoint.start(), kube, clock, tls, synced)


@pytest.fixture
def served(tls: Tls) -> Iterator[Served]:
    running = _serve(tls)
    yield running
    running.endpoint.stop()


def test_a_disabled_endpoint_is_not_built(tls: Tls) -> None:
    pods, jobs = stores()
    settings = ProgressSettings(enabled=False)
    kube = FakeKube()
    built = progress_endpoint(
        settings, client=kube, pods=pods, jobs=jobs, tls=lambda: tls.server, write=writer(kube)
    )
    assert built is None


def test_an_accepted_report_is_202_and_written_to_the_status_subresource(served: Served) -> None:
    token = served.kube.token_for(WORKERS[0])
    status = {"progressPercentage": 45, "metrics": [{"name": "loss", "value": "0.2347"}]}
    answer = served.post(report(status), token=token)
    assert (answer.status, answer.message) == (
        202,
        "accepted: written to the status within 5 seconds",
    )
    [patch] = wait_for("the write", served.kube.patches, lambda p: len(p) == 1, timeout=5)
    assert (patch.path, patch.content_type) == (STATUS_PATH, "application/merge-patch+json")
    assert patch.body == {
        "status": {
            "trainerStatus": {
                **status,
                "estimatedRemainingSeconds": None,
                "lastUpdatedTime": "2025-06-15T15:06:40Z",
            }
        }
    }


@pytest.mark.parametrize(
    ("pod_name", "path", "status", "message"),
    [
        (None, STATUS_PATH, 403, "the token names no pod"),
        ("mnist-worker-done", STATUS_PATH, 403, "pod mnist-worker-done has finished (Succeeded)"),
        ("other-worker-0", STATUS_PATH, 403, "pod other-worker-0 is not a pod of mxjob mnist"),
        (
            "mnist-worker-0",
            STATUS_PATH.replace("/mnist/", "/gone/"),
            404,
            "mxjob team/gone not found",
        ),
    ],
)
def test_a_token_of_the_wrong_pod_or_job_is_refused(
    served: Served, pod_name: str | None, path: str, status: int, message: str
) -> None:
    answer = served.post(report(), token=served.kube.token_for(pod_name), path=path)
    assert (answer.status, answer.message) == (status, message)
    assert answer.body["reason"] in ("Forbidden", "NotFound")


def test_a_token_of_another_namespace_is_403(served: Served) -> None:
    token = served.kube.token_for(WORKERS[0], namespace="elsewhere")
    answer = served.post(report(), token=token)
    assert (answer.status, answer.message) == (
        403,
        f"the token is of namespace elsewhere, not {NAMESPACE}",
    )


def test_missing_or_bad_credentials_are_401_with_the_bearer_challenge(served: Served) -> None:
    kube = served.kube
    cases = [
        ({}, "no bearer token: send Authorization: Bearer <token>"),
        (
            {"Authorization": "Basic dXNlcjpwdw=="},
            "no bearer token: send Authorization: Bearer <token>",
        ),
        ({"Authorization": "Bearer opaque"}, "the bearer token is not a JWT"),
        (
            {"Authorization": f"Bearer {kube.token_for(WORKERS[0], exp=T0 - 60)}"},
            "the token expired at 2025-06-15T15:05:40Z",
        ),
        (
            {"Authorization": f"Bearer {kube.token_for(WORKERS[0], audiences=('api',))}"},
            "the token is not for the audience mxjob.kubeflow.org",
        ),
    ]
    kube.tokens.pop(forged := f"{kube.token_for(WORKERS[0])}")
    cases.append(({"Authorization": f"Bearer {forged}"}, "the token was not authenticated"))
    for headers, message in cases:
        answer = served.post(report(), headers=headers)
        assert (answer.status, answer.message, answer.headers["www-authenticate"]) == (
            401,
            message,
            "Bearer",
        )


def test_a_bad_body_is_400_naming_the_field(served: Served) -> None:
    token = served.kube.token_for(WORKERS[0])
    answer = served.post(report({"progressPercentage": 120}), token=token)
    assert (answer.status, answer.message) == (
        400,
        "trainerStatus.progressPercentage: must be an integer from 0 to 100, got 120",
    )
    assert answer.body["reason"] == "BadRequest"


def test_requests_the_endpoint_does_not_serve(served: Served) -> None:
    token = served.kube.token_for(WORKERS[0])
    assert served.post(path="/healthz", token=token).status == 404
    wrong_method = served.post(method="GET", token=token)
    assert (wrong_method.status, wrong_method.headers["allow"]) == (405, "POST")
    form = served.post(token=token, headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert form.status == 415
    huge = served.post(b" " * (64 * 1024 + 1), token=token)
    assert (huge.status, huge.message) == (
        413,
        "the body is larger than 65536 bytes (Content-Length: 65537)",
    )
    assert served.kube.reviews() == [], "none of them cost a TokenReview"


def test_caches_still_filling_are_503(served: Served) -> None:
    served.synced[0] = False
    answer = served.post(report(), token=served.kube.token_for(WORKERS[0]))
    assert (answer.status, answer.headers["retry-after"]) == (503, "5")


def test_a_token_is_reviewed_once_per_cache_period_and_never_past_its_expiry(
    served: Served,
) -> None:
    kube, clock = served.kube, served.clock
    first, second = kube.token_for(WORKERS[0]), kube.token_for(WORKERS[1])
    short = kube.token_for(WORKERS[2], exp=T0 + 10)
    assert served.post(report(), token=first).status == 202
    assert served.post(report(), token=first).status == 202
    assert len(kube.reviews()) == 1, "the second request is answered from the cache"
    assert served.post(report(), token=second).status == 202
    assert len(kube.reviews()) == 2, "another token is reviewed"
    assert served.post(report(), token=short).status == 202
    clock.advance(11)
    answer = served.post(report(), token=short)
    assert (answer.status, answer.message) == (401, "the token expired at 2025-06-15T15:06:50Z")
    assert served.post(report(), token=first).status == 202
    assert len(kube.reviews()) == 3, "an expired token is not reviewed; a cached one still cached"
    clock.advance(50)
    assert served.post(report(), token=first).status == 202
    assert len(kube.reviews()) == 4, "60 s after its review the token is reviewed again"
    assert served.endpoint.reviews.reviews_sent == 4


def test_a_burst_from_every_pod_is_one_write_per_interval_with_the_latest_report(tls: Tls) -> None:
    """100 reports a second from 8 pods for 3 s (the clock moves 10 ms per report), interval
    1 s: a write at once, one a second after, and the last report an interval after it came."""
    running = _serve(tls, interval=1.0)
    kube, clock = running.kube, running.clock
    tokens = {name: kube.token_for(name) for name in WORKERS}
    sequence, lock = itertools.count(), threading.Lock()

    def pod_reports(name: str) -> None:
        for _ in range(299 // len(WORKERS) + 1):
            with lock:
                seq = next(sequence)
                if seq >= 299:
                    return
                clock.advance(0.01)
            body = {
                "progressPercentage": seq % 100,
                "metrics": [{"name": "seq", "value": str(seq)}],
            }
            assert running.post(report(body), token=tokens[name]).status == 202

    try:
        threads = [threading.Thread(target=pod_reports, args=(name,)) for name in WORKERS]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        last = {"progressPercentage": 99, "metrics": [{"name": "seq", "value": "299"}]}
        clock.advance(0.01)
        assert running.post(report(last), token=tokens[WORKERS[0]]).status == 202
        clock.advance(1.0)
        running.endpoint.flusher.wake()
        wait_for(
            "the last write",
            running.endpoint.flusher.waiting,
            lambda n: n == 0,
            timeout=5,
        )
        patches = wait_for(
            "the writes",
            kube.patches,
            lambda p: p[-1].body["status"]["trainerStatus"]["metrics"] == last["metrics"],
            timeout=5,
        )
    finally:
        running.endpoint.stop()
    counts = running.endpoint.counts()
    assert 3 <= len(patches) <= 4
    assert patches[-1].body["status"]["trainerStatus"]["progressPercentage"] == 99
    assert (counts.received, counts.accepted, counts.rejected) == (300, 300, {})
    assert counts.writes == len(patches) and counts.coalesced == 300 - len(patches)
    assert len(kube.reviews()) == len(WORKERS)
