"""controller/progress/authorization.py: only a running pod of the job, the very one its token
was issued to, may report for it; every refusal says why."""

from __future__ import annotations

from typing import Any

import pytest

from controller.progress.authorization import Verdict, authorize
from controller.progress.tokens import Identity
from tests.controller.progress.progress_samples import JOB, NAMESPACE, job, pod

WORKER = "mnist-worker-0"


def _identity(**changes: Any) -> Identity:
    fields: dict[str, Any] = {
        "username": f"system:serviceaccount:{NAMESPACE}:default",
        "namespace": NAMESPACE,
        "service_account": "default",
        "pod_name": WORKER,
        "pod_uid": f"uid-{WORKER}",
    }
    return Identity(**{**fields, **changes})


def _decide(identity: Identity, **lookups: Any) -> Verdict:
    found: dict[str, Any] = {"job": job(), "pod": pod(WORKER), **lookups}
    return authorize(identity, namespace=NAMESPACE, name=JOB, **found)


def _deleted() -> dict[str, Any]:
    deleting = pod(WORKER)
    deleting["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    return deleting


def _orphan() -> dict[str, Any]:
    labelled = pod(WORKER)
    labelled["metadata"]["ownerReferences"][0]["controller"] = False
    return labelled


def test_a_running_pod_of_the_job_may_report() -> None:
    assert _decide(_identity()) == Verdict(200, f"pod {WORKER} reports for mxjob {JOB}")


@pytest.mark.parametrize(
    ("identity", "lookups", "expected"),
    [
        (
            _identity(namespace=None, username="alice"),
            {},
            Verdict(403, "alice is not a ServiceAccount"),
        ),
        (
            _identity(namespace="other"),
            {},
            Verdict(403, "the token is of namespace other, not team"),
        ),
        (_identity(pod_name=None), {}, Verdict(403, "the token names no pod")),
        (_identity(pod_uid=None), {}, Verdict(403, "the token names no pod uid")),
        (_identity(), {"job": None}, Verdict(404, "mxjob team/mnist not found")),
        (_identity(), {"pod": None}, Verdict(403, f"pod {WORKER} not found among the MXJob pods")),
        (
            _identity(pod_uid="uid-of-an-earlier-pod"),
            {},
            Verdict(403, f"pod {WORKER} is not the pod the token was issued to (uid differs)"),
        ),
        (
            _identity(),
            {"pod": pod(WORKER, job_name="other")},
            Verdict(403, f"pod {WORKER} is not a pod of mxjob {JOB}"),
        ),
        (
            _identity(),
            {"pod": pod(WORKER, job_uid="uid-old-mnist")},
            Verdict(403, f"pod {WORKER} is not a pod of mxjob {JOB}"),
        ),
        (
            _identity(),
            {"pod": _orphan()},
            Verdict(403, f"pod {WORKER} is not a pod of mxjob {JOB}"),
        ),
        (_identity(), {"pod": _deleted()}, Verdict(403, f"pod {WORKER} is being deleted")),
        (
            _identity(),
            {"pod": pod(WORKER, phase="Succeeded")},
            Verdict(403, f"pod {WORKER} has finished (Succeeded)"),
        ),
        (
            _identity(),
            {"pod": pod(WORKER, phase="Failed")},
            Verdict(403, f"pod {WORKER} has finished (Failed)"),
        ),
    ],
    ids=[
        "not-a-service-account",
        "other-namespace",
        "no-pod",
        "no-pod-uid",
        "job-not-found",
        "pod-not-cached",
        "pod-recreated",
        "pod-of-another-job",
        "pod-of-an-earlier-job-of-the-name",
        "pod-labelled-but-not-controlled",
        "pod-deleted",
        "pod-succeeded",
        "pod-failed",
    ],
)
def test_every_refusal_has_its_code_and_reason(
    identity: Identity, lookups: dict[str, Any], expected: Verdict
) -> None:
    assert _decide(identity, **lookups) == expected


def test_a_stranger_learns_nothing_of_which_jobs_exist() -> None:
    """The namespace is checked before the job is looked for: 403, not 404."""
    verdict = _decide(_identity(namespace="other"), job=None)
    assert verdict.status == 403
