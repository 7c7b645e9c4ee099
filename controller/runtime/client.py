"""The controller's only door to the API server: JSON requests and watch streams on plain dicts.

Why not the generated API classes: they deserialize every object into model instances (slow, and
lossy for custom resources), and the controller wants the wire JSON as it is: the informers cache
it, the reconciler reads and writes it. The ``kubernetes`` package still does what it is good at:
kubeconfig and in-cluster configuration, TLS, bearer-token refresh and urllib3 connection pooling
(``ApiClient.param_serialize`` builds the request, ``ApiClient.call_api`` sends it and hands back
the undecoded response).

This module is a superset of ``hack/localkube/base/api.py`` (same ``request``/``watch``
signatures and an ``ApiError`` with the same fields), so tooling can import it instead of keeping
a copy. On top it adds typed errors (callers branch on ``NotFound``/``AlreadyExists``/
``Conflict``/``Gone`` instead of comparing numbers), a sized connection pool, a watch stream that
another thread can close, path builders for the resources the controller touches, and the one count
of the controller's writes (``mxjob_controller_api_writes_total``, docs/reference/observability.md):
every write goes through :meth:`KubeClient.request`, so counting there sees the writes of the
reconciler, the integrations, the Event recorder, the leader election and the certificate keeper
alike, and none can be forgotten.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final

from kubernetes import client, config

from shared.constants import GROUP, PLURAL, V1

JSON: Final = "application/json"
MERGE_PATCH: Final = "application/merge-patch+json"
JSON_PATCH: Final = "application/json-patch+json"
APPLY_PATCH: Final = "application/apply-patch+yaml"
"""Server-side apply's content type (a JSON body is YAML too)."""

Query = list[tuple[str, str]]
WriteCounter = Callable[[str, str], None]
"""Told ``(verb, resource)`` of each write the API server answered (:func:`write_labels`)."""

WRITE_VERBS: Final = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
"""Kubernetes' verb for each writing method; a server-side apply is a PATCH, verb ``patch``."""
NAMESPACE_SUBRESOURCES: Final = frozenset({"status", "finalize"})
"""What may follow ``namespaces/<name>`` as a subresource of the Namespace itself rather than
a resource in it: the set of the API server's request parser (k8s.io/apiserver,
``pkg/endpoints/request/requestinfo.go``), whose labels the API server's metrics carry."""


class ApiError(Exception):
    """A non-2xx answer from the API server."""

    def __init__(self, status: int, reason: str, body: Any) -> None:
        self.status = status
        self.reason = reason
        self.body = body
        message = body.get("message") if isinstance(body, dict) else None
        super().__init__(f"{status} {reason}: {message or body}")

    @property
    def status_reason(self) -> str:
        """The ``reason`` of the Status body (``AlreadyExists``, ``Conflict``, ``Expired``...)."""
        return str(self.body.get("reason", "")) if isinstance(self.body, dict) else ""


class NotFound(ApiError):  # noqa: N818 - named after the HTTP status, like kubernetes errors
    """404: the object (or its namespace) does not exist."""


class Conflict(ApiError):  # noqa: N818
    """409 for a stale ``resourceVersion`` or a failed precondition: re-read and retry."""


class AlreadyExists(Conflict):
    """409 with reason AlreadyExists: a create hit an existing name."""


class Gone(ApiError):  # noqa: N818
    """410: the requested ``resourceVersion`` is too old (compacted); relist."""


class Invalid(ApiError):  # noqa: N818
    """422: the object failed validation (or admission)."""


def error_for(status: int, reason: str, body: Any) -> ApiError:
    """The most specific :class:`ApiError` subclass for an answer."""
    status_reason = body.get("reason") if isinstance(body, dict) else None
    if status == 404:
        return NotFound(status, reason, body)
    if status == 409:
        if status_reason == "AlreadyExists":
            return AlreadyExists(status, reason, body)
        return Conflict(status, reason, body)
    if status == 410:
        return Gone(status, reason, body)
    if status == 422:
        return Invalid(status, reason, body)
    return ApiError(status, reason, body)


def _decode(data: bytes) -> Any:
    if not data:
        return None
    try:
        return json.loads(data)
    except ValueError:
        return data.decode(errors="replace")


