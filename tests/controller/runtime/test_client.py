"""kube: typed errors and resource paths (the requests themselves run in the e2e tests)."""

from __future__ import annotations

import pytest

from controller.runtime.client import (
    AlreadyExists,
    ApiError,
    Conflict,
    Gone,
    Invalid,
    NotFound,
    error_for,
    leases_path,
    mxjobs_path,
    pods_path,
    resource_path,
)


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
