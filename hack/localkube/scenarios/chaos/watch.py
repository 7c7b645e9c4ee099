"""What the chaos run saw: MXJobs and pods of its namespace watched through every fault."""

from __future__ import annotations

import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from localkube.base.api import Api, ApiError
from localkube.scenarios.chaos.plan import GROUP_PATH, NAMESPACE, container, phase


@dataclass
class History:
    """Everything the watches saw, in resourceVersion order per stream."""

    job_states: dict[str, list[tuple[int, str, int]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    """job → [(resourceVersion, state, restartCount)]"""
    pod_seen: dict[str, dict[str, list[tuple[int, str, int]]]] = field(
        default_factory=lambda: defaultdict(dict)
    )
    """pod name → uid → [(resourceVersion, phase, container restartCount)]"""
    pod_created_rv: dict[str, int] = field(default_factory=dict)
    """uid → resourceVersion of its ADDED event (when the watch saw it created)"""
    relists: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def snapshot(self) -> History:
        """A copy the watches no longer change, for the checks."""
        with self.lock:
            return History(
                job_states=defaultdict(
                    list, {name: list(seen) for name, seen in self.job_states.items()}
                ),
                pod_seen=defaultdict(
                    dict,
                    {
                        name: {uid: list(seen) for uid, seen in uids.items()}
                        for name, uids in self.pod_seen.items()
                    },
                ),
                pod_created_rv=dict(self.pod_created_rv),
                relists=Counter(self.relists),
            )


class Watcher:
    """Watches MXJobs and pods of the chaos namespace through every fault, relisting after 410."""

    def __init__(self, api: Api, history: History, stop: threading.Event) -> None:
        self.api = api
        self.history = history
        self.stop = stop
        self.threads = [
            threading.Thread(target=self._run, args=(kind,), daemon=True, name=f"watch-{kind}")
            for kind in ("mxjobs", "pods")
        ]

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def _path(self, kind: str) -> str:
        if kind == "mxjobs":
            return f"{GROUP_PATH}/namespaces/{NAMESPACE}/mxjobs"
        return f"/api/v1/namespaces/{NAMESPACE}/pods"

    def _record(self, kind: str, event_type: str, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        rv = int(meta.get("resourceVersion") or 0)
        with self.history.lock:
            if kind == "mxjobs":
                status = obj.get("status") or {}
                self.history.job_states[meta["name"]].append(
                    (rv, str(status.get("state") or ""), int(status.get("restartCount") or 0))
                )
                return
            uid = meta["uid"]
            if event_type == "ADDED" and uid not in self.history.pod_created_rv:
                self.history.pod_created_rv[uid] = rv
            seen = self.history.pod_seen[meta["name"]].setdefault(uid, [])
            seen.append((rv, phase(obj), int(container(obj).get("restartCount") or 0)))

    def _run(self, kind: str) -> None:
        version = ""
        while not self.stop.is_set():
            try:
                if not version:
                    listing = self.api.request("GET", self._path(kind))
                    for item in listing["items"]:
                        self._record(kind, "LISTED", item)
                    version = listing["metadata"]["resourceVersion"]
                query = [("resourceVersion", version), ("timeoutSeconds", "30")]
                for event in self.api.watch(self._path(kind), query=query, timeout=40):
                    if self.stop.is_set():
                        return
                    obj = event.get("object") or {}
                    if event.get("type") == "ERROR":
                        if obj.get("code") == 410:
                            self._relisted(kind)
                        version = ""
                        break
                    version = (obj.get("metadata") or {}).get("resourceVersion", version)
                    if event.get("type") != "BOOKMARK":
                        self._record(kind, str(event.get("type")), obj)
            except ApiError as error:
                if error.status == 410:
                    self._relisted(kind)
                version = ""
                time.sleep(0.2)
            except Exception:
                version = ""  # the API server is down or restarting: list again when back
                time.sleep(0.2)

    def _relisted(self, kind: str) -> None:
        with self.history.lock:
            self.history.relists[kind] += 1
