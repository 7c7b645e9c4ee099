"""controller/progress/wire.py: which requests are served, how bodies are framed, and answers
shaped like the API server's Status."""

from __future__ import annotations

import json

import pytest

from controller.progress.wire import (
    Framing,
    Reply,
    Target,
    body_framing,
    request_target,
    status_reply,
)
from tests.controller.progress.progress_samples import STATUS_PATH

JSON_BODY = {"content-type": "application/json"}


def _message(reply: object) -> tuple[int, str]:
    assert isinstance(reply, Reply)
    return reply.status, json.loads(reply.body)["message"]


def test_the_status_path_names_the_job() -> None:
    assert request_target("POST", STATUS_PATH, JSON_BODY) == Target("team", "mnist")
    assert request_target("POST", STATUS_PATH + "?x=1", JSON_BODY) == Target("team", "mnist")


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/healthz",
        "/apis/kubeflow.org/v1/namespaces/team/mxjobs/mnist",
        "/apis/kubeflow.org/v1beta1/namespaces/team/mxjobs/mnist/status",
        "/apis/kubeflow.org/v1/namespaces/team/tfjobs/mnist/status",
        "/apis/kubeflow.org/v1/namespaces/team/mxjobs/a/b/status",
    ],
)
def test_another_path_is_404(path: str) -> None:
    status, message = _message(request_target("POST", path, JSON_BODY))
    assert status == 404
    assert message == (
        "not found: reports are posted to "
        "/apis/kubeflow.org/v1/namespaces/{namespace}/mxjobs/{name}/status"
    )


def test_another_method_is_405_with_allow() -> None:
    reply = request_target("PUT", STATUS_PATH, JSON_BODY)
    assert _message(reply) == (405, "method PUT not allowed: use POST")
    assert isinstance(reply, Reply) and reply.headers == (("Allow", "POST"),)


@pytest.mark.parametrize(
    ("content_type", "served"),
    [
        ("application/json", True),
        ("Application/JSON; charset=utf-8", True),
        ("application/x-www-form-urlencoded", False),
        ("text/plain", False),
        ("", False),
    ],
)
def test_only_a_json_body_is_served(content_type: str, served: bool) -> None:
    headers = {"content-type": content_type} if content_type else {}
    reply = request_target("POST", STATUS_PATH, headers)
    if served:
        assert isinstance(reply, Target)
    else:
        assert _message(reply) == (
            415,
            f"Content-Type must be application/json, got {content_type or 'none'}",
        )


def test_a_body_is_framed_by_its_length_or_chunks_and_empty_without_either() -> None:
    assert body_framing({"content-length": "12"}, max_body=100) == Framing(12)
    assert body_framing({"transfer-encoding": "chunked"}, max_body=100) == Framing(None)
    assert body_framing({}, max_body=100) == Framing(0)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        (
            {"content-length": "101"},
            (413, "the body is larger than 100 bytes (Content-Length: 101)"),
        ),
        ({"content-length": "9" * 30}, (413, "the body is larger than 100 bytes")),
        ({"content-length": "-1"}, (400, "Content-Length: must be a number of bytes, got -1")),
        (
            {"content-length": "12, 12"},
            (400, "Content-Length: must be a number of bytes, got 12, 12"),
        ),
        ({"content-length": "²"}, (400, "Content-Length: must be a number of bytes, got ²")),
        (
            {"content-length": "5", "transfer-encoding": "chunked"},
            (400, "Content-Length and Transfer-Encoding: send one, not both"),
        ),
        ({"transfer-encoding": "gzip"}, (400, "Transfer-Encoding: only chunked is read, got gzip")),
    ],
)
def test_untrustworthy_or_oversized_framing_is_refused_before_reading(
    headers: dict[str, str], expected: tuple[int, str]
) -> None:
    assert _message(body_framing(headers, max_body=100)) == expected


def test_an_answer_is_a_status_object() -> None:
    reply = status_reply(403, "the token names no pod")
    assert json.loads(reply.body) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "the token names no pod",
        "reason": "Forbidden",
        "code": 403,
    }
    assert json.loads(status_reply(202, "accepted").body)["status"] == "Success"
