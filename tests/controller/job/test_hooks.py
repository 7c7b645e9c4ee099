"""controller/job/hooks.py: what an integration answers at each point when it has nothing to do,
and how the integrations' preparations of a job's pods combine."""

from __future__ import annotations

from controller.job.declaration import NOTHING
from controller.job.hooks import READY, Integration, NoHooks, Preparation, combined
from controller.job.pods import JobPods
from controller.runtime.client import Conflict
from tests.controller.samples import job, view_of

FIRST = Conflict(409, "Conflict", "first")
SECOND = Conflict(409, "Conflict", "second")


def test_no_hooks_is_an_integration_that_declares_and_does_nothing() -> None:
    nothing: Integration = NoHooks()
    mnist = view_of(job())
    assert nothing.declaration() is NOTHING and NOTHING.watches == () == NOTHING.rules
    nothing.bind({})
    nothing.job_gone("ns", "mnist", uid=None)
    assert not nothing.takes_over(mnist)
    assert nothing.waits(mnist, JobPods()) is None and nothing.notices(mnist, JobPods()) == ()
    assert nothing.prepare_pods(mnist, labels={}) is READY


def test_ready_is_ready_without_errors() -> None:
    assert Preparation(ready=True, errors=()) == READY


def test_combined_is_ready_only_when_every_one_is_with_every_error_in_order() -> None:
    assert combined([]) == READY
    assert combined([READY, READY]) == READY
    failed_but_ready = Preparation(ready=True, errors=(FIRST,))
    held = Preparation(ready=False, errors=(SECOND,))
    both = combined([failed_but_ready, READY, held])
    assert both == Preparation(ready=False, errors=(FIRST, SECOND))
    assert combined([failed_but_ready]).ready, "an error alone holds no pod back"
    assert not combined([Preparation(ready=False), READY]).ready
