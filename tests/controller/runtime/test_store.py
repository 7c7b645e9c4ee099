"""controller/runtime/store.py: the cache's index, and the rules that keep it right under races
(a late event never undoes a write-through, a deleted object is never put back)."""

from __future__ import annotations

from controller.runtime.store import DELETED, Store, object_key
from tests.controller.runtime.cache_samples import obj


def test_an_object_is_keyed_by_namespace_and_name() -> None:
    assert object_key(obj("a", "1")) == "ns/a"
    assert object_key({"metadata": {"name": "node-1"}}) == "node-1"  # cluster-scoped


def test_the_store_indexes_by_label_and_follows_relabels() -> None:
    store = Store(index_label="job")
    store.apply("ADDED", obj("a", "1", job="x"))
    store.apply("ADDED", obj("b", "1", job="x"))
    store.apply("MODIFIED", obj("b", "2", job="y"))
    assert [o["metadata"]["name"] for o in store.by_index("ns", "x")] == ["a"]
    assert [o["metadata"]["name"] for o in store.by_index("ns", "y")] == ["b"]


def test_a_late_delete_of_an_old_object_keeps_its_same_named_successor() -> None:
    store = Store()
    store.apply("ADDED", obj("a", "5", uid="new"))
    changed, _ = store.apply(DELETED, obj("a", "3", uid="old"))
    assert not changed and store.get("ns/a") is not None


def test_a_write_through_is_not_undone_by_an_older_event() -> None:
    store = Store()
    store.put_if_newer(obj("a", "20"))
    changed, _ = store.apply("MODIFIED", obj("a", "19"))
    assert not changed
    assert store.get("ns/a")["metadata"]["resourceVersion"] == "20"  # type: ignore[index]


def test_a_write_through_does_not_bring_back_an_object_deleted_meanwhile() -> None:
    store = Store()
    store.apply("ADDED", obj("a", "10"))
    store.apply(DELETED, obj("a", "21"))
    assert not store.write_through(obj("a", "20"))
    assert store.get("ns/a") is None


def test_a_write_through_replaces_the_cached_object_with_the_newer_one() -> None:
    store = Store()
    store.apply("ADDED", obj("a", "10"))
    assert store.write_through(obj("a", "20"))
    assert not store.write_through(obj("a", "15"))
    assert store.get("ns/a")["metadata"]["resourceVersion"] == "20"  # type: ignore[index]
    assert not store.write_through(obj("a", "30", uid="other"))
