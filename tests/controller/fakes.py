"""Test doubles for the controller's unit tests: an in-memory API server and scripted watches.

``FakeApi`` keeps objects by path and implements just enough of the API's semantics for the
controller's requests (create with AlreadyExists, resourceVersion preconditions on PUT, uid
preconditions on DELETE, merge and JSON PATCH, status subresource, finalizers holding a deleted
object until the last one is removed), and records every request so tests can assert what was
(or was not) sent.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import jsonpatch

from controller.runtime.client import ApiError, KubeClient, Query, error_for
from controller.runtime.store import Obj, Store, Transform


@dataclass
class Request:
    method: str
    path: str
    body: Any
    query: Query
    content_type: str = "application/json"


class FakeApi(KubeClient):
    """An in-memory API server for single objects (no LIST, no watch)."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.requests: list[Request] = []
        self.fail_next: dict[tuple[str, str], ApiError] = {}
        self._versions = itertools.count(100)
        self._uids = itertools.count(1)

    # helpers for tests
    def put_object(self, path: str, obj: dict[str, Any]) -> dict[str, Any]:
        stored = copy.deepcopy(obj)
        meta = stored.setdefault("metadata", {})
        meta.setdefault("uid", f"uid-{next(self._uids)}")
        meta["resourceVersion"] = str(next(self._versions))
        self.objects[path] = stored
        return copy.deepcopy(stored)

    def writes(self) -> list[Request]:
        return [r for r in self.requests if r.method != "GET"]

    def _error(self, status: int, reason: str) -> ApiError:
        return error_for(status, reason, {"kind": "Status", "reason": reason, "code": status})

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        query: Query | None = None,
        content_type: str = "application/json",
        timeout: float = 30,
    ) -> Any:
        self.requests.append(
            Request(method, path, copy.deepcopy(body), list(query or []), content_type)
        )
        failure = self.fail_next.pop((method, path), None)
        if failure is not None:
            raise failure
        subresource = None
        base = path
        if path.endswith("/status"):
            base, subresource = path.rsplit("/", 1)
        if method == "GET":
            if base not in self.objects:
                raise self._error(404, "NotFound")
            return copy.deepcopy(self.objects[base])
        if method == "POST":
            name = body["metadata"]["name"]
            target = f"{path}/{name}"
            if target in self.objects:
                raise self._error(409, "AlreadyExists")
            return self.put_object(target, body)
        if method == "PUT":
            if base not in self.objects:
                raise self._error(404, "NotFound")
            current = self.objects[base]
            wanted_rv = (body.get("metadata") or {}).get("resourceVersion")
            if wanted_rv and wanted_rv != current["metadata"]["resourceVersion"]:
                raise self._error(409, "Conflict")
            updated = copy.deepcopy(current)
            if subresource == "status":
                updated["status"] = copy.deepcopy(body.get("status"))
            else:
                updated = copy.deepcopy(body)
                updated["metadata"]["uid"] = current["metadata"]["uid"]
            updated["metadata"]["resourceVersion"] = str(next(self._versions))
            self.objects[base] = updated
            return copy.deepcopy(updated)
        if method == "PATCH":
            if base not in self.objects:
                raise self._error(404, "NotFound")
            if content_type == "application/json-patch+json":
                try:
                    patched = jsonpatch.apply_patch(self.objects[base], body)
                except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException):
                    raise self._error(422, "Invalid") from None
                self.objects[base] = patched
            else:
                _merge(self.objects[base], body)
            stored = self.objects[base]
            stored["metadata"]["resourceVersion"] = str(next(self._versions))
            if stored["metadata"].get("deletionTimestamp") and not stored["metadata"].get(
                "finalizers"
            ):
                del self.objects[base]
            return copy.deepcopy(stored)
        if method == "DELETE":
            if base not in self.objects:
                raise self._error(404, "NotFound")
            uid = ((body or {}).get("preconditions") or {}).get("uid")
            if uid and uid != self.objects[base]["metadata"]["uid"]:
                raise self._error(409, "Conflict")
            meta = self.objects[base]["metadata"]
            if meta.get("finalizers"):
                meta.setdefault("deletionTimestamp", "2024-01-01T00:00:00Z")
                meta["resourceVersion"] = str(next(self._versions))
                return copy.deepcopy(self.objects[base])
            return self.objects.pop(base)
        raise AssertionError(f"unexpected {method} {path}")


def catch_up(
    store: Store, api: FakeApi, collection: str, *, transform: Transform = lambda obj: obj
) -> Store:
    """Make ``store`` hold ``api``'s objects of one namespaced ``collection`` path, as an
    informer that has seen every event would (deletions too). A test calls it where the
    informer would have caught up; not calling it leaves the cache as stale as it wants."""
    fresh: list[Obj] = [
        transform(copy.deepcopy(obj))
        for path, obj in api.objects.items()
        if path.rsplit("/", 1)[0] == collection
    ]
    store.replace(None, fresh)
    return store


def _merge(target: dict[str, Any], patch: dict[str, Any]) -> None:
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict) and isinstance(target.get(key), dict):
            _merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)


class _Stream:
    def __init__(self, events: list[dict[str, Any]]) -> None:
        self._events = events
        self.closed = False

    def __iter__(self) -> Iterator[dict[str, Any]]:
        yield from self._events

    def close(self) -> None:
        self.closed = True


@dataclass
class ScriptedWatchApi(KubeClient):
    """LIST answers and watch streams played from scripts, for informer tests.

    ``lists`` are consecutive LIST pages (dicts) or errors; ``watches`` are consecutive watch
    streams (lists of events) or errors. When a script runs out, the informer is told to stop.
    """

    lists: list[Any] = field(default_factory=list)
    watches: list[Any] = field(default_factory=list)
    list_queries: list[Query] = field(default_factory=list)
    watch_queries: list[Query] = field(default_factory=list)
    on_exhausted: Any = None

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        query: Query | None = None,
        content_type: str = "application/json",
        timeout: float = 30,
    ) -> Any:
        assert method == "GET"
        self.list_queries.append(list(query or []))
        if not self.lists:
            raise AssertionError("unexpected LIST")
        answer = self.lists.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return copy.deepcopy(answer)

    def open_watch(self, path: str, *, query: Query, timeout: float = 90) -> Any:
        self.watch_queries.append(list(query))
        if not self.watches:
            if self.on_exhausted is not None:
                self.on_exhausted()
            return _Stream([])
        script = self.watches.pop(0)
        if isinstance(script, Exception):
            raise script
        return _Stream(copy.deepcopy(script))
