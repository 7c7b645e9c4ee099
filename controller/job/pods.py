"""The pods of one job as one reconcile reads them: each observed once, shared by every stage.

A reconcile asks the same pods many questions: status computation reads every pod's
:class:`~controller.job.observed.PodView`, the metrics' tally the exit codes of in-place
restarts, the plan which pods are terminating and which to delete, the gang integration how many
are placed. :meth:`JobPods.read` observes each pod exactly once, in the reconciler, and every
stage is handed the same collection: one reading per reconcile, so no stage re-parses a pod and
no two stages can read one differently. Each pod's cached object rides along with its view, for
the stages that send it back to the API server (a DELETE, the tracking finalizer's patch).

The views are the pods as observed; what status makes of them (a long-unreported end read as a
failure, controller/job/tracking.py) stays status's own.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from controller.job.observed import PodView, observe

Obj = dict[str, Any]


@dataclass(frozen=True)
class JobPod:
    """One pod of the job: its cached object and what it says about its replica."""

    raw: Obj
    """The pod as cached: what a write names (a DELETE, the finalizer's guarded patch)."""
    view: PodView
    """:func:`~controller.job.observed.observe` of :attr:`raw`, read once."""


@dataclass(frozen=True)
class JobPods:
    """The job's own pods (by owner uid) from the cache, in the cache's order."""

    pods: tuple[JobPod, ...] = ()

    @classmethod
    def read(cls, raw_pods: Iterable[Obj]) -> JobPods:
        """Observe each pod once."""
        return cls(tuple(JobPod(raw, observe(raw)) for raw in raw_pods))

    def __iter__(self) -> Iterator[JobPod]:
        return iter(self.pods)

    def __len__(self) -> int:
        return len(self.pods)

    @property
    def views(self) -> tuple[PodView, ...]:
        """Every pod's view, terminating ones included."""
        return tuple(pod.view for pod in self.pods)

    @property
    def raws(self) -> tuple[Obj, ...]:
        """Every pod as cached."""
        return tuple(pod.raw for pod in self.pods)

    def live(self) -> tuple[JobPod, ...]:
        """The pods not terminating: the ones a plan may still delete."""
        return tuple(pod for pod in self.pods if not pod.view.terminating)

    def names(self) -> frozenset[str]:
        """Every pod's name, terminating ones included: a terminating pod keeps its slot until
        it is gone."""
        return frozenset(pod.view.name for pod in self.pods)
