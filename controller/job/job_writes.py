"""Every write of an MXJob itself, through one writer: its status, its spec, its deletion.

The reconciler writes the status and deletes a job whose TTL passed; Kueue's integration starts
and stops a queued job by changing its spec (controller/integrations/kueue/workload_sync.py);
the progress endpoint writes what the job's pods report (controller/progress/flusher.py). They
share :class:`MXJobWrites`, as Kueue's ``jobframework`` has one reconciler write the job, so
every MXJob write is sent the same way: a replace carries the cached ``resourceVersion`` (a
stale cache gets a conflict and a retry, never an overwrite of a newer write), and what the API
server answers is written through to the job cache, so the next reconcile starts from it. Pods,
Services and what integrations own are the writer's of controller/job/writes.py and of each
integration.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from controller.runtime.client import MERGE_PATCH, Conflict, KubeClient, NotFound, mxjobs_path
from controller.runtime.store import Store
from shared.spec import as_mapping

log = logging.getLogger(__name__)

Obj = dict[str, Any]


def _where(job: Mapping[str, Any]) -> tuple[str, str]:
    meta = as_mapping(job.get("metadata"))
    return str(meta.get("namespace", "")), str(meta.get("name", ""))


class MXJobWrites:
    """The one writer of MXJobs (see the module docstring)."""

    def __init__(self, client: KubeClient, *, jobs: Store) -> None:
        self.client = client
        self.jobs = jobs

    def status(self, job: Mapping[str, Any], status: Mapping[str, Any]) -> None:
        """Replace the status of ``job`` (as cached) with ``status``."""
        namespace, name = _where(job)
        body = {**job, "status": dict(status)}
        self._through(
            self.client.request(
                "PUT", mxjobs_path(namespace, name, subresource="status"), body=body
            )
        )

    def spec(self, job: Mapping[str, Any]) -> None:
        """Replace ``job`` as changed (its status left out: a subresource of its own)."""
        namespace, name = _where(job)
        body = {k: v for k, v in job.items() if k != "status"}
        self._through(self.client.request("PUT", mxjobs_path(namespace, name), body=body))

    def trainer_status(
        self, namespace: str, name: str, trainer_status: Mapping[str, Any], *, timeout: float
    ) -> None:
        """Merge-patch ``status.trainerStatus`` alone: the reports never touch the fields the
        reconciler writes, and the reconciler's replace of the status, at the version it read,
        can never roll a report back (a report in between makes it conflict and retry)."""
        self.client.request(
            "PATCH",
            mxjobs_path(namespace, name, subresource="status"),
            body={"status": {"trainerStatus": dict(trainer_status)}},
            content_type=MERGE_PATCH,
            timeout=timeout,
        )

    def delete(self, *, namespace: str, name: str, uid: str) -> bool:
        """Delete the job of ``uid`` (its dependents in the background); False when it is
        gone already or is another job by now."""
        try:
            self.client.request(
                "DELETE",
                mxjobs_path(namespace, name),
                body={"propagationPolicy": "Background", "preconditions": {"uid": uid}},
            )
        except (NotFound, Conflict):
            return False
        return True

    def _through(self, written: object) -> None:
        if isinstance(written, dict):
            self.jobs.write_through(written)
