"""controller/runtime/client.py: typed errors, resource paths, and the count of writes (against a
local HTTP server; the requests against a real API server run in the e2e tests)."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import urllib3
from kubernetes import client

from controller.runtime.client import (
    MERGE_PATCH,
    AlreadyExists,
    ApiError,
    Conflict,
    Gone,
    Invalid,
    KubeClient,
    NotFound,
    error_for,
    events_path,
    leases_path,
    mxjobs_path,
    pods_path,
    resource_path,
    services_path,
    write_labels,
)
from controller.runtime.election import ElectionSettings, LeaderElector


@pytest.mark.parametrize(
    ("status", "reason", "kind"),
    [
        (404, "NotFound", NotFound),
        (409, "AlreadyExists", AlreadyExists),
        (409, "Conflict", Conflict),
        (410, "Expired", Gone),
        (422, "Invalid", Invalid),
        (500, "InternalError", ApiError),
    ],
)
def test_answers_map_to_typed_errors(status: int, reason: str, kind: type[ApiError]) -> None:
    error = error_for(status, "x", {"kind": "Status", "reason": reason, "message": "why"})
    assert type(error) is kind
    assert error.status == status and error.status_reason == reason
    assert "why" in str(error)


def test_already_exists_is_a_conflict() -> None:
    assert isinstance(error_for(409, "", {"reason": "AlreadyExists"}), Conflict)


def test_paths_for_core_and_grouped_resources() -> None:
    assert pods_path() == "/api/v1/pods"
    assert pods_path("ns", "p") == "/api/v1/namespaces/ns/pods/p"
    assert mxjobs_path("ns", "j", subresource="status") == (
        "/apis/kubeflow.org/v1/namespaces/ns/mxjobs/j/status"
    )
    assert leases_path("kube-system") == (
        "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"
    )
    assert resource_path(group="", version="v1", plural="nodes", name="n") == "/api/v1/nodes/n"


# -- the count of writes --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("method", "path", "expected"),
    [
        ("POST", "/api/v1/namespaces/ns/pods", ("create", "pods")),
        ("DELETE", "/api/v1/namespaces/ns/pods/p", ("delete", "pods")),
        ("PATCH", "/api/v1/namespaces/ns/services/s", ("patch", "services")),
        ("PATCH", "/api/v1/namespaces/ns/events/e.1", ("patch", "events")),
        ("PUT", "/apis/kubeflow.org/v1/namespaces/ns/mxjobs/j/status", ("update", "mxjobs/status")),
        ("PUT", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l", ("update", "leases")),
        ("POST", "/api/v1/namespaces/ns/pods/p/eviction", ("create", "pods/eviction")),
        (
            "PATCH",
            "/apis/policy/v1/namespaces/ns/poddisruptionbudgets/b?x=1",
            ("patch", "poddisruptionbudgets"),
        ),
        ("POST", "/api/v1/namespaces", ("create", "namespaces")),
        ("DELETE", "/api/v1/namespaces/ns", ("delete", "namespaces")),
        ("PUT", "/api/v1/namespaces/ns/finalize", ("update", "namespaces/finalize")),
        ("DELETE", "/api/v1/namespaces/ns/pods", ("deletecollection", "pods")),
        ("patch", "/apis/scheduling.k8s.io/v1/priorityclasses/p", ("patch", "priorityclasses")),
        ("GET", "/api/v1/namespaces/ns/pods/p", None),
    ],
)
def test_a_write_is_labelled_as_kubernetes_names_it(
    method: str, path: str, expected: tuple[str, str] | None
) -> None:
    assert write_labels(method, path) == expected


def test_the_labels_are_those_of_the_paths_the_controller_writes() -> None:
    """The series the dashboards and benchmarks read (docs/reference/observability.md)."""
    assert write_labels("PUT", mxjobs_path("ns", "j", subresource="status")) == (
        "update",
        "mxjobs/status",
    )
    assert write_labels("DELETE", mxjobs_path("ns", "j")) == ("delete", "mxjobs")
    assert write_labels("POST", pods_path("ns")) == ("create", "pods")
    assert write_labels("POST", services_path("ns")) == ("create", "services")
    assert write_labels("POST", events_path("ns")) == ("create", "events")
    assert write_labels("PUT", leases_path("ns", "l")) == ("update", "leases")


class _Server(ThreadingHTTPServer):
    """A local API server that answers every request with ``answers[(method, path)]`` (status
    and JSON body, or text as bytes), 200 ``{}`` by default, and remembers what it was sent."""

    def __init__(self) -> None:
        self.answers: dict[tuple[str, str], tuple[int, dict[str, Any] | bytes]] = {}
        self.seen: list[tuple[str, str]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                key = (self.command, self.path.split("?", 1)[0])
                server.seen.append(key)
                status, body = server.answers.get(key, (200, {}))
                text = isinstance(body, bytes)
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/plain" if text else "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer  # noqa: N815 - http.server's names

            def log_message(self, format: str, *args: object) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


@pytest.fixture
def server() -> Iterator[_Server]:
    served = _Server()
    thread = threading.Thread(target=served.serve_forever, daemon=True)
    thread.start()
    yield served
    served.shutdown()
    served.server_close()


def _client(url: str, **options: Any) -> KubeClient:
    configuration = client.Configuration()
    configuration.host = url
    return KubeClient(client.ApiClient(configuration), **options)


def test_every_write_the_client_sends_is_counted_and_no_read(server: _Server) -> None:
    counted: list[tuple[str, str]] = []
    api = _client(server.url)
    api.count_writes_with(lambda verb, resource: counted.append((verb, resource)))
    api.request("GET", pods_path("ns", "p"))
    api.request("POST", pods_path("ns"), body={"metadata": {"name": "p"}})
    api.request("PUT", mxjobs_path("ns", "j", subresource="status"), body={})
    api.request("PATCH", services_path("ns", "s"), body={}, content_type=MERGE_PATCH)
    apply = "application/apply-patch+yaml"
    api.request("PATCH", "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/w/status",
                body={}, content_type=apply, query=[("fieldManager", "m")])  # fmt: skip
    api.request("DELETE", pods_path("ns", "p"), body={})
    with contextlib.closing(api.open_watch(pods_path("ns"), query=[])):
        pass
    assert counted == [
        ("create", "pods"),
        ("update", "mxjobs/status"),
        ("patch", "services"),
        ("patch", "workloads/status"),
        ("delete", "pods"),
    ]
    assert len(server.seen) == 7  # the reads reached the server too, uncounted


def test_a_refused_write_is_counted_and_an_unsent_one_is_not(server: _Server) -> None:
    counted: list[tuple[str, str]] = []
    server.answers[("POST", "/api/v1/namespaces/ns/pods")] = (409, {"reason": "AlreadyExists"})
    api = _client(server.url, on_write=lambda verb, resource: counted.append((verb, resource)))
    with pytest.raises(AlreadyExists):
        api.request("POST", pods_path("ns"), body={"metadata": {"name": "p"}})
    assert counted == [("create", "pods")]
    unsent = _client(f"http://127.0.0.1:{_free_port()}", on_write=lambda *w: counted.append(w))
    with pytest.raises(urllib3.exceptions.MaxRetryError):  # nothing listens there
        unsent.request("DELETE", pods_path("ns", "p"), timeout=2)
    assert counted == [("create", "pods")]


def test_counting_stops_when_told_none(server: _Server) -> None:
    counted: list[tuple[str, str]] = []
    api = _client(server.url, on_write=lambda verb, resource: counted.append((verb, resource)))
    api.request("PUT", leases_path("ns", "l"), body={})
    api.count_writes_with(None)
    api.request("PUT", leases_path("ns", "l"), body={})
    assert counted == [("update", "leases")]


def test_the_writes_of_the_lease_are_counted_with_the_rest(server: _Server) -> None:
    """Every write goes through the client, so the election's count too without a line of its
    own (controller/runtime/election.py)."""
    counted: list[tuple[str, str]] = []
    path = leases_path("ns", "mxjob-controller")
    server.answers[("GET", path)] = (404, {"reason": "NotFound"})
    api = _client(server.url, on_write=lambda verb, resource: counted.append((verb, resource)))
    elector = LeaderElector(api, ElectionSettings(namespace="ns", identity="me"))
    assert elector.try_acquire_or_renew()
    assert counted == [("create", "leases")]


def test_a_text_answer_is_read_as_sent_even_when_it_parses_as_json(server: _Server) -> None:
    log_path = pods_path("ns", "p") + "/log"
    api = _client(server.url)
    server.answers[("GET", log_path)] = (200, b"trial 1 on server a: 2.5 us per run\n")
    assert api.request_text(log_path) == "trial 1 on server a: 2.5 us per run\n"
    server.answers[("GET", log_path)] = (200, b"42\n")
    assert api.request_text(log_path, query=[("tailLines", "1")]) == "42\n"
    server.answers[("GET", log_path)] = (400, {"reason": "BadRequest", "message": "waiting"})
    with pytest.raises(ApiError) as refused:
        api.request_text(log_path)
    assert refused.value.status == 400


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
