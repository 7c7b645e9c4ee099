"""The integrations' declarations made real: an informer per declared watch, routed to the job
queue and bound to its integration, none for an optional resource not served
(controller/integrations/registration.py)."""

from __future__ import annotations

from typing import Any

import pytest

from controller.integrations.registration import register, route, served
from controller.job.declaration import Declaration, Stores, Watch
from controller.job.hooks import NoHooks
from controller.job.ownership import owner_reference
from controller.runtime.informers import InformerSettings
from controller.runtime.store import Store, object_key
from tests.controller.fakes import FakeApi, ScriptedWatchApi
from tests.controller.samples import job, view_of

BUILT_IN = Watch(group="example.com", version="v1", plural="things", job_of=object_key)
ADD_ON = Watch(group="addon.example.com", version="v1beta1", plural="groups", job_of=object_key,
               optional=True)  # fmt: skip
DISCOVERY = {"resources": [{"name": "groups"}, {"name": "queues"}]}
FAST = InformerSettings(retry_min=0.001, retry_max=0.002)


class Declaring(NoHooks):
    """An integration that declares ``watches`` and keeps the stores it is bound."""

    def __init__(self, *watches: Watch, name: str = "declaring") -> None:
        self.name = name
        self.watches = watches
        self.bound: list[Stores] = []

    def declaration(self) -> Declaration:
        return Declaration(watches=self.watches)

    def bind(self, stores: Stores) -> None:
        self.bound.append(stores)


def registered(api: Any, *integrations: Declaring, jobs: Store | None = None) -> tuple[
    list[Any], list[str]
]:  # fmt: skip
    queued: list[str] = []
    informers = register(integrations, client=api, namespaces=None, settings=FAST,
                         queue=queued.append, jobs=jobs or Store())  # fmt: skip
    return informers, queued


def test_a_resource_is_served_when_its_group_version_lists_it() -> None:
    api = FakeApi()
    assert not served(api, ADD_ON), "the group is not served at all"
    api.objects["/apis/addon.example.com/v1beta1"] = DISCOVERY
    assert served(api, ADD_ON)
    api.objects["/apis/addon.example.com/v1beta1"] = {"resources": [{"name": "queues"}]}
    assert not served(api, ADD_ON)


def test_each_declared_watch_gets_an_informer_not_started_and_its_store_is_bound() -> None:
    api = FakeApi()
    integration = Declaring(BUILT_IN)
    (informer,), _ = registered(api, integration)
    assert informer.name == "things.example.com" and not informer.alive()
    assert integration.bound == [{"things.example.com": informer.store}]
    assert api.requests == [], "a watch that is not optional is not asked about"


def test_an_optional_resource_not_served_gets_an_empty_store_and_no_informer() -> None:
    api = FakeApi()
    integration = Declaring(ADD_ON)
    informers, _ = registered(api, integration)
    assert informers == []
    (bound,) = integration.bound
    assert len(bound["groups.addon.example.com"]) == 0
    assert [r.path for r in api.requests] == ["/apis/addon.example.com/v1beta1"]


def test_an_integration_that_declares_nothing_is_bound_nothing() -> None:
    integration = Declaring()
    assert registered(FakeApi(), integration)[0] == [] and integration.bound == [{}]


def test_one_resource_declared_by_two_integrations_is_refused() -> None:
    with pytest.raises(ValueError, match=r"things.example.com is declared by one and two"):
        registered(FakeApi(), Declaring(BUILT_IN, name="one"), Declaring(BUILT_IN, name="two"))


def test_an_event_queues_a_cached_job_of_its_mapping_and_gone_ones_only_when_declared() -> None:
    jobs = Store()
    jobs.apply("ADDED", job())
    queued: list[str] = []
    obj = {"metadata": {"name": "mnist", "namespace": "ns"}}
    stray = {"metadata": {"name": "web", "namespace": "ns"}}
    route(BUILT_IN, queue=queued.append, jobs=jobs)("ADDED", obj, None)
    route(BUILT_IN, queue=queued.append, jobs=jobs)("DELETED", stray, stray)
    assert queued == ["ns/mnist"], "no job of the name: nothing to look at"
    gone_too = Watch(group="example.com", version="v1", plural="things", job_of=object_key,
                     queues_gone_jobs=True)  # fmt: skip
    route(gone_too, queue=queued.append, jobs=jobs)("DELETED", stray, stray)
    assert queued == ["ns/mnist", "ns/web"]
    nobodys = Watch(group="example.com", version="v1", plural="things", job_of=lambda o: None,
                    queues_gone_jobs=True)  # fmt: skip
    route(nobodys, queue=queued.append, jobs=jobs)("ADDED", obj, None)
    assert len(queued) == 2, "an object of no job's queues nothing"


def listing(*items: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"resourceVersion": "9"}, "items": list(items)}


def test_a_served_optional_resource_is_watched_and_its_changes_queue_their_jobs() -> None:
    own = {"metadata": {"name": "mnist", "namespace": "ns", "uid": "a", "resourceVersion": "5",
                        "ownerReferences": [owner_reference(view_of(job()))]}}  # fmt: skip
    users = {"metadata": {"name": "web", "namespace": "ns", "uid": "b", "resourceVersion": "6"}}
    api = ScriptedWatchApi(lists=[DISCOVERY, listing(own, users)], watches=[])
    jobs = Store()
    jobs.apply("ADDED", job())
    integration = Declaring(ADD_ON)
    (informer,), queued = registered(api, integration, jobs=jobs)
    api.on_exhausted = lambda: informer.stop(wait=False)
    informer.start()
    for thread in informer._threads:
        thread.join(timeout=5)
    assert queued == ["ns/mnist"]
    assert integration.bound[0]["groups.addon.example.com"].get("ns/web") == users
