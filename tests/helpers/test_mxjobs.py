"""tests.helpers.mxjobs: one keyword per thing a test varies, and nothing it did not ask for."""

from __future__ import annotations

from shared.defaults import apply_defaults
from tests.helpers.mxjobs import IMAGE, V1BETA1, container, mxjob, replica


def test_the_default_is_a_raw_distributed_mxtrain_job() -> None:
    mxnet = {"name": "mxnet", "image": IMAGE}
    assert mxjob() == {
        "apiVersion": "kubeflow.org/v1",
        "kind": "MXJob",
        "metadata": {"name": "mnist"},
        "spec": {
            "jobMode": "MXTrain",
            "mxReplicaSpecs": {
                rtype: {"replicas": count, "template": {"spec": {"containers": [mxnet]}}}
                for rtype, count in (("Scheduler", 1), ("Server", 1), ("Worker", 2))
            },
        },
    }


def test_a_count_takes_the_shared_options_and_a_replica_is_taken_as_it_is() -> None:
    own = replica(None, containers=[container("main", image="other")])
    found = mxjob(
        replicas={"Scheduler": 1, "Worker": own},
        command=["python", "t.py"],
        restart_policy="OnFailure",
        restart_scope="Replica",
        grace_seconds=5,
    )
    scheduler = found["spec"]["mxReplicaSpecs"]["Scheduler"]
    assert scheduler == {
        "replicas": 1,
        "restartPolicy": "OnFailure",  # no restartScope Replica: refused on a Scheduler
        "template": {
            "spec": {
                "containers": [{"name": "mxnet", "image": IMAGE, "command": ["python", "t.py"]}],
                "terminationGracePeriodSeconds": 5,
            }
        },
    }
    assert found["spec"]["mxReplicaSpecs"]["Worker"] == own


def test_none_leaves_a_field_out_and_spec_adds_fields_as_spelled() -> None:
    found = mxjob(None, api_version=V1BETA1, mode=None, replicas=None, spec={"backoffLimit": 2})
    assert found == {"apiVersion": V1BETA1, "kind": "MXJob", "spec": {"backoffLimit": 2}}


def test_a_defaulted_job_is_the_webhooks_and_its_status_is_kept() -> None:
    raw = mxjob(namespace="ns", uid="u", labels={"team": "a"}, run_policy={"suspend": True})
    stored = mxjob(
        namespace="ns",
        uid="u",
        labels={"team": "a"},
        run_policy={"suspend": True},
        status={"state": "Created"},
        defaulted=True,
    )
    assert stored == {**apply_defaults(raw), "status": {"state": "Created"}}


def test_each_call_makes_fresh_objects() -> None:
    shared = container(env=[{"name": "A", "value": "1"}])
    first, second = mxjob(replicas={"Worker": replica(containers=[shared])}), mxjob()
    first["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["env"] = []
    assert shared["env"] == [{"name": "A", "value": "1"}]
    assert second == mxjob()
