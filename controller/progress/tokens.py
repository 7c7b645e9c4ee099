"""What a bearer token says of itself, and what the API server says of it (pure).

The token's own claims are read without verifying its signature, for one use only: its ``exp``
bounds how long the answer about it is cached, and a token already past it is refused without
asking. Trusting an unverified claim that way can only refuse a token sooner, never accept one;
whether a token is genuine is the TokenReview's to say.

A TokenReview of a projected ServiceAccount token names the ServiceAccount
(``system:serviceaccount:<namespace>:<name>``) and, in ``user.extra``, the pod it was issued to:
the name and uid the kubelet bound it to. The review is asked for the audience
``mxjob.kubeflow.org``; an API server that is not audience-aware would say ``authenticated``
for a token of any audience, so the answer must name that audience back in ``status.audiences``.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

SERVICE_ACCOUNT_PREFIX: Final = "system:serviceaccount:"
POD_NAME_EXTRA: Final = "authentication.kubernetes.io/pod-name"
POD_UID_EXTRA: Final = "authentication.kubernetes.io/pod-uid"


class NotAJwtError(ValueError):
    """The token is not a JWT: it cannot be a projected ServiceAccount token."""


@dataclass(frozen=True, kw_only=True)
class Identity:
    """Who a reviewed token belongs to. ``namespace`` is None for a user that is not a
    ServiceAccount; ``pod_name``/``pod_uid`` None for a token bound to no pod."""

    username: str
    namespace: str | None = None
    service_account: str | None = None
    pod_name: str | None = None
    pod_uid: str | None = None


@dataclass(frozen=True)
class Unauthenticated:
    """Why a reviewed token is refused (401)."""

    reason: str


def _segment(segment: str) -> bytes:
    padded = segment + "=" * (-len(segment) % 4)
    return base64.urlsafe_b64decode(padded.encode("ascii"))


def token_expiry(token: str) -> float | None:
    """The token's ``exp`` claim (seconds since the epoch), None when it has none.

    Raises :class:`NotAJwtError` when the token is not three base64url segments whose second is
    a JSON object."""
    parts = token.split(".")
    if len(parts) != 3 or not all(parts[:2]):
        raise NotAJwtError("the bearer token is not a JWT")
    try:
        claims = json.loads(_segment(parts[1]))
    except (binascii.Error, UnicodeError, ValueError):
        raise NotAJwtError("the bearer token's claims are not base64url JSON") from None
    if not isinstance(claims, dict):
        raise NotAJwtError("the bearer token's claims are not a JSON object")
    exp = claims.get("exp")
    if isinstance(exp, bool) or not isinstance(exp, int | float):
        return None
    return float(exp)


def _single(extra: Mapping[str, Any], key: str) -> str | None:
    values = extra.get(key)
    if isinstance(values, str):
        return values or None
    if isinstance(values, list) and len(values) == 1 and isinstance(values[0], str):
        return values[0] or None
    return None


def identity_of(answer: Mapping[str, Any], *, audience: str) -> Identity | Unauthenticated:
    """The identity an answered TokenReview names, or why the token is refused."""
    status = answer.get("status")
    status = status if isinstance(status, Mapping) else {}
    if not status.get("authenticated"):
        error = status.get("error")
        return Unauthenticated("the token was not authenticated" + (f": {error}" if error else ""))
    audiences = status.get("audiences")
    if not isinstance(audiences, list) or audience not in audiences:
        return Unauthenticated(f"the token is not for the audience {audience}")
    user = status.get("user")
    user = user if isinstance(user, Mapping) else {}
    username = str(user.get("username") or "")
    extra = user.get("extra")
    extra = extra if isinstance(extra, Mapping) else {}
    namespace = account = None
    if username.startswith(SERVICE_ACCOUNT_PREFIX):
        namespace, _, account = username.removeprefix(SERVICE_ACCOUNT_PREFIX).partition(":")
    return Identity(
        username=username,
        namespace=namespace or None,
        service_account=account or None,
        pod_name=_single(extra, POD_NAME_EXTRA),
        pod_uid=_single(extra, POD_UID_EXTRA),
    )
