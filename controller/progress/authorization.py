"""May the pod a token names report for the MXJob in the URL? (pure)

A token proves which pod sent a report (controller/progress/tokens.py); this decides whether
that pod speaks for the job: it is in the job's namespace, it is the very pod the token was
issued to (same uid: a pod recreated under the name does not inherit an old token's right), it
is the job's (its job-name label, and the job as its controller owner, so a pod merely labelled
like a job's cannot report for it) and it still runs (a finished or deleted pod has nothing left
to report, and its token may be read by whoever reads its volume). The pod and the job are
looked up in the informers' caches by the caller, so deciding costs no API request.

The checks run in an order that tells a stranger as little as possible: the namespace first, so
a token from elsewhere learns nothing of which jobs exist (403 before any 404).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from controller.progress.tokens import Identity
from shared.constants import LABEL_JOB_NAME

FINISHED_PHASES: Final = ("Succeeded", "Failed")


@dataclass(frozen=True)
class Verdict:
    """200 (may report), 403 or 404, and why."""

    status: int
    reason: str

    @property
    def allowed(self) -> bool:
        return self.status == 200


def _mapping(obj: Mapping[str, Any] | None, key: str) -> Mapping[str, Any]:
    value = (obj or {}).get(key)
    return value if isinstance(value, Mapping) else {}


def _controlled_by(pod: Mapping[str, Any], job_uid: object) -> bool:
    references = _mapping(pod, "metadata").get("ownerReferences")
    return (
        bool(job_uid)
        and isinstance(references, list)
        and any(
            isinstance(ref, Mapping) and ref.get("controller") is True and ref.get("uid") == job_uid
            for ref in references
        )
    )


def _who(identity: Identity, namespace: str) -> Verdict | None:
    if identity.namespace is None:
        return Verdict(403, f"{identity.username or 'the user'} is not a ServiceAccount")
    if identity.namespace != namespace:
        return Verdict(403, f"the token is of namespace {identity.namespace}, not {namespace}")
    if identity.pod_name is None:
        return Verdict(403, "the token names no pod")
    if identity.pod_uid is None:
        return Verdict(403, "the token names no pod uid")
    return None


def _pod(pod: Mapping[str, Any], identity: Identity, *, name: str, job_uid: object) -> Verdict:
    meta = _mapping(pod, "metadata")
    called = f"pod {identity.pod_name}"
    if meta.get("uid") != identity.pod_uid:
        return Verdict(403, f"{called} is not the pod the token was issued to (uid differs)")
    job_label = _mapping(meta, "labels").get(LABEL_JOB_NAME)
    if job_label != name or not _controlled_by(pod, job_uid):
        return Verdict(403, f"{called} is not a pod of mxjob {name}")
    if meta.get("deletionTimestamp"):
        return Verdict(403, f"{called} is being deleted")
    phase = _mapping(pod, "status").get("phase")
    if phase in FINISHED_PHASES:
        return Verdict(403, f"{called} has finished ({phase})")
    return Verdict(200, f"{called} reports for mxjob {name}")


def authorize(
    identity: Identity,
    *,
    namespace: str,
    name: str,
    job: Mapping[str, Any] | None,
    pod: Mapping[str, Any] | None,
) -> Verdict:
    """The verdict for ``identity`` reporting for MXJob ``namespace/name``; ``job`` and ``pod``
    are the cached objects (None when not cached), ``pod`` the one named
    ``identity.pod_name`` in ``namespace``."""
    refused = _who(identity, namespace)
    if refused is not None:
        return refused
    if job is None:
        return Verdict(404, f"mxjob {namespace}/{name} not found")
    if pod is None:
        return Verdict(403, f"pod {identity.pod_name} not found among the MXJob pods")
    return _pod(pod, identity, name=name, job_uid=_mapping(job, "metadata").get("uid"))
