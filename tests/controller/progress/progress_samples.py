"""What the progress tests share: tokens shaped like projected ServiceAccount tokens, an MXJob and
its pods in informer stores, a fake API client that answers TokenReviews and records status
patches, a clock the tests move, and an HTTPS client that speaks to the endpoint as a pod would.
"""

from __future__ import annotations

import base64
import functools
import http.client
import itertools
import json
import ssl
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from certs.authority import CertificateAuthority
from certs.serving import CertificateFiles, new_server_context
from controller.job.job_writes import MXJobWrites
from controller.progress.flusher import WRITE_TIMEOUT, StatusWriter
from controller.progress.settings import AUDIENCE
from controller.progress.tokens import POD_NAME_EXTRA, POD_UID_EXTRA
from controller.runtime.client import JSON, KubeClient, Query
from controller.runtime.store import Obj, Store
from shared.constants import LABEL_JOB_NAME
from shared.metrics_access import TOKEN_REVIEW_PATH

NAMESPACE = "team"
JOB = "mnist"
JOB_UID = "uid-mnist"
T0 = 1_750_000_000.0
"""The fake clock's start, in seconds since the epoch."""
STATUS_PATH = f"/apis/kubeflow.org/v1/namespaces/{NAMESPACE}/mxjobs/{JOB}/status"

_serial = itertools.count(1)


class FakeClock:
    """Wall time that moves only when a test moves it; safe to share between threads."""

    def __init__(self, start: float = T0) -> None:
        self._now = start
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> float:
        with self._lock:
            self._now += seconds
            return self._now


def jwt(claims: Mapping[str, Any]) -> str:
    """An unsigned token with ``claims``: only the API server (here, the fake) knows it."""

    def segment(data: Mapping[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    return f"{segment({'alg': 'RS256'})}.{segment(claims)}.c2lnbmF0dXJl"


def job(*, name: str = JOB, uid: str = JOB_UID) -> Obj:
    return {"metadata": {"namespace": NAMESPACE, "name": name, "uid": uid}}


def pod(name: str, *, job_name: str = JOB, job_uid: str = JOB_UID, phase: str = "Running") -> Obj:
    owner = {"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "name": job_name}
    return {
        "metadata": {
            "namespace": NAMESPACE,
            "name": name,
            "uid": f"uid-{name}",
            "labels": {LABEL_JOB_NAME: job_name},
            "ownerReferences": [{**owner, "uid": job_uid, "controller": True}],
        },
        "status": {"phase": phase},
    }


def stores(*objects: Obj) -> tuple[Store, Store]:
    """(pods, jobs) stores holding ``objects`` (a pod has ``status.phase``)."""
    pods, jobs = Store(), Store()
    for obj in objects:
        (pods if "status" in obj else jobs).put_if_newer(obj)
    return pods, jobs


def review_status(
    pod_name: str | None,
    *,
    namespace: str = NAMESPACE,
    audiences: tuple[str, ...] = (AUDIENCE,),
    pod_uid: str | None = None,
) -> dict[str, Any]:
    """A TokenReview's ``status`` for a token of the ServiceAccount ``default`` bound to
    ``pod_name`` (None: to no pod)."""
    extra: dict[str, list[str]] = {}
    if pod_name is not None:
        extra = {POD_NAME_EXTRA: [pod_name], POD_UID_EXTRA: [pod_uid or f"uid-{pod_name}"]}
    user = {"username": f"system:serviceaccount:{namespace}:default", "extra": extra}
    return {"authenticated": True, "audiences": list(audiences), "user": user}


@dataclass
class Sent:
    method: str
    path: str
    body: Any
    content_type: str


@dataclass
class FakeKube(KubeClient):
    """Answers TokenReviews from :attr:`tokens` (unknown tokens: not authenticated) and takes
    every status patch, raising the queued :attr:`failures` first; records every request."""

    tokens: dict[str, dict[str, Any]] = field(default_factory=dict)
    failures: list[Exception] = field(default_factory=list)
    sent: list[Sent] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def token_for(self, pod_name: str | None, *, exp: float | None = T0 + 3600, **kw: Any) -> str:
        """A new token the fake authenticates as bound to ``pod_name`` (``kw``: see
        :func:`review_status`)."""
        claims: dict[str, Any] = {"jti": next(_serial), "aud": [AUDIENCE]}
        if exp is not None:
            claims["exp"] = exp
        token = jwt(claims)
        self.tokens[token] = review_status(pod_name, **kw)
        return token

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
        with self.lock:
            self.sent.append(Sent(method, path, json.loads(json.dumps(body)), content_type))
            failure = self.failures.pop(0) if self.failures and method == "PATCH" else None
        if failure is not None:
            raise failure
        if path == TOKEN_REVIEW_PATH:
            status = self.tokens.get(body["spec"]["token"], {"authenticated": False})
            return {"kind": "TokenReview", "spec": body["spec"], "status": status}
        return {}

    def reviews(self) -> list[Sent]:
        with self.lock:
            return [s for s in self.sent if s.path == TOKEN_REVIEW_PATH]

    def patches(self) -> list[Sent]:
        with self.lock:
            return [s for s in self.sent if s.method == "PATCH"]


@dataclass(frozen=True)
class Tls:
    """A CA, and a server context it signed for 127.0.0.1."""

    ca_pem: bytes
    server: ssl.SSLContext

    def client(self) -> ssl.SSLContext:
        return ssl.create_default_context(cadata=self.ca_pem.decode())


def serving_tls(directory: Path) -> Tls:
    authority = CertificateAuthority.create()
    pair = authority.issue_serving(hosts=("127.0.0.1",))
    files = CertificateFiles.in_directory(directory)
    files.cert_file.write_bytes(pair.cert_pem)
    files.key_file.write_bytes(pair.key_pem)
    context = new_server_context(cert_file=files.cert_file, key_file=files.key_file)
    return Tls(authority.cert_pem, context)


@dataclass(frozen=True)
class Answer:
    status: int
    headers: Mapping[str, str]
    body: Any

    @property
    def message(self) -> str:
        return str(self.body.get("message", "")) if isinstance(self.body, dict) else ""


def report(status: Mapping[str, Any] | None = None) -> bytes:
    return json.dumps({"trainerStatus": dict(status or {})}).encode()


def post(
    port: int,
    tls: Tls,
    body: bytes = b"{}",
    *,
    token: str | None = None,
    path: str = STATUS_PATH,
    method: str = "POST",
    headers: Mapping[str, str] | None = None,
) -> Answer:
    """One request as the reporting library sends it (``Authorization`` from ``token``)."""
    sent = {"Content-Type": "application/json", **(headers or {})}
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    connection = http.client.HTTPSConnection("127.0.0.1", port, timeout=10, context=tls.client())
    try:
        connection.request(method, path, body=body, headers=sent)
        response = connection.getresponse()
        data = response.read()
        decoded = json.loads(data) if data else None
        return Answer(response.status, {k.lower(): v for k, v in response.getheaders()}, decoded)
    finally:
        connection.close()


def writer(kube: KubeClient) -> StatusWriter:
    """The one MXJob writer's ``trainerStatus`` patch over ``kube``, as the manager hands it."""
    return functools.partial(MXJobWrites(kube, jobs=Store()).trainer_status, timeout=WRITE_TIMEOUT)
