"""controller/progress/reviews.py: one TokenReview per token per cache period, never past the
token's expiry, the token never kept; a failed review is 503 and not remembered."""

from __future__ import annotations

from controller.progress.reviews import Refusal, TokenReviews
from controller.progress.settings import AUDIENCE
from controller.progress.tokens import Identity
from controller.runtime.client import ApiError
from controller.runtime.metrics_reviews import api_reviewer
from tests.controller.progress.progress_samples import T0, FakeClock, FakeKube, jwt


def _reviews(kube: FakeKube, clock: FakeClock, *, size: int = 16) -> TokenReviews:
    return TokenReviews(
        api_reviewer(kube), audience=AUDIENCE, cache_seconds=60.0, cache_size=size, clock=clock
    )


def _bearer(token: str) -> str:
    return f"Bearer {token}"


def test_no_or_malformed_credentials_are_401_without_asking() -> None:
    kube = FakeKube()
    reviews = _reviews(kube, FakeClock())
    no_token = Refusal(401, "no bearer token: send Authorization: Bearer <token>")
    for header in (None, "", "Basic dXNlcjpwdw==", "Bearer ", "Bearer"):
        assert reviews.identify(header) == no_token
    assert reviews.identify("Bearer opaque") == Refusal(401, "the bearer token is not a JWT")
    assert kube.reviews() == []


def test_an_expired_token_is_401_without_asking() -> None:
    kube = FakeKube()
    token = kube.token_for("p", exp=T0 - 1)
    refused = _reviews(kube, FakeClock()).identify(_bearer(token))
    assert refused == Refusal(401, "the token expired at 2025-06-15T15:06:39Z")
    assert kube.reviews() == []


def test_a_token_is_reviewed_for_our_audience_then_answered_from_the_cache() -> None:
    kube, clock = FakeKube(), FakeClock()
    reviews = _reviews(kube, clock)
    first, second = kube.token_for("worker-0"), kube.token_for("worker-1")
    identity = reviews.identify(_bearer(first))
    assert isinstance(identity, Identity) and identity.pod_name == "worker-0"
    assert kube.reviews()[0].body["spec"] == {"token": first, "audiences": [AUDIENCE]}
    clock.advance(59)
    assert reviews.identify(_bearer(first)) == identity
    assert len(kube.reviews()) == 1
    reviews.identify(_bearer(second))
    assert len(kube.reviews()) == 2
    clock.advance(1)
    reviews.identify(_bearer(first))
    assert len(kube.reviews()) == 3, "60 s later the token is reviewed again"
    assert reviews.reviews_sent == 3


def test_the_cache_never_outlives_the_token() -> None:
    kube, clock = FakeKube(), FakeClock()
    reviews = _reviews(kube, clock)
    token = _bearer(kube.token_for("worker-0", exp=T0 + 5))
    assert isinstance(reviews.identify(token), Identity)
    clock.advance(4)
    assert isinstance(reviews.identify(token), Identity)
    clock.advance(2)
    assert reviews.identify(token) == Refusal(401, "the token expired at 2025-06-15T15:06:45Z")
    assert len(kube.reviews()) == 1


def test_the_token_itself_is_never_kept() -> None:
    kube = FakeKube()
    reviews = _reviews(kube, FakeClock())
    token = kube.token_for("worker-0")
    reviews.identify(_bearer(token))
    assert token not in repr(vars(reviews))


def test_a_refused_token_is_remembered_too() -> None:
    kube = FakeKube()
    reviews = _reviews(kube, FakeClock())
    stranger = _bearer(jwt({"exp": T0 + 600, "sub": "someone"}))
    refused = Refusal(401, "the token was not authenticated")
    assert reviews.identify(stranger) == refused
    assert reviews.identify(stranger) == refused
    assert len(kube.reviews()) == 1


def test_a_review_that_fails_is_503_and_asked_again_next_time() -> None:
    kube = FakeKube()
    token = _bearer(kube.token_for("worker-0"))

    def unreachable(path: str, body: object) -> dict[str, object]:
        raise ApiError(500, "Internal Server Error", {"message": "etcd timeout"})

    reviews = TokenReviews(
        unreachable, audience=AUDIENCE, cache_seconds=60, cache_size=4, clock=FakeClock()
    )
    refused = reviews.identify(token)
    assert isinstance(refused, Refusal) and refused.status == 503
    assert (
        refused.reason
        == "the token cannot be reviewed now: 500 Internal Server Error: etcd timeout"
    )
    assert reviews.reviews_sent == 0


def test_more_tokens_than_the_cache_holds_only_cost_more_reviews() -> None:
    kube = FakeKube()
    reviews = _reviews(kube, FakeClock(), size=2)
    tokens = [_bearer(kube.token_for(f"worker-{i}")) for i in range(3)]
    for token in tokens:
        assert isinstance(reviews.identify(token), Identity)
    assert isinstance(reviews.identify(tokens[0]), Identity)
    assert len(kube.reviews()) == 4
