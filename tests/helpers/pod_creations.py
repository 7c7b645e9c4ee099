"""Every pod created in a namespace while a test watches: to show a job's pods were made once."""

from __future__ import annotations

import threading

from localkube.base.api import Api


class PodCreations:
    """Every pod created in a namespace while it runs: (name, uid) pairs from a watch.

    The watch starts at the resourceVersion of a list made before the constructor returns, so no
    creation after it is missed; :meth:`stop` lets the current watch request run out (at most
    its 5 s timeout), so every creation made before it is in :attr:`seen`.
    """

    def __init__(self, api: Api, namespace: str) -> None:
        self.api = api
        self.namespace = namespace
        self.seen: set[tuple[str, str]] = set()
        self._stop = threading.Event()
        listing = api.request("GET", f"/api/v1/namespaces/{namespace}/pods")
        self._version = listing["metadata"]["resourceVersion"]
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        path = f"/api/v1/namespaces/{self.namespace}/pods"
        while not self._stop.is_set():
            query = [("resourceVersion", self._version), ("timeoutSeconds", "5")]
            for event in self.api.watch(path, query=query):
                meta = event.get("object", {}).get("metadata", {})
                self._version = meta.get("resourceVersion", self._version)
                if event.get("type") == "ADDED":
                    self.seen.add((meta["name"], meta["uid"]))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
