"""The webhook's only calls to the API server: the reviews that gate its ``/metrics``.

Admission never calls the API server (reviews are pure: webhook/answers.py). Authenticated
metrics do: the TokenReview and SubjectAccessReview of shared/metrics_access.py, sent with the
pod's own ServiceAccount token over the API server's TLS, with the standard library's HTTP client
(the webhook image has no Kubernetes client and needs none for two POSTs). The token is re-read
for every review, because the kubelet rotates a projected token file in place.
"""

from __future__ import annotations

import json
import os
import ssl
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from shared.metrics_access import Reviewer

REVIEW_TIMEOUT: Final = 10.0


class ApiServerUnavailableError(RuntimeError):
    """A review could not be sent or was not answered with the review; the message says why."""


def in_cluster_url(environ: Mapping[str, str] | None = None) -> str:
    """``https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT`` (IPv6 in brackets)."""
    env = os.environ if environ is None else environ
    host, port = env.get("KUBERNETES_SERVICE_HOST", ""), env.get("KUBERNETES_SERVICE_PORT", "")
    if not host or not port:
        raise ApiServerUnavailableError(
            "KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set: give --api-server"
        )
    return f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"


def api_reviewer(*, server: str, token_file: Path, ca_file: Path) -> Reviewer:
    """Sends a review to ``server`` (empty: the in-cluster one) as the holder of ``token_file``.
    Nothing is read before the first review: a webhook whose metrics nobody scrapes starts, and
    answers admission, even where the API server's address or CA is missing."""

    def review(path: str, body: Mapping[str, Any]) -> Mapping[str, Any]:
        try:
            token = token_file.read_text().strip()
            context = ssl.create_default_context(cafile=str(ca_file))
        except (OSError, ssl.SSLError) as error:
            raise ApiServerUnavailableError(f"cannot read the token or CA: {error}") from error
        request = urllib.request.Request(
            (server or in_cluster_url()).rstrip("/") + path,
            data=json.dumps(body).encode(),
            method="POST",
            headers={
                "Authorization": f"Bearer {token}",
                "Content-Type": "application/json",
                "Accept": "application/json",
            },
        )
        try:
            with urllib.request.urlopen(request, context=context, timeout=REVIEW_TIMEOUT) as reply:
                answer: Mapping[str, Any] = json.loads(reply.read())
        except urllib.error.HTTPError as error:
            detail = error.read(500).decode(errors="replace")
            raise ApiServerUnavailableError(f"{path}: HTTP {error.code}: {detail}") from error
        except (OSError, ValueError) as error:
            raise ApiServerUnavailableError(f"{path}: {error}") from error
        return answer

    return review
