"""controller/job/memory.py: every job is read defaulted, once per spec generation."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from controller.job import memory
from controller.job.memory import JobMemory
from shared.constants import CleanPodPolicy, DisruptionPolicy, RestartScope
from shared.defaults import apply_defaults
from tests.controller.samples import job, stored_before_the_new_defaults

KEY = "ns/mnist"
TUNE = {"TunerTracker": 1, "TunerServer": 2, "Tuner": 1}


@pytest.mark.parametrize(
    ("stored", "scope"),
    [
        (stored_before_the_new_defaults(job()), RestartScope.JOB),
        (stored_before_the_new_defaults(job(mode="MXTune", replicas=TUNE)), RestartScope.REPLICA),
    ],
    ids=["train", "tune"],
)
def test_a_job_stored_before_the_new_defaults_reads_with_them(
    stored: dict[str, Any], scope: RestartScope
) -> None:
    before = copy.deepcopy(stored)
    view = JobMemory().view(KEY, stored)
    assert {r.restart_scope for r in view.replicas} == {scope}
    assert view.run_policy.disruption_policy is DisruptionPolicy.IGNORE
    assert view.violations == ()
    assert view.defaulted == apply_defaults(stored)  # what pods are built from
    assert view.raw is stored and stored == before  # the stored job is not touched


def test_a_job_is_defaulted_once_per_spec_generation(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []

    def counting(found: Any, *, env: bool = True) -> dict[str, Any]:
        calls.append(1)
        return apply_defaults(found, env=env)

    monkeypatch.setattr(memory, "apply_defaults", counting)
    remembered = JobMemory()
    stored = stored_before_the_new_defaults(job())
    first = remembered.view(KEY, stored)
    with_status = {**stored, "status": {"state": "Running"}}  # a status change: same generation
    second = remembered.view(KEY, with_status)
    assert len(calls) == 1
    assert second.replicas == first.replicas and second.status == {"state": "Running"}
    scaled = copy.deepcopy(stored)
    scaled["metadata"]["generation"] = 2
    remembered.view(KEY, scaled)
    assert len(calls) == 2


def test_a_job_over_the_replica_total_gets_every_default_but_the_env_and_runs_no_replica() -> None:
    stored = stored_before_the_new_defaults(job())
    stored["spec"]["mxReplicaSpecs"]["Worker"]["replicas"] = 2**31 - 1
    for replica in stored["spec"]["mxReplicaSpecs"].values():
        replica["template"]["spec"]["containers"][0].pop("env", None)
    view = JobMemory().view(KEY, stored)
    assert view.violations and "at most 1000 replicas" in view.violations[0]
    assert view.replicas == ()
    assert view.run_policy.disruption_policy is DisruptionPolicy.IGNORE
    worker = view.defaulted["spec"]["mxReplicaSpecs"]["Worker"]
    assert worker["restartScope"] == RestartScope.JOB.value
    assert "env" not in worker["template"]["spec"]["containers"][0]


def test_a_job_training_operator_stored_with_values_we_refuse_is_read_to_be_failed() -> None:
    """v1.8.1's CRD has no enums: its stored job may say restartPolicy OnExitCode or
    cleanPodPolicy Sometimes. The controller reads it without a fallback in the readers
    (shared/spec.py): its invalid values as unset, none of its replicas."""
    stored = stored_before_the_new_defaults(job())
    stored["spec"]["mxReplicaSpecs"]["Worker"]["restartPolicy"] = "OnExitCode"
    stored["spec"]["runPolicy"] = {"cleanPodPolicy": "Sometimes", "backoffLimit": -1}
    view = JobMemory().view(KEY, stored)
    assert [v.split(":")[0] for v in view.violations] == [
        "spec.mxReplicaSpecs.Worker.restartPolicy",
        "spec.runPolicy.backoffLimit",
        "spec.runPolicy.cleanPodPolicy",
    ]
    assert view.replicas == ()
    assert view.run_policy.clean_pod_policy is CleanPodPolicy.RUNNING
    assert view.run_policy.backoff_limit == 6


def test_a_deleted_jobs_uid_is_kept_until_taken_once_and_outlives_forgetting() -> None:
    remembered = JobMemory()
    assert remembered.take_gone(KEY) is None
    remembered.remember_gone(KEY, "job-uid")
    remembered.forget(KEY)
    assert remembered.take_gone(KEY) == "job-uid"
    assert remembered.take_gone(KEY) is None