def write_labels(method: str, path: str) -> tuple[str, str] | None:
    """``(verb, resource)`` of a write as Kubernetes names them, None for a read.

    The verb is ``create``, ``update``, ``patch`` or ``delete`` (``deletecollection`` without a
    name); the resource is the plural, with its subresource after a slash (``mxjobs/status``,
    ``pods/eviction``), the same labels the API server gives ``apiserver_request_total``, so the
    controller's count and the server's read side by side.
    """
    verb = WRITE_VERBS.get(method.upper())
    if verb is None:
        return None
    parts = [part for part in path.split("?", 1)[0].split("/") if part]
    if parts[:1] == ["api"]:
        parts = parts[2:]
    elif parts[:1] == ["apis"]:
        parts = parts[3:]
    if len(parts) > 2 and parts[0] == "namespaces" and parts[2] not in NAMESPACE_SUBRESOURCES:
        parts = parts[2:]
    if verb == "delete" and len(parts) == 1:
        verb = "deletecollection"
    resource = "/".join(parts[:1] + parts[2:3])
    return verb, resource


class WatchStream:
    """The events of one watch request, as decoded dicts, until the server ends the stream.

    Iterate it in one thread; :meth:`close` may be called from another to end the iteration
    (shutdown uses that so a quiet watch does not hold the process for its whole timeout).
    """

    def __init__(self, response: Any) -> None:
        self._raw = response.response
        self._closed = threading.Event()

    def __iter__(self) -> Iterator[dict[str, Any]]:
        buffer = b""
        try:
            for chunk in self._raw.stream(65536, decode_content=True):
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        event = json.loads(line)
                        if isinstance(event, dict):
                            yield event
        except Exception:
            if self._closed.is_set():
                return
            raise
        finally:
            self._release()

    def _release(self) -> None:
        with contextlib.suppress(Exception):
            self._raw.release_conn()

    def close(self) -> None:
        """End the stream now; the iterating thread sees it finish (or raise, then return)."""
        self._closed.set()
        shutdown = getattr(self._raw, "shutdown", None)
        with contextlib.suppress(Exception):
            if callable(shutdown):
                shutdown()
            self._raw.close()


