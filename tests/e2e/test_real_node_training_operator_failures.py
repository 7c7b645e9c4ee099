"""The same failing jobs under training-operator v1.8.1, on the same real node, side by side.

training-operator v1.8.1 (``localkube.thirdparty.training_operator``: built from the Go module
proxy) runs beside this operator on the session's plane, confined to one namespace
(``--namespace``), where every job says ``runPolicy.managedBy: kubeflow.org/training-operator``
so this operator leaves it alone. Its jobs are the ones test_real_node_failures.py gives this
operator (tests/e2e/failing_jobs.py), watched for a window longer than this operator takes to
end them; what it did is printed for docs/reliability.md.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from localkube.thirdparty.training_operator import LocalTrainingOperator
from tests.e2e.failing_jobs import condition, create, events_of, mxjob, oom_job, unpullable_job
from tests.e2e.real_node_fixtures import InstalledCluster, namespace_for, remove_namespace
from tests.helpers.pod_creations import PodCreations
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.timeout(900)

NAMESPACE = "side-by-side"
MANAGED_BY = "kubeflow.org/training-operator"
WINDOW = 45.0
"""Seconds both jobs are watched: longer than this operator takes to end the pull error (its
40 s timeout in test_real_node_failures.py), ten times the OOM kill (backoffLimit 1)."""


@dataclass
class Watched:
    """What a job showed during the window: every condition type True at some sample, and the
    last Restarting message."""

    condition_types: set[str] = field(default_factory=set)
    restarting: str = ""


@pytest.fixture(scope="module")
def training_operator(real_cluster: InstalledCluster) -> Iterator[InstalledCluster]:
    namespace_for(real_cluster, NAMESPACE)
    local = LocalTrainingOperator(real_cluster.plane)
    running = local.start("--namespace", NAMESPACE, log_name="training-operator-side.log")
    try:
        yield real_cluster
    finally:
        local.stop(running)
        local.uninstall_webhook()
        remove_namespace(real_cluster, NAMESPACE)


def theirs(job: dict[str, Any]) -> dict[str, Any]:
    job["spec"].setdefault("runPolicy", {})["managedBy"] = MANAGED_BY
    return job


def watch(installed: InstalledCluster, names: tuple[str, ...]) -> dict[str, Watched]:
    """Sample the jobs every second for :data:`WINDOW` seconds (the window is the measure: an
    end that does not come is shown only by waiting past the time it should have come)."""
    watched = {name: Watched() for name in names}
    deadline = time.monotonic() + WINDOW
    while time.monotonic() < deadline:
        for name, seen in watched.items():
            status = mxjob(installed.api, NAMESPACE, name).get("status", {})
            seen.condition_types |= {c["type"] for c in status.get("conditions", [])
                                     if c["status"] == "True"}  # fmt: skip
            message = condition({"status": status}, "Restarting").get("message")
            seen.restarting = message or seen.restarting
        time.sleep(1)
    return watched


def test_training_operator_keeps_an_unpullable_job_created_and_retries_oom_past_the_backoff(
    training_operator: InstalledCluster,
) -> None:
    installed, api = training_operator, training_operator.api
    creations = PodCreations(api, NAMESPACE)
    image = installed.cluster.images.examples.ref
    try:
        create(installed, NAMESPACE, theirs(unpullable_job("pull")))
        create(installed, NAMESPACE, theirs(oom_job("oom", image, backoff_limit=1)))
        wait_for(
            "training-operator to make both pods",
            lambda: {name for name, _ in creations.seen},
            lambda names: {"pull-worker-0", "oom-worker-0"} <= names, timeout=60,
        )  # fmt: skip
        watched = watch(installed, ("pull", "oom"))
    finally:
        creations.stop()
    pull, oom = watched["pull"], watched["oom"]
    oom_pods = sum(1 for name, _ in creations.seen if name == "oom-worker-0")
    # kubeflow/trainer#2001: the job stays Created while its pod cannot start, without an end.
    assert pull.condition_types == {"Created"}, pull
    assert any(e.startswith("ErrImagePull:") for e in events_of(api, NAMESPACE, "pull")), pull
    # backoffLimit 1 allows 2 attempts; v1.8.1 does not count pods remade under ExitCode.
    assert "Failed" not in oom.condition_types and oom_pods > 2, (oom, oom_pods)
    # Its Restarting condition comes and goes between samples; when seen, it names no reason.
    assert "OOMKilled" not in oom.restarting, oom
    oom_events = events_of(api, NAMESPACE, "oom")
    assert any(e.startswith("OOMKilled:") for e in oom_events), oom_events
    print(f"\ntraining-operator v1.8.1 over {WINDOW:.0f} s: unpullable image: conditions "
          f"{sorted(pull.condition_types)} throughout, no end; OOM kill with backoffLimit 1: "
          f"{oom_pods} pods made, conditions {sorted(oom.condition_types)}, never Failed, "
          f"Restarting says {oom.restarting!r}")  # fmt: skip
