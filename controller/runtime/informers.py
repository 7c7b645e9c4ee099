"""List + watch into a local cache of plain dicts, one informer per resource.

Reconcile reads the world from here and never lists: the only LISTs are an informer's first one
and the relist after a 410 Gone. Each informer lists (paginated), then watches from the list's
``resourceVersion`` with bookmarks, so a reconnect after a dropped stream or a server-side
timeout resumes exactly where it stopped; a 410 (the version was compacted away) relists and
reports what changed meanwhile as ordinary events, deletions included.

Why not ``kubernetes.informer.SharedInformer`` (new in kubernetes 37): it lists and watches
through the generated API methods and so hands out model objects (slow to build, and a custom
resource's unknown fields are lost or need a second decode), it cannot ask for bookmarks, its
watch has no read timeout to notice a silently dead connection, it has no index (we look pods up
by job) and it cannot strip fields to keep memory flat with thousands of pods. The loop below is
the same algorithm (kopf's and client-go's reflector), on raw JSON.

The cache itself, :class:`Store`, lives in ``controller.runtime.store``; its names stay importable
from here, where the controller has always found them.
"""

from __future__ import annotations

import logging
import random
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from controller.runtime.client import Gone, KubeClient, WatchStream
from controller.runtime.store import (
    ADDED,
    DELETED,
    MODIFIED,
    Obj,
    Store,
    Transform,
    metadata_of,
    object_key,
)

__all__ = [
    "ADDED",
    "DELETED",
    "INTERN_MAX_LENGTH",
    "MODIFIED",
    "Handler",
    "Informer",
    "InformerSettings",
    "Obj",
    "Store",
    "Transform",
    "WatchError",
    "cached_object",
    "compact",
    "object_key",
    "slim_pod",
    "strip_managed_fields",
]

log = logging.getLogger(__name__)

Handler = Callable[[str, Obj, "Obj | None"], None]
"""``(event type, object, previous object or None)``; for DELETED the object is the last state."""


INTERN_MAX_LENGTH: Final = 64
"""Strings up to this length are interned in the cache: field names, label keys and values,
enum-like values ("Running", "TCP", "True"), names, uids and timestamps."""


