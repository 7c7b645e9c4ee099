"""The integrations' declarations made real, the same way for every one of them.

Each integration says what it watches (controller/job/declaration.py); :func:`register` reads
every declaration once, when the controller is built, and for each :class:`~controller.job.
declaration.Watch` builds an :class:`~controller.runtime.informers.Informer` over the namespaces
the controller watches, whose events queue the job the object maps back to (:func:`route`); then
it binds the stores to the integration. The manager starts those informers with its own, and its
readiness waits for them all (controller/manager.py), knowing nothing of any one integration.

An optional resource (a CRD, an alpha API) the API server does not serve at start-up gets an
empty store and no informer: its writes then fail with the API server's own error and the job
is retried, until the controller is restarted once the resource is served.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from controller.job.declaration import Watch
from controller.job.hooks import Integration
from controller.runtime.client import ApiError, KubeClient
from controller.runtime.informers import Handler, Informer, InformerSettings, Obj
from controller.runtime.store import Store
from shared.spec import as_mapping

log = logging.getLogger(__name__)


def served(client: KubeClient, watch: Watch) -> bool:
    """Whether the API server serves ``watch``'s resource (one discovery GET)."""
    try:
        listing = client.request("GET", f"/apis/{watch.group}/{watch.version}")
    except ApiError:
        return False
    resources = as_mapping(listing).get("resources") or []
    return any(as_mapping(r).get("name") == watch.plural for r in resources)


def route(watch: Watch, *, queue: Callable[[str], None], jobs: Store) -> Handler:
    """The informer handler that queues the job an object of ``watch`` maps back to: a cached
    job, or, when the watch says so, a gone one too (:attr:`~controller.job.declaration.Watch.
    queues_gone_jobs`)."""

    def handle(event_type: str, obj: Obj, old: Obj | None) -> None:
        key = watch.job_of(obj)
        if key is not None and (watch.queues_gone_jobs or jobs.get(key) is not None):
            queue(key)

    return handle


def register(
    integrations: Sequence[Integration],
    *,
    client: KubeClient,
    namespaces: tuple[str, ...] | None,
    settings: InformerSettings,
    queue: Callable[[str], None],
    jobs: Store,
) -> list[Informer]:
    """Build the informers every integration declares, route their events to ``queue``, bind
    their stores to the integration; return the informers, for the manager to start.

    One resource is cached once: two integrations declaring the same one is a mistake of the
    code, refused here."""
    informers: list[Informer] = []
    declared: dict[str, str] = {}
    for integration in integrations:
        stores: dict[str, Store] = {}
        for watch in integration.declaration().watches:
            if watch.name in declared:
                raise ValueError(
                    f"{watch.name} is declared by {declared[watch.name]} and {integration.name}"
                )
            declared[watch.name] = integration.name
            informer = _informer(client, watch, namespaces=namespaces, settings=settings)
            if informer is None:
                stores[watch.name] = watch.empty_store()
                continue
            informer.add_handler(route(watch, queue=queue, jobs=jobs))
            informers.append(informer)
            stores[watch.name] = informer.store
        integration.bind(stores)
    return informers


def _informer(
    client: KubeClient,
    watch: Watch,
    *,
    namespaces: tuple[str, ...] | None,
    settings: InformerSettings,
) -> Informer | None:
    """``watch``'s informer, not started; None for an optional resource not served."""
    if watch.optional and not served(client, watch):
        log.warning("%s is not served: not cached (restart the controller once it is)",
                    watch.name)  # fmt: skip
        return None
    return Informer(
        client,
        name=watch.name,
        path_for=watch.path,
        namespaces=namespaces,
        label_selector=watch.label_selector,
        index_label=watch.index_label,
        transform=watch.transform,
        settings=settings,
    )
