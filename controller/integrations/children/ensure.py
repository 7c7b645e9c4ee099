"""The one path that makes a job's child stand: read from the cache, create, update, or leave.

Every integration that makes an object per job (a PodDisruptionBudget, a NetworkPolicy, a
PodGroup, a Workload: :mod:`controller.integrations.children.kind`) goes through
:meth:`OwnedChildren.ensure`, just before the job's pods are created:

- read the object of the job's name (with the kind's suffix) from the kind's cache, never the
  API server;
- none there: create it;
- the job's own: compare what the controller owns of it (the kind's :data:`Revise`) and write
  only when it differs: an update with the version read (written through to the cache, so the
  next reconcile does not write it again), or, for an immutable spec, a replacement (deleted by
  uid; the caller holds the pods back with :class:`ChildNotReadyError` until it is gone);
- foreign: leave it (:mod:`controller.integrations.children.foreign`), and return it as such.

A cache that has not seen the object yet (created by the last reconcile, or by someone else an
instant ago) makes the create fail with AlreadyExists: that error, and only that, is answered
by reading the object from the API server, and the same rules are applied to what it holds.

What the job is told of a foreign object comes from the cache too, through the reconcile's
points before status is computed (:meth:`OwnedChildren.wait`) and after it is written
(:meth:`OwnedChildren.notice`, once per job and object), never from a write of its own.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, NoReturn

from controller.integrations.children.foreign import foreign_message, foreign_wait, is_foreign
from controller.integrations.children.kind import ChildKind, Replace, Revise
from controller.job.hooks import Notice
from controller.job.status.outcome import Wait
from controller.job.view import MXJobView
from controller.runtime.client import AlreadyExists, Conflict, KubeClient, NotFound
from controller.runtime.events import FOREIGN_OBJECT_EXISTS
from controller.runtime.store import Store, metadata_of

log = logging.getLogger(__name__)

Wrote = Literal["created", "updated", ""]
CREATED: Final = "created"
UPDATED: Final = "updated"


class ChildNotReadyError(Conflict):
    """The job's own object is being deleted or replaced: retry later, before any pod is made
    that would need it (a Conflict: the worker retries it with back-off and no warning)."""

    def __init__(self, message: str) -> None:
        super().__init__(409, "Conflict", message)


@dataclass(frozen=True)
class Ensured:
    """Where the job's object stands after :meth:`OwnedChildren.ensure`."""

    obj: Mapping[str, Any]
    """The object as it stands: the API server's answer to a write, else as read."""
    foreign: bool = False
    """Another object holds the name; it was left as it is."""
    wrote: Wrote = ""


class OwnedChildren:
    """One kind of a job's child, read from that kind's cache (see the module docstring)."""

    def __init__(self, client: KubeClient, *, kind: ChildKind, store: Store) -> None:
        self.client = client
        self.kind = kind
        self.store = store
        self._told: dict[str, str] = {}
        """Per job (``namespace/name``): the uid of the foreign object it was warned of."""

    def ensure(self, job: MXJobView, wanted: Mapping[str, Any], *, revise: Revise) -> Ensured:
        """Make the job's object stand as ``wanted`` (at most one write, besides a create that
        met a stale cache); a foreign one is returned as such, untouched."""
        existing: Mapping[str, Any] | None = self.store.get(self.kind.key_for(job))
        if existing is None:
            try:
                created = self.client.request("POST", self.kind.path(job.namespace), body=wanted)
                log.info("%s: %s created", job.key, self.kind.kind)
                return Ensured(created, wrote=CREATED)
            except AlreadyExists:
                existing = self._read(job)
        if is_foreign(existing, job):
            return Ensured(existing, foreign=True)
        if metadata_of(existing).get("deletionTimestamp"):
            raise ChildNotReadyError(f"{self._where(job)} is still being deleted")
        revision = revise(existing, wanted)
        if revision is None:
            return Ensured(existing)
        if isinstance(revision, Replace):
            self._replace(job, existing, revision)
        updated = self.client.request("PUT", self._path(job), body=revision)
        self.store.write_through(updated)
        log.info("%s: %s updated to the job's", job.key, self.kind.kind)
        return Ensured(updated, wrote=UPDATED)

    def _read(self, job: MXJobView) -> Mapping[str, Any]:
        """The object a create found in the way, read from the API server (the cache has not
        seen it yet): the one uncached read of this path."""
        try:
            found: Mapping[str, Any] = self.client.request("GET", self._path(job))
        except NotFound as error:
            raise ChildNotReadyError(f"{self._where(job)} vanished; retrying") from error
        return found

    def _replace(self, job: MXJobView, existing: Mapping[str, Any], revision: Replace) -> NoReturn:
        """Delete the job's own object (by uid: never a newer one); raise to hold the pods back
        until the cache sees it gone and the next reconcile makes it anew."""
        uid = metadata_of(existing).get("uid")
        with contextlib.suppress(NotFound, Conflict):
            self.client.request("DELETE", self._path(job), body={"preconditions": {"uid": uid}})
        log.info("%s: %s replaced, it no longer matches the job: %s", job.key, self.kind.kind,
                 revision.differs)  # fmt: skip
        raise ChildNotReadyError(
            f"{self._where(job)} replaced: it no longer matched ({revision.differs})"
        )

    def _path(self, job: MXJobView) -> str:
        return self.kind.path(job.namespace, self.kind.name_for(job.name))

    def _where(self, job: MXJobView) -> str:
        return f"{self.kind.plural} {job.namespace}/{self.kind.name_for(job.name)}"

    # -- what the job is told ------------------------------------------------------------------
    def foreign(self, job: MXJobView) -> Mapping[str, Any] | None:
        """The cached foreign object holding the job's name, if any, while the job may still
        make pods (a finished or suspended job needs nothing)."""
        if job.finished or job.suspended:
            return None
        cached = self.store.get(self.kind.key_for(job))
        return cached if cached is not None and is_foreign(cached, job) else None

    def wait(self, job: MXJobView) -> Wait | None:
        """The job's ``Pending`` reason, when its pods wait for a foreign object to go."""
        found = self.foreign(job)
        return None if found is None else foreign_wait(self.kind, found, job)

    def notice(self, job: MXJobView) -> Notice | None:
        """The ``ForeignObjectExists`` Warning, once per job and foreign object."""
        found = self.foreign(job)
        uid = str(metadata_of(found or {}).get("uid", ""))
        if found is None or self._told.get(job.key) == uid:
            return None
        self._told[job.key] = uid
        message = foreign_message(self.kind, found, job)
        log.warning("%s: %s", job.key, message)
        return Notice(FOREIGN_OBJECT_EXISTS, message, type="Warning")

    def forget(self, namespace: str, name: str) -> None:
        """The job is gone: a new job of its name is told again."""
        self._told.pop(f"{namespace}/{name}", None)
