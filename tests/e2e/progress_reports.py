"""What the progress endpoint's end-to-end tests share: a pod's real token, the endpoint reached
as a pod reaches it, and a watch that keeps every version of a job's status.

A pod reports with a projected ServiceAccount token; here the same token comes from the API
server's TokenRequest API (what the kubelet calls to project it), bound to the pod, so the
controller's TokenReview is answered by the real API server with the pod's name and uid. The
endpoint is reached on loopback but verified as a pod verifies it: by the CA in the job's
``<job>-status-ca`` ConfigMap, for the progress Service's name. A GET of the status between two
writes would miss a value that lasted a moment (a report rolled back, then written again), so
the tests read the job's history from a watch opened before they act.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from localkube.base.api import Api
from shared import progress
from tests.e2e.controller_fixtures import GROUP_PATH
from tests.helpers.waiting import wait_for

JSON: Final = "application/json"
TOKEN_SECONDS: Final = 600
"""The shortest lifetime the TokenRequest API grants: the tests take far less."""


def pod_token(api: Api, pod: Mapping[str, Any], *, audiences: Sequence[str] | None) -> str:
    """A token of the pod's ServiceAccount bound to ``pod`` (its name and uid), for
    ``audiences`` (None: the API server's own, as a plain ServiceAccount token has)."""
    meta = pod["metadata"]
    account = (pod.get("spec") or {}).get("serviceAccountName") or "default"
    spec: dict[str, Any] = {
        "expirationSeconds": TOKEN_SECONDS,
        "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": meta["name"],
                           "uid": meta["uid"]},
    }  # fmt: skip
    if audiences is not None:
        spec["audiences"] = list(audiences)
    answer = api.request(
        "POST",
        f"/api/v1/namespaces/{meta['namespace']}/serviceaccounts/{account}/token",
        body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec},
    )
    return str(answer["status"]["token"])


def report(percentage: int | None, **metrics: str) -> bytes:
    """A body as the reporting library sends it."""
    status: dict[str, Any] = {"progressPercentage": percentage}
    if metrics:
        status["metrics"] = [{"name": k, "value": v} for k, v in metrics.items()]
    return json.dumps({"trainerStatus": status}).encode()


def reported(status: Mapping[str, Any] | None) -> tuple[Any, Any]:
    """What a report set in ``status.trainerStatus``, without the time the controller stamps."""
    trainer = (status or {}).get("trainerStatus") or {}
    return trainer.get("progressPercentage"), trainer.get("metrics")


@dataclass(frozen=True)
class Answer:
    status: int
    body: Mapping[str, Any]

    @property
    def message(self) -> str:
        return str(self.body.get("message", ""))


class _LoopbackHttps(http.client.HTTPSConnection):
    """Connects to 127.0.0.1 and verifies the certificate for ``host``, as a pod verifies the
    Service name it dials."""

    def __init__(self, host: str, port: int, *, tls: ssl.SSLContext, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout, context=tls)
        self._tls = tls

    def connect(self) -> None:
        raw = socket.create_connection(("127.0.0.1", self.port), self.timeout)
        self.sock = self._tls.wrap_socket(raw, server_hostname=self.host)


@dataclass(frozen=True)
class Endpoint:
    """One controller's progress port, trusted by the CA its jobs' pods are given."""

    port: int
    host: str
    tls: ssl.SSLContext

    def post(self, path: str, body: bytes, *, token: str | None) -> Answer:
        """One report: a connection of its own, as the endpoint serves one request each."""
        headers = {"Content-Type": JSON}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        connection = _LoopbackHttps(self.host, self.port, tls=self.tls, timeout=15)
        try:
            connection.request("POST", path, body=body, headers=headers)
            response = connection.getresponse()
            data = response.read()
            return Answer(response.status, json.loads(data) if data else {})
        finally:
            connection.close()


def endpoint(api: Api, namespace: str, job: str, *, port: int, operator_namespace: str) -> Endpoint:
    """The endpoint on ``port``, verified by the CA the controller gave ``job``'s pods."""
    name = progress.ca_configmap_name(job)
    configmap = wait_for(
        f"ConfigMap {name}",
        lambda: api.request("GET", f"/api/v1/namespaces/{namespace}/configmaps/{name}"),
        lambda found: bool((found.get("data") or {}).get(progress.CA_FILE)),
        timeout=30,
    )
    tls = ssl.create_default_context(cadata=configmap["data"][progress.CA_FILE])
    return Endpoint(port, progress.service_hosts(operator_namespace)[0], tls)


class JobWatch:
    """Every version of one MXJob's status, in the order the API server wrote them."""

    def __init__(self, api: Api, namespace: str, name: str) -> None:
        self._api = api
        self._path = f"{GROUP_PATH}/namespaces/{namespace}/mxjobs"
        self._selector = ("fieldSelector", f"metadata.name={name}")
        listing = api.request("GET", self._path, query=[self._selector])
        self.statuses: list[dict[str, Any]] = [
            dict(item.get("status") or {}) for item in listing["items"]
        ]
        self._version = str(listing["metadata"]["resourceVersion"])
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._stream: Any = None
        self.error: Exception | None = None
        self._thread = threading.Thread(target=self._run, name=f"watch-{name}", daemon=True)
        self._thread.start()

    def _events(self) -> Iterator[dict[str, Any]]:
        query = [self._selector, ("resourceVersion", self._version), ("timeoutSeconds", "60")]
        stream = self._api.open_watch(self._path, query=query, timeout=90)
        with self._lock:
            self._stream = stream
        if self._stopping.is_set():
            stream.close()
        yield from stream

    def _run(self) -> None:
        try:
            while not self._stopping.is_set():
                for event in self._events():
                    job = event.get("object") or {}
                    if event.get("type") == "ERROR":
                        raise AssertionError(f"the watch ended with {job}")
                    self._version = str(job["metadata"]["resourceVersion"])
                    if event.get("type") in ("ADDED", "MODIFIED"):
                        self.statuses.append(dict(job.get("status") or {}))
        except Exception as error:
            if not self._stopping.is_set():
                self.error = error

    def stop(self) -> list[dict[str, Any]]:
        """End the watch; the statuses seen. A watch that broke before is an error."""
        self._stopping.set()
        with self._lock:
            if self._stream is not None:
                self._stream.close()
        self._thread.join(timeout=10)
        assert self.error is None, f"the watch of the MXJob broke: {self.error!r}"
        return list(self.statuses)


def trainer_history(statuses: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The values ``status.trainerStatus`` took, each change once, from its first on."""
    seen: list[dict[str, Any]] = []
    for status in statuses:
        trainer = status.get("trainerStatus")
        if (trainer or seen) and (not seen or seen[-1] != trainer):
            seen.append(dict(trainer or {}))
    return seen
