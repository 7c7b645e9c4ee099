"""Kubernetes Events on the MXJob, so that ``kubectl describe mxjob`` tells the job's story.

Events are written by one background thread from a bounded queue: a reconcile never waits for
(or fails because of) an Event, and when the API server is slow the oldest news is dropped
rather than the controller slowed down. A repeat of the same event (same object, type, reason
and message) within the cache's memory bumps the existing Event's ``count`` with one PATCH
instead of creating another object, as client-go's correlator does. Every Event is an API write,
so reconcile records few: creations and deletions are summarised per reconcile, and the terminal
states, exit codes and restarts each get one.
"""

from __future__ import annotations

import collections
import datetime
import logging
import queue
import secrets
import socket
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from controller.runtime.client import ApiError, KubeClient, NotFound, events_path
from shared.apitime import format_time
from shared.constants import API_VERSION_V1, KIND

log = logging.getLogger(__name__)

COMPONENT: Final = "mxjob-controller"
MAX_MESSAGE: Final = 1024
QUEUE_FULL: Final = "queue_full"
"""Why an Event was dropped: the queue was full when it was recorded."""
WRITE_FAILED: Final = "write_failed"
"""Why an Event was dropped: the API server refused or did not answer its write."""

# Reasons besides the status ones (shared.conditions.Reason and controller.job.status).
SUCCESSFUL_CREATE_POD: Final = "SuccessfulCreatePod"
SUCCESSFUL_DELETE_POD: Final = "SuccessfulDeletePod"
SUCCESSFUL_CREATE_SERVICE: Final = "SuccessfulCreateService"
SUCCESSFUL_DELETE_SERVICE: Final = "SuccessfulDeleteService"
FAILED_CREATE_POD: Final = "FailedCreatePod"
FAILED_CREATE_SERVICE: Final = "FailedCreateService"
NAME_CONFLICT: Final = "NameConflict"
FOREIGN_OBJECT_EXISTS: Final = "ForeignObjectExists"
"""An object the job needs (its PodDisruptionBudget, NetworkPolicy, PodGroup, Workload) has its
name and is not its own: it is left as it is (controller/integrations/children/foreign.py)."""


@dataclass(frozen=True)
class _Item:
    namespace: str
    involved: dict[str, Any]
    type: str
    reason: str
    message: str
    when: datetime.datetime


def summarize(verb: str, kind: str, names: list[str], *, limit: int = 10) -> str:
    """``Created pods: a, b, c`` (the first ``limit`` names, then ``and N more``)."""
    shown = ", ".join(names[:limit])
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    plural = kind if len(names) == 1 else f"{kind}s"
    return f"{verb} {plural}: {shown}{more}"


class EventRecorder:
    """Records Events about MXJobs from a background thread."""

    def __init__(
        self,
        client: KubeClient,
        *,
        host: str | None = None,
        queue_size: int = 1000,
        cache_size: int = 4096,
        warnings_only: bool = False,
        on_drop: Callable[[str], None] | None = None,
    ) -> None:
        self.client = client
        self.on_drop = on_drop
        """Told the reason (:data:`QUEUE_FULL`, :data:`WRITE_FAILED`) of each dropped Event."""
        self.warnings_only = warnings_only
        self.host = host or socket.gethostname()
        self._queue: queue.Queue[_Item | None] = queue.Queue(maxsize=queue_size)
        self._cache: collections.OrderedDict[tuple[str, str, str, str], tuple[str, int, str]] = (
            collections.OrderedDict()
        )
        self._cache_size = cache_size
        self._thread: threading.Thread | None = None
        self.dropped = 0
        """Events not written because the queue was full (for logs and tests)."""

    def record(
        self,
        job: Mapping[str, Any],
        event_type: str,
        reason: str,
        message: str,
        *,
        api_version: str = API_VERSION_V1,
        kind: str = KIND,
    ) -> None:
        """Queue an Event about ``job`` (or another object, of ``api_version`` and ``kind``);
        never blocks, never raises."""
        if self.warnings_only and event_type != "Warning":
            return
        meta = job.get("metadata") or {}
        involved = {
            "apiVersion": api_version,
            "kind": kind,
            "name": meta.get("name"),
            "namespace": meta.get("namespace"),
            "uid": meta.get("uid"),
        }
        item = _Item(
            namespace=str(meta.get("namespace") or "default"),
            involved=involved,
            type=event_type,
            reason=reason,
            message=message[:MAX_MESSAGE],
            when=datetime.datetime.now(datetime.UTC),
        )
        try:
            self._queue.put_nowait(item)
        except queue.Full:
            self.dropped += 1
            self._dropped(QUEUE_FULL)

    def _dropped(self, reason: str) -> None:
        if self.on_drop is not None:
            self.on_drop(reason)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="event-recorder", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Write what is queued (for at most ``timeout`` seconds), then stop."""
        if self._thread is None:
            return
        try:
            self._queue.put(None, timeout=timeout)
        except queue.Full:
            return
        self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            try:
                self._write(item)
            except Exception as error:
                fields = {
                    "namespace": item.involved.get("namespace"),
                    "name": item.involved.get("name"),
                    "reason": item.reason,
                }
                # A namespace being deleted refuses new content; its job goes with it, so the
                # lost event is expected, not a permission problem worth a warning.
                level = logging.DEBUG if namespace_terminating(error) else logging.WARNING
                log.log(level, "event not recorded: %s", error, extra={"fields": fields})
                self._dropped(WRITE_FAILED)

    def _write(self, item: _Item) -> None:
        key = (str(item.involved.get("uid")), item.type, item.reason, item.message)
        cached = self._cache.get(key)
        stamp = format_time(item.when)
        if cached is not None:
            name, count, namespace = cached
            try:
                self.client.request(
                    "PATCH",
                    events_path(namespace, name),
                    body={"count": count + 1, "lastTimestamp": stamp},
                    content_type="application/merge-patch+json",
                )
                self._cache[key] = (name, count + 1, namespace)
                self._cache.move_to_end(key)
                return
            except NotFound:
                del self._cache[key]
        name = f"{item.involved.get('name')}.{secrets.token_hex(8)}"
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": item.namespace},
            "involvedObject": item.involved,
            "reason": item.reason,
            "message": item.message,
            "type": item.type,
            "count": 1,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "source": {"component": COMPONENT, "host": self.host},
            "reportingComponent": COMPONENT,
            "reportingInstance": self.host,
        }
        try:
            self.client.request("POST", events_path(item.namespace), body=body)
        except ApiError as error:
            if error.status == 404:  # the namespace is gone: nothing to tell
                return
            raise
        self._cache[key] = (name, 1, item.namespace)
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)


def namespace_terminating(error: Exception) -> bool:
    """The API server refused a write because the namespace is being deleted.

    Its Status lists the cause ``NamespaceTerminating`` (a StatusCause's type is serialized as
    ``reason``).
    """
    if not isinstance(error, ApiError) or error.status != 403:
        return False
    details = error.body.get("details") if isinstance(error.body, dict) else None
    causes = details.get("causes") if isinstance(details, dict) else None
    return isinstance(causes, list) and any(
        isinstance(c, dict) and c.get("reason") == "NamespaceTerminating" for c in causes
    )
