"""Leader election on a Lease: one leader, takeover after expiry, release, loss."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from controller.runtime.client import Conflict, leases_path
from controller.runtime.election import ElectionSettings, LeaderElector
from controller.runtime.settings import from_args
from tests.controller.fakes import FakeApi

LEASE = leases_path("ns", "mxjob-controller")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def elector(
    api: FakeApi, identity: str, clock: Callable[[], float] | None = None, **timing: float
) -> LeaderElector:
    settings = ElectionSettings(
        namespace="ns",
        identity=identity,
        lease_duration=timing.get("lease", 15),
        renew_deadline=timing.get("renew", 10),
        retry_period=timing.get("retry", 2),
    )
    return LeaderElector(api, settings, clock=clock or Clock())


def holder(api: FakeApi) -> str | None:
    found = api.objects[LEASE]["spec"].get("holderIdentity")
    return str(found) if found else None


def test_the_first_candidate_creates_the_lease_and_leads() -> None:
    api = FakeApi()
    assert elector(api, "a").try_acquire_or_renew()
    spec = api.objects[LEASE]["spec"]
    assert spec["holderIdentity"] == "a" and spec["leaseDurationSeconds"] == 15
    assert spec["renewTime"].endswith("Z")


def test_a_renewed_lease_is_not_taken_and_an_expired_one_is() -> None:
    api = FakeApi()
    clock_b = Clock()
    a, b = elector(api, "a"), elector(api, "b", clock_b)
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()
    clock_b.now += 10
    assert a.try_acquire_or_renew()  # a renews: b sees the record change and waits again
    assert not b.try_acquire_or_renew()
    clock_b.now += 14.9
    assert not b.try_acquire_or_renew()
    clock_b.now += 0.2  # 15 s on b's own clock without a renewal
    assert b.try_acquire_or_renew()
    assert holder(api) == "b"
    assert api.objects[LEASE]["spec"]["leaseTransitions"] == 1
    assert not a.try_acquire_or_renew()  # b renews now: a must wait for it to expire


def test_a_restarted_process_frees_its_predecessors_lease_for_the_standby() -> None:
    """A restarted container keeps its pod name as identity, and its predecessor is dead: the
    Lease it held is released at once, for the standby to take without waiting it out."""
    api = FakeApi()
    assert elector(api, "pod-a").try_acquire_or_renew()
    standby = elector(api, "pod-b")
    assert not standby.try_acquire_or_renew()  # a live-looking holder: wait
    clock = Clock()
    restarted = elector(api, "pod-a", clock)
    assert not restarted.try_acquire_or_renew()
    assert holder(api) is None
    for _ in range(2):  # its next attempts: the released Lease is left to the others
        clock.now += 2
        assert not restarted.try_acquire_or_renew()
    assert standby.try_acquire_or_renew()  # well before the 15 s lease duration
    assert holder(api) == "pod-b"
    assert api.objects[LEASE]["spec"]["leaseTransitions"] == 1
    clock.now += 10
    assert not restarted.try_acquire_or_renew()  # the standby renews: a live holder
    assert holder(api) == "pod-b"


def test_a_restarted_process_alone_takes_its_predecessors_lease_after_three_retries() -> None:
    api = FakeApi()
    assert elector(api, "pod-a").try_acquire_or_renew()
    clock = Clock()
    restarted = elector(api, "pod-a", clock)
    assert not restarted.try_acquire_or_renew()
    clock.now += 5.9
    assert not restarted.try_acquire_or_renew()
    clock.now += 0.2
    assert restarted.try_acquire_or_renew()
    assert holder(api) == "pod-a"
    clock.now += 1
    assert restarted.try_acquire_or_renew()  # now its own: renewed at once
    assert api.objects[LEASE]["spec"]["leaseTransitions"] == 1


def test_a_lost_race_to_release_the_predecessors_lease_changes_nothing() -> None:
    api = FakeApi()
    assert elector(api, "pod-a").try_acquire_or_renew()
    restarted = elector(api, "pod-a")
    api.fail_next[("PUT", LEASE)] = Conflict(409, "Conflict", {"reason": "Conflict"})
    assert not restarted.try_acquire_or_renew()
    assert holder(api) == "pod-a"


def test_a_lost_race_for_the_lease_is_a_failed_attempt() -> None:
    api = FakeApi()
    a = elector(api, "a")
    assert a.try_acquire_or_renew()
    api.fail_next[("PUT", LEASE)] = Conflict(409, "Conflict", {"reason": "Conflict"})
    assert not a.try_acquire_or_renew()


def test_a_released_lease_is_taken_at_once() -> None:
    api = FakeApi()
    a, b = elector(api, "a"), elector(api, "b")
    stop = threading.Event()
    # Leading, then asked to stop at once: run() returns still holding the lease.
    a.run(on_started_leading=stop.set, on_stopped_leading=lambda: None, stop=stop)
    assert holder(api) == "a"
    a.release()
    assert holder(api) is None
    assert b.try_acquire_or_renew() and holder(api) == "b"


def test_the_leader_that_cannot_renew_stops_leading() -> None:
    api = FakeApi()
    a = elector(api, "a", time.monotonic, lease=0.3, renew=0.1, retry=0.02)
    started, stopped = threading.Event(), threading.Event()

    def take_over() -> None:
        started.set()
        api.objects[LEASE]["spec"]["holderIdentity"] = "intruder"

    a.run(on_started_leading=take_over, on_stopped_leading=stopped.set, stop=threading.Event())
    assert started.is_set() and stopped.is_set()
    assert not a.is_leader


def test_timings_must_nest() -> None:
    with pytest.raises(ValueError, match="retry_period < renew_deadline < lease_duration"):
        ElectionSettings(namespace="ns", identity="a", lease_duration=5, renew_deadline=6)


def test_the_election_is_the_one_the_process_flags_ask_for() -> None:
    settings = from_args(
        ["--lease-namespace=ops", "--lease-name=mine", "--identity=me", "--lease-duration=30"],
        environ={},
    )
    election = ElectionSettings.of(settings)
    assert (election.namespace, election.name, election.identity) == ("ops", "mine", "me")
    assert (election.lease_duration, election.renew_deadline, election.retry_period) == (
        30.0, settings.renew_deadline, settings.retry_period,
    )  # fmt: skip
