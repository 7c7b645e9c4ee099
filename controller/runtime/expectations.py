"""What a job's last reconcile created and deleted, until the informers have seen it.

Why: reconcile reads pods and services from the informer cache, and the cache lags the API
server by a watch event. A reconcile that runs in that gap would see a pod it just created as
missing and create it again (or count a deleted pod as still there). So each create and delete
is recorded here first, the informer's event handlers mark them observed, and reconcile does
not touch a job's pods while any is outstanding (kube-controller-manager's
ControllerExpectations, keyed by object name instead of counts so that an event for some other
pod cannot satisfy the wrong expectation).

An expectation that is never observed (the watch event was lost and the object relisted, say)
expires after ``timeout`` seconds, so a job can never be stuck behind one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Literal

Kind = Literal["pods", "services"]


@dataclass
class _Pending:
    creations: set[tuple[Kind, str]] = field(default_factory=set)
    deletions: set[tuple[Kind, str]] = field(default_factory=set)
    since: float = 0.0


class Expectations:
    """Outstanding creates (by name) and deletes (by uid) per job key; thread-safe."""

    def __init__(
        self, *, timeout: float = 300.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._timeout = timeout
        self._clock = clock
        self._lock = threading.Lock()
        self._pending: dict[str, _Pending] = {}

    def _entry(self, job_key: str) -> _Pending:
        entry = self._pending.get(job_key)
        if entry is None:
            entry = self._pending[job_key] = _Pending()
        entry.since = self._clock()
        return entry

    def expect_creations(self, job_key: str, kind: Kind, names: Iterable[str]) -> None:
        """Before creating: the informer will show objects of ``kind`` with these names."""
        with self._lock:
            self._entry(job_key).creations.update((kind, name) for name in names)

    def expect_deletions(self, job_key: str, kind: Kind, uids: Iterable[str]) -> None:
        """Before deleting: the objects with these uids will disappear (or start terminating)."""
        with self._lock:
            self._entry(job_key).deletions.update((kind, uid) for uid in uids)

    def creation_observed(self, job_key: str, kind: Kind, name: str) -> None:
        """The informer saw an object of ``kind`` named ``name`` (or the create failed)."""
        with self._lock:
            entry = self._pending.get(job_key)
            if entry is not None:
                entry.creations.discard((kind, name))
                self._drop_if_empty(job_key, entry)

    def deletion_observed(self, job_key: str, kind: Kind, uid: str) -> None:
        """The informer saw the object with ``uid`` deleted or terminating (or delete failed)."""
        with self._lock:
            entry = self._pending.get(job_key)
            if entry is not None:
                entry.deletions.discard((kind, uid))
                self._drop_if_empty(job_key, entry)

    def _drop_if_empty(self, job_key: str, entry: _Pending) -> None:
        if not entry.creations and not entry.deletions:
            del self._pending[job_key]

    def satisfied(self, job_key: str) -> bool:
        """True when nothing is outstanding for the job, or what is has expired."""
        with self._lock:
            entry = self._pending.get(job_key)
            if entry is None:
                return True
            if self._clock() - entry.since >= self._timeout:
                del self._pending[job_key]
                return True
            return False

    def outstanding(self, job_key: str) -> tuple[int, int]:
        """(creations, deletions) still expected for the job: for logs and tests."""
        with self._lock:
            entry = self._pending.get(job_key)
            return (0, 0) if entry is None else (len(entry.creations), len(entry.deletions))

    def forget(self, job_key: str) -> None:
        """Drop everything of a job (it was deleted)."""
        with self._lock:
            self._pending.pop(job_key, None)
