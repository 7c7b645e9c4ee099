"""The controller's side of authenticated metrics: the two reviews sent through its client.

The decision itself is shared/metrics_access.py (the webhook makes the same one); this module
only gives it a way to reach the API server. The reviews are sent with the controller's own
ServiceAccount, which the ClusterRole ``mxjob-metrics-auth`` lets create TokenReviews and
SubjectAccessReviews (manifests/base/rbac.yaml). They count among the controller's API writes
(``create`` of ``tokenreviews`` and ``subjectaccessreviews``), as the API server counts them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.runtime.client import KubeClient
from shared.metrics_access import AccessSettings, MetricsGate, Reviewer

REVIEW_TIMEOUT = 10.0
"""Seconds a review may take; a scraper's own timeout is of the same order."""


def api_reviewer(client: KubeClient) -> Reviewer:
    """Sends a review with ``client`` and returns the answered object."""

    def review(path: str, body: Mapping[str, Any]) -> Mapping[str, Any]:
        answer: Mapping[str, Any] = client.request(
            "POST", path, body=dict(body), timeout=REVIEW_TIMEOUT
        )
        return answer

    return review


def metrics_gate(client: KubeClient, *, cache_seconds: float) -> MetricsGate:
    """The gate of ``/metrics`` under ``--metrics-secure``."""
    return MetricsGate(api_reviewer(client), settings=AccessSettings(cache_seconds=cache_seconds))
