"""controller/job/view.py: a job's spec is read defaulted, whatever was stored."""

from __future__ import annotations

from controller.job.view import read_job
from shared.constants import DisruptionPolicy, RestartScope
from shared.defaults import apply_defaults
from tests.controller.samples import job, stored_before_the_new_defaults


def test_a_view_of_a_stored_job_alone_reads_its_spec_defaulted_without_the_env() -> None:
    stored = stored_before_the_new_defaults(job())
    for replica in stored["spec"]["mxReplicaSpecs"].values():
        replica["template"]["spec"]["containers"][0].pop("env", None)
    view = read_job(stored)
    assert {r.restart_scope for r in view.replicas} == {RestartScope.JOB}
    assert view.run_policy.disruption_policy is DisruptionPolicy.IGNORE
    assert view.defaulted == apply_defaults(stored, env=False)
    assert view.raw is stored


def test_a_view_given_the_defaulted_job_reads_that_one() -> None:
    stored = stored_before_the_new_defaults(job())
    defaulted = apply_defaults(stored)
    defaulted["spec"]["runPolicy"]["disruptionPolicy"] = "Count"
    view = read_job(stored, defaulted=defaulted)
    assert view.run_policy.disruption_policy is DisruptionPolicy.COUNT
    assert view.defaulted is defaulted
