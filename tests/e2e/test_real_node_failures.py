"""The failures a job's own pods meet on a real node: an image that cannot be pulled, a Secret
that is missing until someone creates it, and the kernel's OOM killer.

Each job runs as installed by the session (the operator's images on kubelet and containerd) in
a namespace of its own, while :class:`~tests.helpers.pod_creations.PodCreations` records every
pod made, so each test also shows that no pod was made twice for one attempt. The figures reach
docs/explanation/recovery.md through the ``figures`` fixture (``make bench-recovery``).
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from localkube.base.api import Api
from tests.e2e.admission_traffic import single_worker_job
from tests.e2e.failing_jobs import (
    OOM_CASE,
    UNPULLABLE,
    UNPULLABLE_CASE,
    condition,
    create,
    events_of,
    mxjob,
    oom_job,
    unpullable_job,
)
from tests.e2e.real_node_fixtures import InstalledCluster, namespace_for, remove_namespace
from tests.helpers.figures import Figures
from tests.helpers.pod_creations import PodCreations
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.timeout(900)

TIMEOUT_ANNOTATION = "mxjob-operator.kubeflow.org/pod-start-timeout-seconds"


def finished(api: Api, namespace: str, name: str, *, timeout: float) -> dict[str, Any]:
    return wait_for(
        f"MXJob {name} to finish",
        lambda: mxjob(api, namespace, name),
        lambda job: job.get("status", {}).get("state") in ("Succeeded", "Failed"),
        timeout=timeout,
    )


def test_an_image_that_cannot_be_pulled_is_named_at_once_and_ends_the_job_at_its_timeout(
    real_cluster: InstalledCluster, figures: Figures
) -> None:
    api, namespace = real_cluster.api, namespace_for(real_cluster, "fail-pull")
    creations = PodCreations(api, namespace)
    try:
        job = unpullable_job("pull")
        job["metadata"]["annotations"] = {TIMEOUT_ANNOTATION: "40"}
        created = create(real_cluster, namespace, job)
        said = wait_for(
            "the Running condition to name the pull error",
            lambda: condition(mxjob(api, namespace, "pull"), "Running"),
            lambda c: c.get("reason") in ("ErrImagePull", "ImagePullBackOff"), timeout=60,
        )  # fmt: skip
        seconds_to_say = time.monotonic() - created
        assert said["status"] == "False"
        assert "pod pull-worker-0 cannot start its container mxnet" in said["message"], said
        assert UNPULLABLE in said["message"], said
        # The controller writes Events from a queue of their own, a moment after the status.
        wait_for(
            "a Warning Event naming the pod and the image",
            lambda: events_of(api, namespace, "pull"),
            lambda events: any("pull-worker-0" in e and UNPULLABLE in e for e in events),
            timeout=30,
        )
        final = finished(api, namespace, "pull", timeout=120)
        seconds_to_fail = time.monotonic() - created
    finally:
        creations.stop()
    failed = condition(final, "Failed")
    assert final["status"]["state"] == "Failed" and failed["reason"] == "PodStartTimeout", final
    assert "the pod start timeout is 40 s" in failed["message"]
    assert final["status"].get("restartCount", 0) == 0
    # creationTimestamp has whole seconds, and clocks differ: the timeout may end before 40 s
    # of ours, by about a second.
    assert 38 <= seconds_to_fail < 90, seconds_to_fail
    assert [name for name, _ in creations.seen] == ["pull-worker-0"]
    remove_namespace(real_cluster, namespace)
    figures.record(
        table="node", case=UNPULLABLE_CASE, named_after_s=round(seconds_to_say, 1),
        named_as=said["reason"], failed_after_s=round(seconds_to_fail, 1),
        failed_reason="PodStartTimeout", pods_made=1, restarts=0,
    )  # fmt: skip


def test_a_secret_created_late_lets_the_waiting_job_go_on_to_succeed(
    real_cluster: InstalledCluster, figures: Figures
) -> None:
    api, namespace = real_cluster.api, namespace_for(real_cluster, "fail-secret")
    creations = PodCreations(api, namespace)
    try:
        image = real_cluster.cluster.images.examples.ref
        check = "import os, sys; sys.exit(os.environ['TOKEN'] != 'ok')"
        job = single_worker_job("late", image, ["python", "-c", check])
        container = job["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
        container["env"] = [{"name": "TOKEN", "valueFrom": {
            "secretKeyRef": {"name": "late-token", "key": "token"}}}]  # fmt: skip
        created = create(real_cluster, namespace, job)
        said = wait_for(
            "the Running condition to name the missing Secret",
            lambda: condition(mxjob(api, namespace, "late"), "Running"),
            lambda c: c.get("reason") == "CreateContainerConfigError", timeout=60,
        )  # fmt: skip
        seconds_to_say = time.monotonic() - created
        assert 'secret "late-token" not found' in said["message"], said
        real_cluster.plane.kubectl(
            "create", "secret", "generic", "late-token", "-n", namespace, "--from-literal=token=ok"
        )
        final = finished(api, namespace, "late", timeout=120)
        seconds_to_succeed = time.monotonic() - created
    finally:
        creations.stop()
    assert final["status"]["state"] == "Succeeded", final["status"]
    assert final["status"].get("restartCount", 0) == 0
    assert [name for name, _ in creations.seen] == ["late-worker-0"]
    remove_namespace(real_cluster, namespace)
    figures.record(
        table="node", case="a Secret the pod reads is missing, then created",
        named_after_s=round(seconds_to_say, 1), named_as="CreateContainerConfigError",
        succeeded_after_s=round(seconds_to_succeed, 1), pods_made=1, restarts=0,
    )  # fmt: skip


def test_a_worker_killed_by_the_oom_killer_is_restarted_then_fails_the_job_naming_it(
    real_cluster: InstalledCluster, figures: Figures
) -> None:
    api, namespace = real_cluster.api, namespace_for(real_cluster, "fail-oom")
    creations = PodCreations(api, namespace)
    try:
        image = real_cluster.cluster.images.examples.ref
        job = oom_job("oom", image, backoff_limit=1)
        created = create(real_cluster, namespace, job)
        final = finished(api, namespace, "oom", timeout=180)
        seconds = time.monotonic() - created
    finally:
        creations.stop()
    failed = condition(final, "Failed")
    assert final["status"]["state"] == "Failed", final["status"]
    assert failed["reason"] == "BackoffLimitExceeded", failed
    assert "exited with code 137" in failed["message"] and "OOMKilled" in failed["message"]
    assert final["status"]["restartCount"] == 1
    wait_for(
        "a Warning Event naming the OOM kill and the restart",
        lambda: events_of(api, namespace, "oom"),
        lambda events: any(
            "OOMKilled" in e and "retryable, restarting the whole job" in e for e in events
        ),
        timeout=30,
    )
    made = sorted(name for name, _ in creations.seen)
    assert made == ["oom-worker-0", "oom-worker-0"], made  # one pod per attempt, 2 attempts
    assert len({uid for _, uid in creations.seen}) == 2
    remove_namespace(real_cluster, namespace)
    figures.record(
        table="node", case=OOM_CASE, restarts=1, failed_after_s=round(seconds, 1),
        failed_reason="BackoffLimitExceeded", pods_made=2,
    )  # fmt: skip
