"""The endpoint's HTTP surface without the sockets: which requests it serves, how their bodies
are framed, and the bodies of its answers (pure).

Answers are JSON in the shape of the API server's ``Status`` (``kind``, ``status``, ``message``,
``reason``, ``code``), so a client that already reads the API server's errors reads these, and a
person reading a pod's log sees the same message the API server would have written. Everything
here is decided from the request line and the headers alone, before a byte of the body is read:
a body too large is refused by its ``Content-Length``, never by reading it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from shared.constants import GROUP, PLURAL, V1

STATUS_PATH: Final = re.compile(
    rf"^/apis/{re.escape(GROUP)}/{V1}/namespaces/(?P<namespace>[^/]+)/{PLURAL}/(?P<name>[^/]+)/status$"
)
PATH_SHAPE: Final = f"/apis/{GROUP}/{V1}/namespaces/{{namespace}}/{PLURAL}/{{name}}/status"
METHOD: Final = "POST"
JSON: Final = "application/json"
REASONS: Final = {
    202: "Accepted",
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType",
    500: "InternalError",
    503: "ServiceUnavailable",
}

Headers = Mapping[str, str]
"""A request's headers, names in lower case, repeated ones joined by ``, ``."""


@dataclass(frozen=True)
class Reply:
    """One answer: its status code, JSON body and any headers besides the framing ones."""

    status: int
    body: bytes
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Target:
    """The MXJob a request reports for, from its path."""

    namespace: str
    name: str


@dataclass(frozen=True)
class Framing:
    """How the body is delimited: ``length`` bytes, or chunked (``length`` None)."""

    length: int | None


def status_reply(status: int, message: str, *, headers: tuple[tuple[str, str], ...] = ()) -> Reply:
    """An answer whose body is a ``Status`` saying ``message``."""
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success" if status < 400 else "Failure",
        "message": message,
        "reason": REASONS.get(status, "Unknown"),
        "code": status,
    }
    return Reply(status, json.dumps(body).encode() + b"\n", headers)


def request_target(method: str, path: str, headers: Headers) -> Target | Reply:
    """The job a request is for, or the answer to a request this endpoint does not serve:
    404 (another path), 405 (another method) or 415 (not a JSON body)."""
    found = STATUS_PATH.match(path.split("?", 1)[0])
    if found is None:
        return status_reply(404, f"not found: reports are posted to {PATH_SHAPE}")
    if method != METHOD:
        return status_reply(
            405, f"method {method} not allowed: use {METHOD}", headers=(("Allow", METHOD),)
        )
    content_type = headers.get("content-type", "")
    media = content_type.split(";", 1)[0].strip().lower()
    if media != JSON:
        got = content_type or "none"
        return status_reply(415, f"Content-Type must be {JSON}, got {got}")
    return Target(found["namespace"], found["name"])


def body_framing(headers: Headers, *, max_body: int) -> Framing | Reply:
    """How to read the body, or the answer without reading it: 400 for framing that cannot be
    trusted (both ``Content-Length`` and ``Transfer-Encoding``, either malformed), 413 for a
    declared length over ``max_body``. Without either header the body is empty (HTTP/1.1)."""
    length = headers.get("content-length")
    encoding = headers.get("transfer-encoding")
    if encoding is not None:
        if length is not None:
            return status_reply(400, "Content-Length and Transfer-Encoding: send one, not both")
        if encoding.strip().lower() != "chunked":
            return status_reply(400, f"Transfer-Encoding: only chunked is read, got {encoding}")
        return Framing(None)
    if length is None:
        return Framing(0)
    digits = length.strip()
    if not (digits.isascii() and digits.isdigit()):
        return status_reply(400, f"Content-Length: must be a number of bytes, got {length[:40]}")
    if len(digits) > 18:  # more than an exabyte: too large, and not worth parsing
        return too_large(max_body)
    size = int(digits)
    if size > max_body:
        return too_large(max_body, declared=size)
    return Framing(size)


def too_large(max_body: int, *, declared: int | None = None) -> Reply:
    """413 for a body over ``max_body`` bytes (``declared``: its ``Content-Length``)."""
    said = f" (Content-Length: {declared})" if declared is not None else ""
    return status_reply(413, f"the body is larger than {max_body} bytes{said}")
