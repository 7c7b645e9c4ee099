"""Who sent a report: the bearer token reviewed by the API server, the answer cached.

Each pod reports every few seconds with the same token (the kubelet renews it every hour or so),
so asking the API server each time would cost a TokenReview per report. Answers are kept for
:attr:`~controller.progress.settings.ProgressSettings.token_cache_seconds`, never past the
token's own ``exp`` (read unverified, controller/progress/tokens.py), keyed by a SHA-256 of the
token: the token itself is never kept. Refusals are cached as answers are, so a pod retrying
with a bad token does not turn into a flood of reviews. A review that fails (the API server
unreachable, the controller not allowed to create TokenReviews) is answered 503 and not cached:
the reporter tries again later, and the next attempt asks again.

The reviews go through the controller's client, as those of ``/metrics`` do
(controller/runtime/metrics_reviews.py), and are counted among its API writes the same way.
"""

from __future__ import annotations

import datetime
import hashlib
import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from controller.progress.tokens import (
    Identity,
    NotAJwtError,
    Unauthenticated,
    identity_of,
    token_expiry,
)
from shared.apitime import format_time
from shared.metrics_access import TOKEN_REVIEW_PATH, Reviewer, bearer_token, token_review

log = logging.getLogger(__name__)

Reviewed = Identity | Unauthenticated


@dataclass(frozen=True)
class Refusal:
    """The request is refused before any job is looked at: 401, or 503 when the API server
    could not say."""

    status: int
    reason: str


class TokenReviews:
    """Identifies the sender of a request by its ``Authorization`` header (see the module)."""

    def __init__(
        self,
        review: Reviewer,
        *,
        audience: str,
        cache_seconds: float,
        cache_size: int,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._review = review
        self.audience = audience
        self.cache_seconds = cache_seconds
        self.cache_size = cache_size
        self._clock = clock
        self._cache: dict[str, tuple[float, Reviewed]] = {}
        self._lock = threading.Lock()
        self.reviews_sent = 0
        """TokenReviews sent (the rest were answered from the cache)."""

    def identify(self, authorization: str | None) -> Identity | Refusal:
        """The sender's identity, or why the request is refused."""
        token = bearer_token(authorization)
        if token is None:
            return Refusal(401, "no bearer token: send Authorization: Bearer <token>")
        try:
            expiry = token_expiry(token)
        except NotAJwtError as error:
            return Refusal(401, str(error))
        now = self._clock()
        if expiry is not None and expiry <= now:
            moment = datetime.datetime.fromtimestamp(expiry, datetime.UTC)
            return Refusal(401, f"the token expired at {format_time(moment)}")
        key = hashlib.sha256(token.encode()).hexdigest()
        reviewed = self._cached(key, now)
        if reviewed is None:
            try:
                answer = self._review(
                    TOKEN_REVIEW_PATH, token_review(token, audiences=(self.audience,))
                )
            except Exception as error:
                log.warning("progress report: the TokenReview failed: %s", error)
                return Refusal(503, f"the token cannot be reviewed now: {error}")
            reviewed = identity_of(answer, audience=self.audience)
            until = min(now + self.cache_seconds, math.inf if expiry is None else expiry)
            self._remember(key, reviewed, now=now, until=until)
        if isinstance(reviewed, Unauthenticated):
            return Refusal(401, reviewed.reason)
        return reviewed

    def _cached(self, key: str, now: float) -> Reviewed | None:
        with self._lock:
            entry = self._cache.get(key)
        if entry is None or entry[0] <= now:
            return None
        return entry[1]

    def _remember(self, key: str, reviewed: Reviewed, *, now: float, until: float) -> None:
        with self._lock:
            self.reviews_sent += 1
            if until <= now:
                return
            if len(self._cache) >= self.cache_size:
                self._cache = {k: v for k, v in self._cache.items() if v[0] > now}
                while len(self._cache) >= self.cache_size:
                    self._cache.pop(next(iter(self._cache)))
            self._cache[key] = (until, reviewed)
