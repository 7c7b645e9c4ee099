"""The caches of the integrations' children: one informer per kind, made when asked for, none for
a kind the API server does not serve (controller/integrations/children/stores.py)."""

from __future__ import annotations

from typing import Any

from controller.integrations.children.kind import ChildKind
from controller.integrations.children.stores import ChildStores, served
from controller.job.ownership import owner_reference
from controller.runtime.informers import InformerSettings
from tests.controller.fakes import FakeApi, ScriptedWatchApi
from tests.controller.samples import job, view_of

BUILT_IN = ChildKind(kind="Thing", group="example.com", version="v1", plural="things",
                     pods_need_it=False, always_served=True)  # fmt: skip
ADD_ON = ChildKind(kind="Group", group="addon.example.com", version="v1beta1", plural="groups",
                   pods_need_it=True)  # fmt: skip
DISCOVERY = {"resources": [{"name": "groups"}, {"name": "queues"}]}


def test_without_a_client_every_kind_has_one_empty_store_and_no_informer() -> None:
    stores = ChildStores()
    assert stores(BUILT_IN) is stores(BUILT_IN)
    assert stores(BUILT_IN) is not stores(ADD_ON)
    assert len(stores(BUILT_IN)) == 0 and stores.informers == []


def test_a_kind_is_served_when_its_group_version_lists_it() -> None:
    api = FakeApi()
    assert not served(api, ADD_ON), "the group is not served at all"
    api.objects["/apis/addon.example.com/v1beta1"] = DISCOVERY
    assert served(api, ADD_ON)
    api.objects["/apis/addon.example.com/v1beta1"] = {"resources": [{"name": "queues"}]}
    assert not served(api, ADD_ON)


def test_a_kind_not_served_gets_an_empty_store_and_no_watch() -> None:
    api = FakeApi()
    stores = ChildStores(api)
    assert len(stores(ADD_ON)) == 0
    assert stores.informers == []
    assert [r.path for r in api.requests] == ["/apis/addon.example.com/v1beta1"]


def test_a_built_in_kind_gets_its_informer_without_asking_and_starts_only_when_told() -> None:
    api = FakeApi()
    stores = ChildStores(api)
    store = stores(BUILT_IN)
    (informer,) = stores.informers
    assert informer.store is store and informer.name == "things.example.com"
    assert api.requests == [] and not informer.alive()


def listing(*items: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"resourceVersion": "9"}, "items": list(items)}


def test_a_kind_asked_for_once_the_informers_run_starts_watching_and_names_the_jobs() -> None:
    own = {"metadata": {"name": "mnist", "namespace": "ns", "uid": "a", "resourceVersion": "5",
                        "ownerReferences": [owner_reference(view_of(job()))]},
           "spec": {"size": 2}}  # fmt: skip
    users = {"metadata": {"name": "web", "namespace": "ns", "uid": "b", "resourceVersion": "6"},
             "spec": {"size": 1}}  # fmt: skip
    api = ScriptedWatchApi(lists=[DISCOVERY, listing(own, users)], watches=[])
    changed: list[str] = []
    stores = ChildStores(api, settings=InformerSettings(retry_min=0.001, retry_max=0.002),
                         on_change=changed.append)  # fmt: skip
    stores.started()
    store = stores(ADD_ON)
    (informer,) = stores.informers
    api.on_exhausted = lambda: informer.stop(wait=False)
    for thread in informer._threads:
        thread.join(timeout=5)
    assert sorted(changed) == ["ns/mnist", "ns/web"]
    assert store.get("ns/mnist") == own
    assert store.get("ns/web") == {"metadata": {"name": "web", "namespace": "ns", "uid": "b",
                                                "resourceVersion": "6"}}  # fmt: skip
