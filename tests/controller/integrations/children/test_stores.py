"""The caches of the kinds an integration makes, and the shared path of each over its cache: an
empty store per kind until the manager binds its informers' (controller/integrations/children/
stores.py)."""

from __future__ import annotations

from controller.integrations.children.kind import ChildKind
from controller.integrations.children.stores import ChildStores
from controller.runtime.store import Store
from tests.controller.fakes import FakeApi

BUILT_IN = ChildKind(kind="Thing", group="example.com", version="v1", plural="things",
                     pods_need_it=False, always_served=True)  # fmt: skip
ADD_ON = ChildKind(kind="Group", group="addon.example.com", version="v1beta1", plural="groups",
                   pods_need_it=True)  # fmt: skip


def test_before_binding_every_kind_has_one_empty_store_of_its_own() -> None:
    stores = ChildStores(FakeApi())
    assert stores(BUILT_IN) is stores(BUILT_IN)
    assert stores(BUILT_IN) is not stores(ADD_ON)
    assert len(stores(BUILT_IN)) == 0


def test_the_shared_path_of_a_kind_is_made_once_over_its_store() -> None:
    stores = ChildStores(FakeApi())
    owned = stores.owned(ADD_ON)
    assert stores.owned(ADD_ON) is owned and owned.store is stores(ADD_ON)
    assert owned.kind == ADD_ON and stores.owned_so_far() == [owned]


def test_bound_stores_replace_the_empty_ones_in_the_paths_made_already_too() -> None:
    stores = ChildStores(FakeApi())
    early = stores.owned(ADD_ON)
    bound = {ADD_ON.watch.name: Store(), BUILT_IN.watch.name: Store()}
    stores.bind(bound)
    assert early.store is bound[ADD_ON.watch.name] is stores(ADD_ON)
    assert stores.owned(BUILT_IN).store is bound[BUILT_IN.watch.name]
