"""The caches of the integrations' children: one informer per kind, made when a kind is asked for.

The integrations ask for the store of each kind they make (:class:`ChildStores` is called with
a :class:`~controller.integrations.children.kind.ChildKind`): the budget and the network policy
when they are built, the gang once its scheduler is resolved at start-up, before the manager
starts the informers (:attr:`ChildStores.informers` are among its own). Each kind gets an
:class:`~controller.runtime.informers.Informer` over the namespaces the controller watches,
keeping :func:`~controller.integrations.children.kind.child_object`; every change of one of its
objects (a child written, drifted or deleted, a foreign object of a job's name come or gone)
tells ``on_change`` the object's ``namespace/name``, the key of the job of that name. A kind the
API server does not serve (a CRD not installed, an alpha API off) gets an empty store and no
informer: its writes then fail with the API server's own error, and the job is retried, as
before the caches. Built without a client (in tests), every kind gets an empty store, filled by
hand.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from controller.integrations.children.kind import ChildKind, child_object
from controller.runtime.client import ApiError, KubeClient
from controller.runtime.informers import Informer, InformerSettings
from controller.runtime.store import Obj, Store, object_key
from shared.spec import as_mapping

log = logging.getLogger(__name__)


def served(client: KubeClient, kind: ChildKind) -> bool:
    """Whether the API server serves ``kind`` (one discovery GET)."""
    try:
        listing = client.request("GET", f"/apis/{kind.group}/{kind.version}")
    except ApiError:
        return False
    resources = as_mapping(listing).get("resources") or []
    return any(as_mapping(r).get("name") == kind.plural for r in resources)


class ChildStores:
    """The store of each child kind (see the module docstring)."""

    def __init__(
        self,
        client: KubeClient | None = None,
        *,
        namespaces: tuple[str, ...] | None = None,
        settings: InformerSettings | None = None,
        on_change: Callable[[str], None] = lambda key: None,
    ) -> None:
        self.client = client
        self.namespaces = namespaces
        self.settings = settings
        self.on_change = on_change
        """Told ``namespace/name`` of every child that changed."""
        self._stores: dict[ChildKind, Store] = {}
        self._informers: list[Informer] = []
        self._started = False
        self._lock = threading.Lock()

    def __call__(self, kind: ChildKind) -> Store:
        """The store of ``kind``, its informer made on the first ask (and started at once when
        the others already are)."""
        with self._lock:
            store = self._stores.get(kind)
            if store is None:
                store = self._stores[kind] = self._watch(kind)
            return store

    def _watch(self, kind: ChildKind) -> Store:
        client = self.client
        if client is None:
            return Store(transform=child_object)
        if not kind.always_served and not served(client, kind):
            log.warning("%s is not served: not cached (restart the controller once it is)",
                        kind.resource)  # fmt: skip
            return Store(transform=child_object)
        informer = Informer(
            client,
            name=kind.resource,
            path_for=kind.path,
            namespaces=self.namespaces,
            transform=child_object,
            settings=self.settings,
        )
        informer.add_handler(self._changed)
        self._informers.append(informer)
        if self._started:
            informer.start()
        return informer.store

    def _changed(self, event_type: str, obj: Obj, old: Obj | None) -> None:
        self.on_change(object_key(obj))

    @property
    def informers(self) -> list[Informer]:
        with self._lock:
            return list(self._informers)

    def started(self) -> None:
        """The informers made so far were started (with the manager's own); those made from now
        on start when made."""
        with self._lock:
            self._started = True
