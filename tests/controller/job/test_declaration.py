"""controller/job/declaration.py: what an integration watches and owns, as data."""

from __future__ import annotations

from controller.job.declaration import Declaration, Rule, Watch
from controller.runtime.informers import cached_object
from controller.runtime.store import object_key

THINGS = Watch(group="example.com", version="v1", plural="things", job_of=object_key,
               index_label="example.com/job-uid")  # fmt: skip


def test_a_rule_grants_each_group_resource_and_verb_it_names() -> None:
    rule = Rule(api_groups=("a", "b"), resources=("things",), verbs=("get", "list"))
    assert rule.grants() == {
        ("a", "things", "get"), ("a", "things", "list"),
        ("b", "things", "get"), ("b", "things", "list"),
    }  # fmt: skip


def test_a_declaration_grants_what_its_rules_grant() -> None:
    assert Declaration().grants() == frozenset()
    declared = Declaration(
        watches=(THINGS,),
        rules=(
            Rule(api_groups=("example.com",), resources=("things",), verbs=("list", "watch")),
            Rule(api_groups=("",), resources=("pods",), verbs=("get",)),
        ),
    )
    assert declared.grants() == {
        ("example.com", "things", "list"), ("example.com", "things", "watch"), ("", "pods", "get"),
    }  # fmt: skip


def test_a_watch_is_named_and_found_as_the_api_server_names_its_resource() -> None:
    assert THINGS.name == "things.example.com"
    assert THINGS.path() == "/apis/example.com/v1/things"
    assert THINGS.path("ns") == "/apis/example.com/v1/namespaces/ns/things"
    core = Watch(group="", version="v1", plural="configmaps", job_of=object_key)
    assert core.path("ns") == "/api/v1/namespaces/ns/configmaps"
    assert core.name == "configmaps", "the core group's resources are named alone"


def test_a_watch_caches_whole_objects_where_it_asks_for_nothing_else() -> None:
    assert THINGS.transform is cached_object
    assert not (THINGS.optional or THINGS.queues_gone_jobs) and THINGS.label_selector is None


def test_an_empty_store_is_shaped_as_the_informers() -> None:
    store = THINGS.empty_store()
    thing = {"metadata": {"name": "t", "namespace": "ns", "labels": {"example.com/job-uid": "u"},
                          "managedFields": [{}]}}  # fmt: skip
    store.apply("ADDED", thing)
    assert [obj["metadata"]["name"] for obj in store.by_index("ns", "u")] == ["t"]
    assert store.write_through({**thing, "spec": {}}), "written through, transformed"
    assert "managedFields" not in (store.get("ns/t") or {})["metadata"]
