"""Who may read ``/metrics``: the decision both processes make before they answer a scrape.

A scrape carries the scraper's ServiceAccount token (``Authorization: Bearer …``). The token is
authenticated with a TokenReview and the user it names is authorized with a SubjectAccessReview
for ``get`` on the non-resource URL ``/metrics``: the checks Kubebuilder's ``--metrics-secure``
and kube-rbac-proxy make, so the ClusterRole ``mxjob-metrics-reader`` grants a scraper exactly
what it grants on any component that works this way. No token is 401, a token the API server
does not know is 401, a known user without the permission is 403.

This module is pure: the two reviews are sent by a :class:`Reviewer` the process provides
(controller/runtime/metrics_reviews.py through the controller's client, webhook/apiserver.py over
the pod's own token). Decisions are cached for :attr:`AccessSettings.cache_seconds` by a hash of
the token, so a scrape every few seconds costs two API requests per scraper per cache period,
never per scrape; a token is never kept in memory longer than its hash.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

METRICS_PATH: Final = "/metrics"
TOKEN_REVIEW_PATH: Final = "/apis/authentication.k8s.io/v1/tokenreviews"
ACCESS_REVIEW_PATH: Final = "/apis/authorization.k8s.io/v1/subjectaccessreviews"


class Reviewer(Protocol):
    """Sends one review to the API server and returns the API server's answer (the object)."""

    def __call__(self, path: str, body: Mapping[str, Any]) -> Mapping[str, Any]: ...


@dataclass(frozen=True, kw_only=True)
class Decision:
    """The answer to one scrape: ``status`` 200 (serve), 401 or 403, and why (for the body and
    the log; never the token)."""

    status: int
    reason: str

    @property
    def allowed(self) -> bool:
        return self.status == 200


@dataclass(frozen=True, kw_only=True)
class AccessSettings:
    """How long a decision is reused, and how many are kept."""

    cache_seconds: float = 60.0
    """A token's decision is reused this long: a revoked token or binding is refused within it.
    Kubebuilder's authentication filter caches for a minute too."""
    cache_size: int = 256
    """Distinct tokens remembered; more scrapers than this only cost more reviews."""
    audiences: tuple[str, ...] = ()
    """The audiences a token must carry (empty: the API server's own, as for a mounted
    ServiceAccount token)."""


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, or None."""
    if not authorization:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return None
    return token


def token_review(token: str, *, audiences: tuple[str, ...] = ()) -> dict[str, Any]:
    """The TokenReview that asks the API server who ``token`` belongs to."""
    spec: dict[str, Any] = {"token": token}
    if audiences:
        spec["audiences"] = list(audiences)
    return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec}


def access_review(user: Mapping[str, Any]) -> dict[str, Any]:
    """The SubjectAccessReview for ``get /metrics`` by the user a TokenReview returned."""
    spec: dict[str, Any] = {
        "user": str(user.get("username", "")),
        "groups": list(user.get("groups") or []),
        "nonResourceAttributes": {"path": METRICS_PATH, "verb": "get"},
    }
    if user.get("uid"):
        spec["uid"] = str(user["uid"])
    if user.get("extra"):
        spec["extra"] = {key: list(values) for key, values in dict(user["extra"]).items()}
    return {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": spec,
    }


def authenticated_user(answer: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The user of an answered TokenReview, or None when the token was not authenticated."""
    status = answer.get("status") or {}
    if not status.get("authenticated"):
        return None
    user = status.get("user") or {}
    return user if user.get("username") else None


def decide(token: str | None, *, review: Reviewer, audiences: tuple[str, ...] = ()) -> Decision:
    """The decision for one token, asking the API server (no cache)."""
    if token is None:
        return Decision(status=401, reason="no bearer token")
    user = authenticated_user(review(TOKEN_REVIEW_PATH, token_review(token, audiences=audiences)))
    if user is None:
        return Decision(status=401, reason="the token was not authenticated")
    name = str(user["username"])
    answer = review(ACCESS_REVIEW_PATH, access_review(user))
    status = answer.get("status") or {}
    if not status.get("allowed"):
        why = status.get("reason") or "no RBAC rule allows it"
        return Decision(status=403, reason=f"{name} may not get {METRICS_PATH}: {why}")
    return Decision(status=200, reason=f"{name} may get {METRICS_PATH}")


class MetricsGate:
    """Decides scrapes with :func:`decide`, each token's decision cached (see the module)."""

    def __init__(
        self,
        review: Reviewer,
        *,
        settings: AccessSettings | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._review = review
        self.settings = settings or AccessSettings()
        self._clock = clock
        self._cache: dict[str, tuple[float, Decision]] = {}
        self._lock = threading.Lock()
        self.reviews_sent = 0
        """Scrapes decided by asking the API server (the rest came from the cache)."""

    def check(self, authorization: str | None) -> Decision:
        """The decision for a request's ``Authorization`` header. A failed review (the API
        server unreachable) raises: the caller answers 500 and caches nothing."""
        token = bearer_token(authorization)
        if token is None:
            return decide(None, review=self._review)
        key = hashlib.sha256(token.encode()).hexdigest()
        now = self._clock()
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None and cached[0] > now:
                return cached[1]
        decision = decide(token, review=self._review, audiences=self.settings.audiences)
        with self._lock:
            self.reviews_sent += 1
            if len(self._cache) >= self.settings.cache_size:
                self._cache = {k: v for k, v in self._cache.items() if v[0] > now}
                while len(self._cache) >= self.settings.cache_size:
                    self._cache.pop(next(iter(self._cache)))
            self._cache[key] = (now + self.settings.cache_seconds, decision)
        return decision
