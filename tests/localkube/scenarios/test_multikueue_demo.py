from __future__ import annotations

from localkube.scenarios.multikueue_demo import MULTIKUEUE, QUEUE, dispatched


def test_the_demo_job_is_queued_on_the_manager_and_handed_to_multikueue() -> None:
    job = {"metadata": {"name": "mx", "labels": {"team": "a"}}, "spec": {"mxReplicaSpecs": {}}}
    result = dispatched(job)
    assert result["metadata"]["labels"] == {"team": "a", "kueue.x-k8s.io/queue-name": QUEUE}
    assert result["spec"]["managedBy"] == MULTIKUEUE


def test_a_job_without_labels_gets_the_queue_label() -> None:
    assert dispatched({"metadata": {"name": "mx"}, "spec": {}})["metadata"]["labels"] == {
        "kueue.x-k8s.io/queue-name": QUEUE
    }