class KubeClient:
    """JSON requests and watch streams against one API server, safe to share between threads."""

    # A class default too: the test doubles of tests/controller/fakes.py skip __init__.
    _on_write: WriteCounter | None = None

    def __init__(
        self, api_client: client.ApiClient, *, on_write: WriteCounter | None = None
    ) -> None:
        self.client = api_client
        self._on_write = on_write

    def count_writes_with(self, on_write: WriteCounter | None) -> None:
        """From now on, tell ``on_write`` of every write this client sends (None: of none).

        Set after construction because the client exists before the metrics it feeds:
        ``controller.manager.Controller`` may be handed a client built elsewhere (tests pass
        their own) and makes its ``Metrics`` afterwards.
        """
        self._on_write = on_write

    def _count_write(self, method: str, path: str) -> None:
        """Count one write the API server answered, whatever its answer: a refused write (a
        conflict, a failed precondition) cost the server as much as an accepted one, and its
        ``apiserver_request_total`` counts it too. A write that never reached the server (no
        connection, no answer) is not counted."""
        on_write = self._on_write
        labels = write_labels(method, path) if on_write is not None else None
        if on_write is not None and labels is not None:
            on_write(*labels)

    @classmethod
    def from_configuration(
        cls, configuration: client.Configuration, *, pool_size: int
    ) -> KubeClient:
        """A client whose urllib3 pool keeps ``pool_size`` connections per host.

        The pool must hold one connection per concurrent user (every reconcile worker, every
        open watch, the event sender and the lease renewer); urllib3 otherwise opens and drops
        extra connections and logs "Connection pool is full" on every request.
        """
        configuration.connection_pool_maxsize = max(1, pool_size)
        return cls(client.ApiClient(configuration))

    @classmethod
    def from_kubeconfig(cls, path: Path | str | None = None, *, pool_size: int = 8) -> KubeClient:
        """From a kubeconfig file (``None``: ``$KUBECONFIG`` or ``~/.kube/config``)."""
        configuration = client.Configuration()
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=None if path is None else str(path), client_configuration=configuration
        )
        return cls.from_configuration(configuration, pool_size=pool_size)

    @classmethod
    def in_cluster(cls, *, pool_size: int = 8) -> KubeClient:
        """From the pod's service account (token, CA and ``KUBERNETES_SERVICE_*`` env)."""
        configuration = client.Configuration()
        config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        return cls.from_configuration(configuration, pool_size=pool_size)

    @classmethod
    def load(cls, kubeconfig: Path | str | None, *, pool_size: int = 8) -> KubeClient:
        """A kubeconfig when given, else in-cluster config when running in a pod, else default."""
        if kubeconfig is not None:
            return cls.from_kubeconfig(kubeconfig, pool_size=pool_size)
        try:
            return cls.in_cluster(pool_size=pool_size)
        except config.ConfigException:
            return cls.from_kubeconfig(None, pool_size=pool_size)

    def _send(
        self,
        method: str,
        path: str,
        *,
        body: Any,
        query: Query | None,
        content_type: str,
        timeout: float | tuple[float, float],
    ) -> Any:
        serialized = self.client.param_serialize(
            method=method,
            resource_path=path,
            query_params=query or [],
            header_params={"Content-Type": content_type, "Accept": JSON},
            body=body,
            auth_settings=["BearerToken"],
        )
        _, url, headers, payload, _ = serialized
        response = self.client.call_api(
            method, url, header_params=headers, body=payload, _request_timeout=timeout
        )
        self._count_write(method, path)
        return response

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        query: Query | None = None,
        content_type: str = JSON,
        timeout: float = 30,
    ) -> Any:
        """Send one request; return the decoded JSON answer or raise an :class:`ApiError`."""
        response = self._send(
            method, path, body=body, query=query, content_type=content_type, timeout=timeout
        )
        decoded = _decode(response.read())
        if not 200 <= response.status <= 299:
            raise error_for(response.status, response.reason or "", decoded)
        return decoded

    def request_text(self, path: str, *, query: Query | None = None, timeout: float = 30) -> str:
        """GET what the API server answers with text, not JSON (a pod's ``log``), as sent; raise
        an :class:`ApiError` when it refuses."""
        response = self._send(
            "GET", path, body=None, query=query, content_type=JSON, timeout=timeout
        )
        data: bytes = response.read()
        if not 200 <= response.status <= 299:
            raise error_for(response.status, response.reason or "", _decode(data))
        return data.decode(errors="replace")

    def open_watch(self, path: str, *, query: Query, timeout: float = 90) -> WatchStream:
        """Start a watch request; raise an :class:`ApiError` when the server refuses it.

        ``timeout`` is the read timeout between two chunks: pass more than the server-side
        ``timeoutSeconds`` (and the bookmark interval) so a healthy quiet stream is not cut.
        """
        response = self._send(
            "GET",
            path,
            body=None,
            query=[*query, ("watch", "true")],
            content_type=JSON,
            timeout=(10, timeout),
        )
        if not 200 <= response.status <= 299:
            raw = response.response
            try:
                decoded = _decode(raw.data)
            finally:
                with contextlib.suppress(Exception):
                    raw.release_conn()
            raise error_for(response.status, response.reason or "", decoded)
        return WatchStream(response)

    def watch(self, path: str, *, query: Query, timeout: float = 90) -> Iterator[dict[str, Any]]:
        """Yield the events of one watch request until the server ends it."""
        yield from self.open_watch(path, query=query, timeout=timeout)


# -- paths ----------------------------------------------------------------------------------------
def resource_path(
    *,
    group: str,
    version: str,
    plural: str,
    namespace: str | None = None,
    name: str | None = None,
    subresource: str | None = None,
) -> str:
    """``/api/v1/...`` for the core group, ``/apis/<group>/<version>/...`` otherwise."""
    base = f"/apis/{group}/{version}" if group else f"/api/{version}"
    parts = [base]
    if namespace is not None:
        parts.append(f"namespaces/{namespace}")
    parts.append(plural)
    if name is not None:
        parts.append(name)
        if subresource is not None:
            parts.append(subresource)
    return "/".join(parts)


def pods_path(namespace: str | None = None, name: str | None = None) -> str:
    return resource_path(group="", version="v1", plural="pods", namespace=namespace, name=name)


def services_path(namespace: str | None = None, name: str | None = None) -> str:
    return resource_path(group="", version="v1", plural="services", namespace=namespace, name=name)


def events_path(namespace: str, name: str | None = None) -> str:
    return resource_path(group="", version="v1", plural="events", namespace=namespace, name=name)


def leases_path(namespace: str, name: str | None = None) -> str:
    return resource_path(
        group="coordination.k8s.io", version="v1", plural="leases", namespace=namespace, name=name
    )


def mxjobs_path(
    namespace: str | None = None, name: str | None = None, *, subresource: str | None = None
) -> str:
    return resource_path(
        group=GROUP,
        version=V1,
        plural=PLURAL,
        namespace=namespace,
        name=name,
        subresource=subresource,
    )
