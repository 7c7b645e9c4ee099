"""The pure parts of ``bench.controller_scale``: the job both controllers run, and its states."""

from __future__ import annotations

from bench.controller_scale import baseline_objects, lifecycle_job
from bench.controller_scale_phases import _condition


def test_lifecycle_job_asks_for_running_pods_cleaned_without_grace() -> None:
    job = lifecycle_job("job-0")
    # training-operator's default is None: both controllers must be told the same.
    assert job["spec"]["runPolicy"] == {"cleanPodPolicy": "Running"}
    specs = job["spec"]["mxReplicaSpecs"]
    assert {name: spec["replicas"] for name, spec in specs.items()} == {
        "Scheduler": 1,
        "Server": 1,
        "Worker": 2,
    }
    for spec in specs.values():
        assert spec["template"]["spec"]["terminationGracePeriodSeconds"] == 0


def test_baseline_objects_carry_no_owner_and_no_finalizer() -> None:
    objects = baseline_objects("ns", 2)
    assert len(objects) == 2 * 8
    for _, body in objects:
        assert "ownerReferences" not in body["metadata"]
        assert "finalizers" not in body["metadata"]
        assert body["metadata"]["namespace"] == "ns"


def test_a_condition_counts_only_when_true() -> None:
    job = {
        "status": {
            "conditions": [
                {"type": "Running", "status": "False"},
                {"type": "Succeeded", "status": "True"},
            ]
        }
    }
    assert _condition(job, "Succeeded")
    assert not _condition(job, "Running")
    assert not _condition({}, "Running")
