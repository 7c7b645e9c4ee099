"""What the reconciler remembers of each job between reconciles, keyed by ``namespace/name``.

Reconcile is level-triggered, but these cannot be read back from the cluster at once:

- the job's spec validated, defaulted and read (controller/job/view.py), which costs a
  defaulting, a validation and a reading per spec generation, not per reconcile (status
  changes do not bump it);
- the pods whose tracking finalizer this process removed, until the cache shows the PATCH;
- the uid of a job the informer saw deleted, until the reconcile that lets go of what was made
  for it (the cache no longer has the job to read it from).

Everything is keyed by the job's uid too, so a job re-created under the same name starts afresh.
Reconciles of different jobs run in parallel: one lock guards the tables.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from controller.job.view import MXJobView, SpecReading, read_invalid_spec, read_job, read_spec
from shared.defaults import apply_defaults
from shared.spec import as_mapping
from shared.validation import replica_total_violations, validate


@dataclass(frozen=True)
class _Defaulted:
    uid: str
    generation: object
    spec: SpecReading
    violations: tuple[str, ...]


def _uid(obj: Mapping[str, Any]) -> str:
    return str(as_mapping(obj.get("metadata")).get("uid", ""))


class JobMemory:
    """The reconciler's memory per job (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._defaulted: dict[str, _Defaulted] = {}
        self._released: dict[str, dict[str, str]] = {}
        self._gone: dict[str, str] = {}

    def forget(self, key: str) -> None:
        """The job is gone: drop what is remembered about it."""
        with self._lock:
            self._defaulted.pop(key, None)

    # -- deleted jobs ----------------------------------------------------------------------------
    def remember_gone(self, key: str, uid: str) -> None:
        """The job ``key`` of ``uid`` was deleted: its next reconcile lets go of it by uid."""
        with self._lock:
            self._gone[key] = uid

    def take_gone(self, key: str) -> str | None:
        """The uid of the job ``key`` deleted since its last reconcile, if any: taken, so that a
        job deleted and made anew under its name leaves nothing behind."""
        with self._lock:
            return self._gone.pop(key, None)

    # -- the view ---------------------------------------------------------------------------------
    def view(self, key: str, raw: Mapping[str, Any]) -> MXJobView:
        """The job read once: its spec validated and defaulted once per spec generation.

        Every job is read defaulted, whether or not the mutating webhook stored its defaults: a
        job stored without admission, taken over from training-operator, or stored before a
        default was added (``restartScope``, ``runPolicy.disruptionPolicy``) reads as the
        webhook would store it now; the stored job itself is left as it is, and gets the fields
        at its next spec update, which the webhook defaults.

        What defaulting makes of the job is validated: that is what would run, and the env the
        operator owns is stale in a stored job after scaling until defaulting recomputes it.
        Except the replica total: defaulting's env grows with it, so it is checked first, and a
        job over it gets every default but the env (it fails without running). A job that fails
        validation is read with its invalid values as unset (shared/defaults.py) and none of
        its replicas: it runs none, and is failed with its violations.
        """
        uid, generation = _uid(raw), as_mapping(raw.get("metadata")).get("generation")
        with self._lock:
            cached = self._defaulted.get(key)
        if cached is None or cached.uid != uid or cached.generation != generation:
            too_many = replica_total_violations(raw)
            defaulted = apply_defaults(raw, env=not too_many)
            violations = tuple(str(v) for v in too_many or validate(defaulted))
            spec = (
                read_invalid_spec(apply_defaults(raw, env=False, invalid_as_unset=True))
                if violations
                else read_spec(defaulted)
            )
            cached = _Defaulted(uid, generation, spec, violations)
            with self._lock:
                self._defaulted[key] = cached
        return read_job(raw, spec=cached.spec, violations=cached.violations)

    # -- released finalizers ----------------------------------------------------------------------
    def released(self, slot: str) -> dict[str, str]:
        """Pod uid → resourceVersion of the pods released under ``slot`` (a job key, or its
        ``#orphans``) whose cached version had not changed since."""
        with self._lock:
            return dict(self._released.get(slot, {}))

    def set_released(self, slot: str, memory: dict[str, str]) -> None:
        with self._lock:
            if memory:
                self._released[slot] = memory
            else:
                self._released.pop(slot, None)
