"""controller/progress/tokens.py: a token's own expiry is read without trusting it further, and a
TokenReview's answer is an identity only when authenticated for our audience."""

from __future__ import annotations

import pytest

from controller.progress.settings import AUDIENCE
from controller.progress.tokens import (
    Identity,
    NotAJwtError,
    Unauthenticated,
    identity_of,
    token_expiry,
)
from tests.controller.progress.progress_samples import jwt, review_status


def test_the_expiry_is_the_exp_claim_and_none_without_one() -> None:
    assert token_expiry(jwt({"exp": 1700000000})) == 1700000000.0
    assert token_expiry(jwt({"sub": "x"})) is None
    assert token_expiry(jwt({"exp": "soon"})) is None


@pytest.mark.parametrize("token", ["opaque", "a.b", "a..c", "a.!!!.c", f"a.{'e30'}x.c", "a.WzFd.c"])
def test_what_is_not_a_jwt_is_refused(token: str) -> None:
    with pytest.raises(NotAJwtError):
        token_expiry(token)


def test_an_authenticated_answer_names_the_service_account_and_its_pod() -> None:
    identity = identity_of({"status": review_status("mnist-worker-0")}, audience=AUDIENCE)
    assert identity == Identity(
        username="system:serviceaccount:team:default",
        namespace="team",
        service_account="default",
        pod_name="mnist-worker-0",
        pod_uid="uid-mnist-worker-0",
    )


def test_a_token_bound_to_no_pod_has_no_pod() -> None:
    identity = identity_of({"status": review_status(None)}, audience=AUDIENCE)
    assert isinstance(identity, Identity) and identity.pod_name is None


def test_a_user_that_is_no_service_account_has_no_namespace() -> None:
    answer = {
        "status": {"authenticated": True, "audiences": [AUDIENCE], "user": {"username": "alice"}}
    }
    identity = identity_of(answer, audience=AUDIENCE)
    assert isinstance(identity, Identity) and identity.namespace is None


def test_an_unauthenticated_answer_says_why() -> None:
    answer = {"status": {"authenticated": False, "error": "token has expired"}}
    assert identity_of(answer, audience=AUDIENCE) == Unauthenticated(
        "the token was not authenticated: token has expired"
    )
    assert identity_of({}, audience=AUDIENCE) == Unauthenticated("the token was not authenticated")


def test_an_answer_without_our_audience_is_refused() -> None:
    """An API server that ignores spec.audiences says authenticated for any token: the answer
    must name the audience back."""
    wrong = review_status("p", audiences=("https://kubernetes.default.svc",))
    for status in (wrong, {**review_status("p"), "audiences": None}):
        assert identity_of({"status": status}, audience=AUDIENCE) == Unauthenticated(
            "the token is not for the audience mxjob.kubeflow.org"
        )
