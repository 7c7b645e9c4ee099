"""The informers' cache: the objects of one resource by ``namespace/name`` and by an index label.

Kept apart from the list + watch loop (``controller.runtime.informers``) because everything
else reads it: the reconciler and the Kueue route look objects up here and write their own
writes through it, and the tests fill it by hand. The rules that keep it right under races
(a late event never undoes a write-through, a deleted object is never put back) are here, next
to the data they guard.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

ADDED: Final = "ADDED"
MODIFIED: Final = "MODIFIED"
DELETED: Final = "DELETED"

Obj = dict[str, Any]
Transform = Callable[[Obj], Obj]


def metadata_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``metadata`` of a cached object, empty when it has none (or not a mapping)."""
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def object_key(obj: Mapping[str, Any]) -> str:
    """``namespace/name`` (or ``name`` for cluster-scoped objects)."""
    meta = metadata_of(obj)
    namespace, name = meta.get("namespace") or "", meta.get("name") or ""
    return f"{namespace}/{name}" if namespace else str(name)


def newer_or_equal(candidate: Mapping[str, Any], current: Mapping[str, Any]) -> bool:
    """False only when both are the same object (uid) and ``candidate`` is provably older.

    resourceVersions are opaque by contract but etcd's are increasing integers; comparing them
    only stops a write-through (see :meth:`Store.write_through`) from being undone by a late
    event, and when they are not integers nothing is assumed.
    """
    a, b = metadata_of(candidate), metadata_of(current)
    if a.get("uid") != b.get("uid"):
        return True
    rv_a, rv_b = str(a.get("resourceVersion", "")), str(b.get("resourceVersion", ""))
    if rv_a.isdigit() and rv_b.isdigit():
        return int(rv_a) >= int(rv_b)
    return True


class Store:
    """The cached objects of one resource, by ``namespace/name`` and by an index label."""

    def __init__(
        self, *, index_label: str | None = None, transform: Transform | None = None
    ) -> None:
        self._lock = threading.Lock()
        self._transform = transform
        """What the informer does to what it caches: applied to written-through objects too."""
        self._objects: dict[str, Obj] = {}
        self._index_label = index_label
        self._index: dict[tuple[str, str], set[str]] = {}

    def _index_key(self, obj: Mapping[str, Any]) -> tuple[str, str] | None:
        if self._index_label is None:
            return None
        labels = metadata_of(obj).get("labels")
        value = labels.get(self._index_label) if isinstance(labels, Mapping) else None
        if not isinstance(value, str):
            return None
        return str(metadata_of(obj).get("namespace") or ""), value

    def _unindex(self, key: str, obj: Mapping[str, Any]) -> None:
        index_key = self._index_key(obj)
        if index_key is not None:
            keys = self._index.get(index_key)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._index[index_key]

    def _put_locked(self, key: str, obj: Obj) -> None:
        old = self._objects.get(key)
        if old is not None:
            self._unindex(key, old)
        self._objects[key] = obj
        index_key = self._index_key(obj)
        if index_key is not None:
            self._index.setdefault(index_key, set()).add(key)

    def _remove_locked(self, key: str) -> Obj | None:
        old = self._objects.pop(key, None)
        if old is not None:
            self._unindex(key, old)
        return old

    def get(self, key: str) -> Obj | None:
        """The cached object (shared: callers must not modify it)."""
        with self._lock:
            return self._objects.get(key)

    def by_index(self, namespace: str, value: str) -> list[Obj]:
        """Objects in ``namespace`` whose index label equals ``value``."""
        with self._lock:
            keys = self._index.get((namespace, value), set())
            return [self._objects[k] for k in sorted(keys)]

    def objects(self) -> list[Obj]:
        with self._lock:
            return list(self._objects.values())

    def all_keys(self) -> list[str]:
        with self._lock:
            return list(self._objects)

    def __len__(self) -> int:
        with self._lock:
            return len(self._objects)

    def apply(self, event_type: str, obj: Obj) -> tuple[bool, Obj | None]:
        """Apply one watch event; return (whether the cache changed, the previous object)."""
        key = object_key(obj)
        with self._lock:
            old = self._objects.get(key)
            if event_type == DELETED:
                uid = metadata_of(obj).get("uid")
                if old is not None and metadata_of(old).get("uid") not in (None, uid):
                    return False, old  # a newer object of the same name is cached already
                self._remove_locked(key)
                return old is not None, old
            if old is not None and not newer_or_equal(obj, old):
                return False, old
            self._put_locked(key, obj)
            return True, old

    def put_if_newer(self, obj: Obj) -> bool:
        """Put ``obj`` unless the cached object of the same uid is provably newer (a cache
        filled by hand, as in tests; the controller's own writes go through
        :meth:`write_through`)."""
        key = object_key(obj)
        with self._lock:
            old = self._objects.get(key)
            if old is not None and not newer_or_equal(obj, old):
                return False
            self._put_locked(key, obj)
            return True

    def write_through(self, obj: Obj) -> bool:
        """After our own successful write, put the object the API server returned in place of
        the cached one, so the next reconcile sees it.

        Only an object still cached (same uid) is replaced: when its DELETED event arrived
        while the write was on its way, putting it back would keep a deleted object in the
        cache for good (no later event removes it), and every reconcile would write to it.
        """
        if self._transform is not None:
            obj = self._transform(obj)
        key = object_key(obj)
        with self._lock:
            old = self._objects.get(key)
            if old is None or metadata_of(old).get("uid") != metadata_of(obj).get("uid"):
                return False
            if not newer_or_equal(obj, old):
                return False
            self._put_locked(key, obj)
            return True

    def replace(
        self, namespace: str | None, objects: Iterable[Obj]
    ) -> list[tuple[str, Obj, Obj | None]]:
        """Make the cache of ``namespace`` (None: all) equal ``objects``; return the changes."""
        fresh = {object_key(o): o for o in objects}
        changes: list[tuple[str, Obj, Obj | None]] = []
        with self._lock:
            for key in list(self._objects):
                obj = self._objects[key]
                in_scope = namespace is None or metadata_of(obj).get("namespace") == namespace
                if in_scope and key not in fresh:
                    self._remove_locked(key)
                    changes.append((DELETED, obj, obj))
            for key, obj in fresh.items():
                old = self._objects.get(key)
                before, after = metadata_of(old or {}), metadata_of(obj)
                if old is not None and before.get("uid") == after.get("uid"):
                    if before.get("resourceVersion") == after.get("resourceVersion"):
                        continue
                    if not newer_or_equal(obj, old):
                        continue
                self._put_locked(key, obj)
                changes.append((ADDED if old is None else MODIFIED, obj, old))
        return changes
