"""The caches of the kinds an integration makes, and the shared path of each over its cache.

An integration that makes objects per job declares the cache of each kind it makes
(:attr:`~controller.integrations.children.kind.ChildKind.watch`, in its declaration:
controller/job/declaration.py); the manager builds the informers and binds their stores
(controller/integrations/registration.py). :class:`ChildStores` keeps them for the integration,
by kind, and makes the shared path of each kind over its cache
(:class:`~controller.integrations.children.ensure.OwnedChildren`). Until the stores are bound
(in unit tests, which fill them by hand), and for a kind the integration did not declare, a kind
has an empty store of its own: its objects are then found by the one uncached read of the
shared path, after a create that meets one.
"""

from __future__ import annotations

import threading

from controller.integrations.children.ensure import OwnedChildren
from controller.integrations.children.kind import ChildKind
from controller.job.declaration import Stores
from controller.runtime.client import KubeClient
from controller.runtime.store import Store


class ChildStores:
    """The store and the shared path of each kind an integration makes (see the module
    docstring)."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client
        self._stores: dict[str, Store] = {}
        """By the kind's watch name (:attr:`~controller.job.declaration.Watch.name`)."""
        self._owned: dict[ChildKind, OwnedChildren] = {}
        self._lock = threading.Lock()

    def __call__(self, kind: ChildKind) -> Store:
        """The store of ``kind``: the bound one, else an empty one, made on the first ask."""
        watch = kind.watch
        with self._lock:
            return self._stores.setdefault(watch.name, watch.empty_store())

    def owned(self, kind: ChildKind) -> OwnedChildren:
        """The shared path of ``kind``, over its store (made on the first ask)."""
        with self._lock:
            found = self._owned.get(kind)
        if found is not None:
            return found
        made = OwnedChildren(self.client, kind=kind, store=self(kind))
        with self._lock:
            return self._owned.setdefault(kind, made)

    def owned_so_far(self) -> list[OwnedChildren]:
        """The shared paths made so far (a gone job is forgotten by each)."""
        with self._lock:
            return list(self._owned.values())

    def bind(self, stores: Stores) -> None:
        """The stores the manager's informers fill, by watch name: they replace the empty ones,
        in the shared paths made already too."""
        with self._lock:
            self._stores.update(stores)
            for kind, owned in self._owned.items():
                owned.store = self._stores.get(kind.watch.name, owned.store)