def compact(value: Any) -> Any:
    """The same JSON value with every dict key and every short string interned.

    ``json.loads`` makes a new string for every key and value of every object, so 20,000
    cached pods hold 20,000 copies of ``"metadata"``, of each label key and of each repeated
    value: about half of a cached object's memory. Interned, each distinct string is held once.
    CPython frees an interned string with its last reference (``sys.intern``; checked by
    tests/controller/runtime/test_informers.py), so unique values (uids, timestamps) do not pile up
    once their object leaves the cache.
    """
    if isinstance(value, dict):
        return {sys.intern(k) if isinstance(k, str) else k: compact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [compact(item) for item in value]
    if isinstance(value, str) and len(value) <= INTERN_MAX_LENGTH:
        return sys.intern(value)
    return value


def strip_managed_fields(obj: Obj) -> Obj:
    """Drop ``metadata.managedFields``: large, and nothing here reads it."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    return obj


def cached_object(obj: Obj) -> Obj:
    """An MXJob or Service as cached: without ``managedFields``, its strings interned."""
    compacted: Obj = compact(strip_managed_fields(obj))
    return compacted


SLIM_POD_SPEC: Final = ("nodeName", "restartPolicy", "terminationGracePeriodSeconds")
"""What a cached pod keeps of its spec: the grace period is how long a pod of a finished job
may take to end by itself (controller/job/status/aftermath.py) before cleanPodPolicy deletes it."""
SLIM_POD_STATUS: Final = ("phase", "reason", "containerStatuses", "initContainerStatuses")
"""What a cached pod keeps of its status (controller/job/observed.py reads no more): not its IPs,
QoS class or start time, and of its conditions only :data:`KEPT_POD_CONDITIONS`."""
KEPT_POD_CONDITIONS: Final = ("DisruptionTarget",)
"""Kept whatever their status: who ended the pod."""
KEPT_FALSE_POD_CONDITIONS: Final = ("PodScheduled",)
"""Kept while False: why no node takes the pod (controller/job/status/waiting.py); a placed
pod's True one says nothing the controller reads."""
SLIM_CONTAINER_STATUS: Final = ("name", "state", "lastState", "restartCount")
"""What a cached pod keeps of each container's status: which container, how it ended (exit
code and reason, now and before its last restart) and how often the kubelet restarted it."""


def _kept_condition(condition: Obj) -> bool:
    kind = condition.get("type")
    return kind in KEPT_POD_CONDITIONS or (
        kind in KEPT_FALSE_POD_CONDITIONS and condition.get("status") == "False"
    )


def slim_pod(pod: Obj) -> Obj:
    """Keep what the controller reads of a pod; drop the spec's bulk (env, volumes...) and the
    status it never reads, and intern the strings (:func:`compact`).

    With thousands of pods cached this is most of the controller's memory.
    """
    strip_managed_fields(pod)
    spec = pod.get("spec")
    if isinstance(spec, dict):
        pod["spec"] = {k: spec[k] for k in SLIM_POD_SPEC if k in spec}
    status = pod.get("status")
    if isinstance(status, dict):
        slim_status = {k: status[k] for k in SLIM_POD_STATUS if k in status}
        conditions = status.get("conditions")
        if isinstance(conditions, list):
            kept = [c for c in conditions if isinstance(c, dict) and _kept_condition(c)]
            if kept:
                slim_status["conditions"] = kept
        for key in ("containerStatuses", "initContainerStatuses"):
            containers = slim_status.get(key)
            if isinstance(containers, list):
                slim_status[key] = [
                    {k: c[k] for k in SLIM_CONTAINER_STATUS if k in c} if isinstance(c, dict) else c
                    for c in containers
                ]
        pod["status"] = slim_status
    slimmed: Obj = compact(pod)
    return slimmed


class WatchError(Exception):
    """The watch stream reported an error other than 410 (retried after a pause)."""


@dataclass(frozen=True, kw_only=True)
class InformerSettings:
    """How an informer watches."""

    watch_timeout: int = 300
    """Server-side ``timeoutSeconds`` of a watch (jittered ±20%): the stream is re-opened from
    the last resourceVersion after it, which also bounds how long a silently dead connection
    can go unnoticed."""
    page_size: int = 500
    """Items per LIST page: keeps the API server's and our memory flat at start-up."""
    retry_min: float = 0.2
    """First pause after a failed list or watch (doubles up to ``retry_max``)."""
    retry_max: float = 5.0
    """Longest pause between attempts while the API server is away."""


class Informer:
    """Keeps a :class:`Store` in sync with one resource and calls handlers on every change."""

    def __init__(
        self,
        client: KubeClient,
        *,
        name: str,
        path_for: Callable[[str | None], str],
        namespaces: tuple[str, ...] | None = None,
        label_selector: str | None = None,
        index_label: str | None = None,
        transform: Transform = cached_object,
        settings: InformerSettings | None = None,
    ) -> None:
        self.client = client
        self.name = name
        self.store = Store(index_label=index_label, transform=transform)
        self._path_for = path_for
        self._namespaces: tuple[str | None, ...] = namespaces if namespaces else (None,)
        self._label_selector = label_selector
        self._transform = transform
        self._settings = settings or InformerSettings()
        self._handlers: list[Handler] = []
        self._stop = threading.Event()
        self._synced = {ns: threading.Event() for ns in self._namespaces}
        self._streams: dict[str | None, WatchStream] = {}
        self._streams_lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self.relists = 0
        """How many LISTs ran (first lists included): for tests and metrics."""

    def add_handler(self, handler: Handler) -> None:
        """Call ``handler`` for every change; register before :meth:`start`."""
        self._handlers.append(handler)

    def _fire(self, event_type: str, obj: Obj, old: Obj | None) -> None:
        for handler in self._handlers:
            try:
                handler(event_type, obj, old)
            except Exception:
                log.exception("informer %s: handler failed on %s", self.name, event_type)

    def start(self) -> None:
        for namespace in self._namespaces:
            thread = threading.Thread(
                target=self._run,
                args=(namespace,),
                name=f"informer-{self.name}-{namespace or 'all'}",
                daemon=True,
            )
            thread.start()
            self._threads.append(thread)

    def stop(self, *, wait: bool = True) -> None:
        """Stop watching; open streams are closed so the threads end promptly."""
        self._stop.set()
        with self._streams_lock:
            streams = list(self._streams.values())
        for stream in streams:
            stream.close()
        if wait:
            for thread in self._threads:
                if thread is not threading.current_thread():
                    thread.join(timeout=5)

    def has_synced(self) -> bool:
        """True once every namespace's first list is in the store."""
        return all(event.is_set() for event in self._synced.values())

    def wait_synced(self, timeout: float | None = None) -> bool:
        return all(event.wait(timeout) for event in self._synced.values())

    def alive(self) -> bool:
        """Every watch thread still runs (for /healthz)."""
        return bool(self._threads) and all(t.is_alive() for t in self._threads)

    # -- the loop ------------------------------------------------------------------------------
    def _selector(self) -> list[tuple[str, str]]:
        return [("labelSelector", self._label_selector)] if self._label_selector else []

    def _list(self, namespace: str | None) -> str:
        path = self._path_for(namespace)
        items: list[Obj] = []
        token = ""
        resource_version = ""
        while True:
            query = [*self._selector(), ("limit", str(self._settings.page_size))]
            if token:
                query.append(("continue", token))
            page = self.client.request("GET", path, query=query, timeout=60)
            items.extend(self._transform(item) for item in page.get("items") or [])
            meta = page.get("metadata") or {}
            resource_version = str(meta.get("resourceVersion", ""))
            token = str(meta.get("continue") or "")
            if not token:
                break
        self.relists += 1
        for event_type, obj, old in self.store.replace(namespace, items):
            self._fire(event_type, obj, old)
        return resource_version

    def _watch(self, namespace: str | None, resource_version: str) -> str | None:
        """Follow one watch stream; return the resourceVersion to resume from (None: relist)."""
        timeout = int(self._settings.watch_timeout * random.uniform(0.8, 1.2))
        query = [
            *self._selector(),
            ("resourceVersion", resource_version),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", str(timeout)),
        ]
        stream = self.client.open_watch(
            self._path_for(namespace), query=query, timeout=timeout + 30
        )
        with self._streams_lock:
            self._streams[namespace] = stream
        try:
            if self._stop.is_set():
                return resource_version
            for event in stream:
                event_type = event.get("type")
                obj = event.get("object")
                if not isinstance(obj, dict):
                    continue
                if event_type == "ERROR":
                    if obj.get("code") == 410:
                        log.info("informer %s: watch expired (410), relisting", self.name)
                        return None
                    raise WatchError(str(obj.get("message") or obj))
                resource_version = str(metadata_of(obj).get("resourceVersion") or resource_version)
                if event_type == "BOOKMARK" or event_type not in (ADDED, MODIFIED, DELETED):
                    continue
                obj = self._transform(obj)
                changed, old = self.store.apply(event_type, obj)
                if changed:
                    self._fire(event_type, obj, old)
                if self._stop.is_set():
                    break
        finally:
            with self._streams_lock:
                self._streams.pop(namespace, None)
        return resource_version

    def _run(self, namespace: str | None) -> None:
        resource_version: str | None = None
        delay = self._settings.retry_min
        while not self._stop.is_set():
            try:
                if resource_version is None:
                    resource_version = self._list(namespace)
                    self._synced[namespace].set()
                started = time.monotonic()
                resource_version = self._watch(namespace, resource_version)
                if time.monotonic() - started < 1.0:
                    # A stream that ends at once (proxy, overloaded server) must not spin.
                    self._stop.wait(delay)
                    delay = min(delay * 2, self._settings.retry_max)
                else:
                    delay = self._settings.retry_min
            except Gone:
                log.info("informer %s: resourceVersion gone (410), relisting", self.name)
                resource_version = None
            except Exception as error:
                if self._stop.is_set():
                    return
                log.warning(
                    "informer %s (%s): %s; retrying in %.1f s",
                    self.name,
                    namespace or "all namespaces",
                    error,
                    delay,
                )
                self._stop.wait(delay)
                delay = min(delay * 2, self._settings.retry_max)
