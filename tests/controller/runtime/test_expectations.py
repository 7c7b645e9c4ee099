"""Expectations: a job waits for its own creates and deletes to show up in the cache."""

from __future__ import annotations

from controller.runtime.expectations import Expectations


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_job_is_held_until_every_created_object_is_observed() -> None:
    expectations = Expectations()
    expectations.expect_creations("ns/j", "pods", ["j-worker-0", "j-worker-1"])
    expectations.expect_creations("ns/j", "services", ["j-worker-0"])
    assert not expectations.satisfied("ns/j")
    expectations.creation_observed("ns/j", "pods", "j-worker-0")
    expectations.creation_observed("ns/j", "services", "j-worker-0")
    assert expectations.outstanding("ns/j") == (1, 0)
    expectations.creation_observed("ns/j", "pods", "j-worker-1")
    assert expectations.satisfied("ns/j")


def test_an_event_for_another_object_does_not_satisfy_an_expectation() -> None:
    expectations = Expectations()
    expectations.expect_creations("ns/j", "pods", ["j-worker-0"])
    expectations.creation_observed("ns/j", "services", "j-worker-0")
    expectations.creation_observed("ns/other", "pods", "j-worker-0")
    assert not expectations.satisfied("ns/j")


def test_deletions_are_expected_by_uid() -> None:
    expectations = Expectations()
    expectations.expect_deletions("ns/j", "pods", ["uid-1"])
    expectations.deletion_observed("ns/j", "pods", "uid-2")
    assert not expectations.satisfied("ns/j")
    expectations.deletion_observed("ns/j", "pods", "uid-1")
    assert expectations.satisfied("ns/j")


def test_an_expectation_never_observed_expires() -> None:
    clock = Clock()
    expectations = Expectations(timeout=300, clock=clock)
    expectations.expect_creations("ns/j", "pods", ["j-worker-0"])
    clock.now = 299
    assert not expectations.satisfied("ns/j")
    clock.now = 300
    assert expectations.satisfied("ns/j")
    assert expectations.outstanding("ns/j") == (0, 0)


def test_forgetting_a_deleted_job_drops_its_expectations() -> None:
    expectations = Expectations()
    expectations.expect_deletions("ns/j", "services", ["uid-1"])
    expectations.forget("ns/j")
    assert expectations.satisfied("ns/j")
