"""The JSON client the tooling uses: the controller's own (``controller.kube``), under short names.

Tests, the test kubelet and ``make demo`` talk to the API server exactly as the operator does:
plain dicts, raw watch streams, typed errors (``NotFound``, ``Conflict``, ``AlreadyExists``,
``Gone``), with the ``kubernetes`` package doing kubeconfig loading, TLS and pooling.
"""

from __future__ import annotations

from controller.kube import AlreadyExists, ApiError, Conflict, Gone, NotFound
from controller.kube import KubeClient as Api

__all__ = ["AlreadyExists", "Api", "ApiError", "Conflict", "Gone", "NotFound"]
