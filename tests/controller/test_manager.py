"""controller.manager: the caches of the integrations' children, and what their changes queue
(in-memory fake API; nothing started)."""

from __future__ import annotations

from controller.manager import Controller
from controller.runtime.settings import from_args
from tests.controller.fakes import FakeApi
from tests.controller.samples import job


def test_the_budgets_are_cached_always_and_the_policies_only_with_their_flag() -> None:
    plain = Controller(from_args([], environ={}), client=FakeApi())
    names = [informer.name for informer in plain.informers]
    assert "poddisruptionbudgets.policy" in names
    assert "networkpolicies.networking.k8s.io" not in names
    hardened = Controller(from_args(["--job-network-policy"], environ={}), client=FakeApi())
    assert "networkpolicies.networking.k8s.io" in [i.name for i in hardened.informers]


def test_a_child_change_queues_the_job_of_its_name_when_there_is_one() -> None:
    controller = Controller(from_args([], environ={}), client=FakeApi())
    controller.children.on_change("ns/mnist")
    assert controller.queue.depth() == 0, "no such job: nothing to look at"
    controller.jobs.store.apply("ADDED", job())
    controller.children.on_change("ns/mnist")
    assert controller.queue.get(timeout=1) == "ns/mnist"
    controller.queue.shutdown()
