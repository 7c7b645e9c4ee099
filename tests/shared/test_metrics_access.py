"""shared/metrics_access.py: who may read /metrics, and how long a decision is reused."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from shared.metrics_access import (
    ACCESS_REVIEW_PATH,
    TOKEN_REVIEW_PATH,
    AccessSettings,
    MetricsGate,
    access_review,
    bearer_token,
    decide,
    token_review,
)

USERS: dict[str, dict[str, Any]] = {
    "reader-token": {"username": "system:serviceaccount:monitoring:prometheus", "uid": "u1",
                     "groups": ["system:serviceaccounts"], "extra": {"k": ["v"]}},
    "other-token": {"username": "system:serviceaccount:default:nosy", "groups": []},
}  # fmt: skip
READERS = {"system:serviceaccount:monitoring:prometheus"}


class FakeApiServer:
    """Answers reviews as an API server with ``USERS`` and one binding to the reader role."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, Mapping[str, Any]]] = []

    def __call__(self, path: str, body: Mapping[str, Any]) -> Mapping[str, Any]:
        self.sent.append((path, body))
        if path == TOKEN_REVIEW_PATH:
            user = USERS.get(body["spec"]["token"])
            return {"status": {"authenticated": True, "user": user} if user else {}}
        assert path == ACCESS_REVIEW_PATH
        allowed = body["spec"]["user"] in READERS
        return {"status": {"allowed": allowed, **({} if allowed else {"reason": ""})}}


@pytest.mark.parametrize(
    ("header", "token"),
    [
        ("Bearer abc", "abc"),
        ("bearer  abc ", "abc"),
        ("Basic abc", None),
        ("Bearer", None),
        ("", None),
        (None, None),
    ],
)
def test_only_a_bearer_header_carries_a_token(header: str | None, token: str | None) -> None:
    assert bearer_token(header) == token


def test_the_access_review_asks_for_get_on_metrics_as_the_reviewed_user() -> None:
    review = access_review(USERS["reader-token"])
    assert review["spec"] == {
        "user": "system:serviceaccount:monitoring:prometheus",
        "uid": "u1",
        "groups": ["system:serviceaccounts"],
        "extra": {"k": ["v"]},
        "nonResourceAttributes": {"path": "/metrics", "verb": "get"},
    }
    assert token_review("t", audiences=("a",))["spec"] == {"token": "t", "audiences": ["a"]}


def test_no_token_is_401_without_asking_the_api_server() -> None:
    server = FakeApiServer()
    assert decide(None, review=server).status == 401
    assert server.sent == []


def test_an_unknown_token_is_401_a_user_without_the_role_403_a_reader_200() -> None:
    server = FakeApiServer()
    assert decide("stolen", review=server).status == 401
    refused = decide("other-token", review=server)
    assert refused.status == 403 and "nosy may not get /metrics" in refused.reason
    assert decide("reader-token", review=server).allowed


def test_a_decision_is_reused_until_it_expires() -> None:
    server, now = FakeApiServer(), [0.0]
    gate = MetricsGate(server, settings=AccessSettings(cache_seconds=60), clock=lambda: now[0])
    assert gate.check("Bearer reader-token").allowed
    assert gate.check("Bearer reader-token").allowed
    assert gate.check("Bearer other-token").status == 403
    assert gate.reviews_sent == 2 and len(server.sent) == 4  # two reviews per distinct token
    now[0] = 61.0
    assert gate.check("Bearer reader-token").allowed
    assert gate.reviews_sent == 3


def test_the_cache_keeps_at_most_its_size_and_never_the_token_itself() -> None:
    server = FakeApiServer()
    gate = MetricsGate(server, settings=AccessSettings(cache_size=2))
    for token in ("reader-token", "other-token", "third", "fourth"):
        gate.check(f"Bearer {token}")
    assert len(gate._cache) == 2
    assert not any(token in key for key in gate._cache for token in USERS)


def test_a_failed_review_is_raised_and_not_cached() -> None:
    calls = [0]

    def unreachable(path: str, body: Mapping[str, Any]) -> Mapping[str, Any]:
        calls[0] += 1
        raise ConnectionError("API server unreachable")

    gate = MetricsGate(unreachable)
    for _ in range(2):
        with pytest.raises(ConnectionError):
            gate.check("Bearer reader-token")
    assert calls[0] == 2
