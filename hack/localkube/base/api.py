"""The JSON client the tooling uses: the controller's own (``controller.runtime.client``), under
short names.

Tests, the test kubelet and ``make demo`` talk to the API server exactly as the operator does:
plain dicts, raw watch streams, typed errors (``NotFound``, ``Conflict``, ``AlreadyExists``,
``Gone``), with the ``kubernetes`` package doing kubeconfig loading, TLS and pooling.
"""

from __future__ import annotations

import contextlib
import time

from controller.runtime.client import AlreadyExists, ApiError, Conflict, Gone, NotFound
from controller.runtime.client import KubeClient as Api

__all__ = [
    "AlreadyExists",
    "Api",
    "ApiError",
    "Conflict",
    "Gone",
    "NotFound",
    "ensure_namespace",
    "read_pod_log",
]


def ensure_namespace(api: Api, name: str, *, timeout: float = 30) -> None:
    """Create namespace ``name`` unless it exists, then wait until pods can be created in it.

    One being deleted is waited for and made again: a cleanup that deleted it need not wait
    the 5 s kube-controller-manager's namespace controller lets pass before it removes a
    namespace. Pods are refused until the namespace's default ServiceAccount exists, which
    kube-controller-manager creates a moment after the namespace.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            api.request("POST", "/api/v1/namespaces", body={"metadata": {"name": name}})
            break
        except AlreadyExists:
            with contextlib.suppress(NotFound):
                found = api.request("GET", f"/api/v1/namespaces/{name}")
                if not found["metadata"].get("deletionTimestamp"):
                    break
        if time.monotonic() > deadline:
            raise TimeoutError(f"namespace {name} is still being deleted after {timeout:g} s")
        time.sleep(0.1)
    while True:
        try:
            api.request("GET", f"/api/v1/namespaces/{name}/serviceaccounts/default")
            return
        except NotFound:
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"namespace {name} has no default ServiceAccount after {timeout:g} s"
                ) from None
            time.sleep(0.1)


def read_pod_log(api: Api, namespace: str, pod: str) -> str:
    """The log ``kubectl logs`` prints, read by this process's client: a test that polls a log
    once a second would otherwise start a kubectl each time, CPU a job on the real node needs.
    "" while there is none to read (the pod or its container not there yet, or gone)."""
    try:
        return api.request_text(f"/api/v1/namespaces/{namespace}/pods/{pod}/log")
    except ApiError:
        return ""
