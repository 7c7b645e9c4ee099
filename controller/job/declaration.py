"""What an integration watches and owns, declared as data (pure).

An integration (controller/job/hooks.py) caches objects of kinds of its own (Kueue's Workloads;
the budgets, policies and PodGroups it makes per job) and writes them. It says so in one
:class:`Declaration`, and controller/integrations/registration.py does the rest the same way for
every integration, with nothing written per integration in the manager: an informer per
:class:`Watch` over the namespaces the controller watches, each event of one queueing the job
its object maps back to (:attr:`Watch.job_of`), readiness waiting for its cache, and its store
handed back to the integration (:meth:`~controller.job.hooks.Integration.bind`).

The :class:`Rule` s are the RBAC the integration needs to do all that:
tests/controller/integrations/test_chosen.py holds the shipped manifests (manifests/base/rbac.yaml
and the install components that turn an integration on) and the Helm chart's templates to
granting every one, so an integration whose rules were not added there fails a unit test
instead of a real cluster's request.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from controller.runtime.client import resource_path
from controller.runtime.informers import Transform, cached_object
from controller.runtime.store import Store

JobOf = Callable[[Mapping[str, Any]], str | None]
"""An object → the ``namespace/name`` queue key of the MXJob it stands for (None: no job's)."""


@dataclass(frozen=True, kw_only=True)
class Rule:
    """One RBAC rule an integration needs, as a ClusterRole's ``rules`` write it."""

    api_groups: tuple[str, ...]
    resources: tuple[str, ...]
    verbs: tuple[str, ...]

    def grants(self) -> frozenset[tuple[str, str, str]]:
        """Every ``(apiGroup, resource, verb)`` the rule names: what a shipped rule must cover."""
        return frozenset(
            (group, resource, verb)
            for group in self.api_groups
            for resource in self.resources
            for verb in self.verbs
        )


@dataclass(frozen=True, kw_only=True)
class Watch:
    """One resource an integration caches: listed and watched by an informer the manager builds
    (controller/runtime/informers.py), in every namespace the controller watches."""

    group: str
    version: str
    plural: str
    job_of: JobOf
    """The job an object's change concerns: its event queues that job's reconcile."""
    queues_gone_jobs: bool = False
    """True: an event queues its job even when the job cache does not hold it, so that the
    reconcile of a gone job lets go of the object (a Kueue Workload keeps a finalizer until
    then). False: only a cached job is queued (a cluster has many budgets and policies of its
    own; one named like no job wakes nothing)."""
    label_selector: str | None = None
    """Only the objects carrying these labels are listed and watched."""
    index_label: str | None = None
    """The store's index (:meth:`~controller.runtime.store.Store.by_index`)."""
    transform: Transform = cached_object
    """What the cache keeps of each object."""
    optional: bool = False
    """True: watched only when the API server serves it at start-up (a CRD, an alpha API);
    otherwise the store stays empty, and the integration's writes fail with the API server's
    own error until the controller is restarted. False: watched regardless (a built-in API, or
    one the controller does not start without: Kueue's Workloads, controller/main.py)."""

    @property
    def name(self) -> str:
        """``plural.group`` (``plural`` alone in the core group), as RBAC and the API server
        name it: the informer's name (logs, thread names) and the store's key when bound."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def path(self, namespace: str | None = None) -> str:
        """The collection, in all namespaces or one: the informer's ``path_for``."""
        return resource_path(
            group=self.group, version=self.version, plural=self.plural, namespace=namespace
        )

    def empty_store(self) -> Store:
        """A store shaped as the informer's: what an integration reads before the manager binds
        the real one (in unit tests, filled by hand), or for a resource not served."""
        return Store(index_label=self.index_label, transform=self.transform)


Stores = Mapping[str, Store]
"""The store of each declared watch, by :attr:`Watch.name`: what the manager binds."""


@dataclass(frozen=True, kw_only=True)
class Declaration:
    """Everything an integration watches and owns."""

    watches: tuple[Watch, ...] = ()
    rules: tuple[Rule, ...] = ()

    def grants(self) -> frozenset[tuple[str, str, str]]:
        """Every ``(apiGroup, resource, verb)`` of :attr:`rules`."""
        granted: set[tuple[str, str, str]] = set()
        for rule in self.rules:
            granted |= rule.grants()
        return frozenset(granted)


NOTHING: Final = Declaration()
"""The declaration of an integration that caches and writes nothing of its own."""
