"""The same failing jobs under training-operator v1.8.1, on the same real node: a comparison,
run by ``make bench-recovery`` and never by ``make test`` (its file name is not a test module's).

training-operator v1.8.1 (``localkube.thirdparty.training_operator``: built from the Go module
proxy) runs beside this operator on the session's plane, confined to one namespace
(``--namespace``), where every job says ``runPolicy.managedBy: kubeflow.org/training-operator``
so this operator leaves it alone. Its jobs are the ones test_real_node_failures.py gives this
operator (tests/e2e/failing_jobs.py), watched for a window longer than this operator takes to
end them. What it did is recorded with the ``figures`` fixture beside this operator's figures
of the same cases, and rendered into docs/explanation/recovery.md (``bench.recovery``); the
assertions say what the page claims of it, so a training-operator that behaved otherwise fails
the bench instead of leaving the page wrong.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from bench.recovery_figures import THEIRS
from localkube.thirdparty.training_operator import LocalTrainingOperator
from tests.e2e.failing_jobs import (
    OOM_CASE,
    UNPULLABLE_CASE,
    condition,
    create,
    events_of,
    mxjob,
    oom_job,
    unpullable_job,
)
from tests.e2e.real_node_fixtures import InstalledCluster, namespace_for, remove_namespace
from tests.e2e.recovery_jobs import (
    DRAINED,
    OOM_IN_EPOCH_3,
    checkpoint_claim,
    resumable_job,
    status_of,
)
from tests.helpers.figures import Figures
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
        remove_namespace(real_cluster, NAMESPACE, until_gone=True)


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
    training_operator: InstalledCluster, figures: Figures
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
    figures.record(table="node", case=UNPULLABLE_CASE, operator=THEIRS, window_s=WINDOW,
                   conditions=", ".join(sorted(pull.condition_types)), ended=False)  # fmt: skip
    figures.record(table="node", case=OOM_CASE, operator=THEIRS, window_s=WINDOW,
                   pods_made=oom_pods, conditions=", ".join(sorted(oom.condition_types)),
                   restarting_says=oom.restarting, ended=False)  # fmt: skip


RECOVERY_WINDOW = 60.0
"""Seconds both disrupted jobs are watched after their disruption: twice what this
operator takes to bring the same job to Succeeded (test_real_node_recovery.py,
test_real_node_disruptions.py)."""


def test_training_operator_recreates_a_lost_mxnet_worker_alone_and_the_job_hangs(
    training_operator: InstalledCluster, figures: Figures
) -> None:
    """The resumable train example under v1.8.1: worker 1 OOM-killed in epoch 3 in one job,
    drained after checkpoint 2 in the other. v1.8.1 recreates the worker alone; ps-lite never
    takes it back, so neither job ends."""
    installed, kubectl = training_operator, training_operator.plane.kubectl
    node = installed.node.settings.node_name
    creations = PodCreations(installed.api, NAMESPACE)
    oom = theirs(resumable_job(installed, "their-oom", fail_at=3, fail_with="oom",
                               claim_name="oom-checkpoints"))  # fmt: skip
    seen: dict[str, dict[str, Any]] = {}
    try:
        with (
            checkpoint_claim(installed, NAMESPACE, claim_name="oom-checkpoints"),
            checkpoint_claim(installed, NAMESPACE, claim_name="drain-checkpoints") as drain_dir,
        ):
            create(installed, NAMESPACE, oom)
            wait_for("their-oom's pods bound", lambda: installed.api.request(
                "GET", f"/api/v1/namespaces/{NAMESPACE}/pods",
                query=[("labelSelector", "training.kubeflow.org/job-name=their-oom")])["items"],
                lambda pods: len(pods) == 4 and all(p["spec"].get("nodeName") for p in pods),
                timeout=60)  # fmt: skip
            # Fitted to what the first job left: both run side by side.
            drained = resumable_job(installed, "their-drain", claim_name="drain-checkpoints")
            create(installed, NAMESPACE, theirs(drained))
            wait_for("checkpoint 2 of their-drain", drain_dir.epoch, lambda e: e >= 2, timeout=180)
            disrupted = time.monotonic()
            kubectl(
                "drain",
                node,
                "--ignore-daemonsets",
                "--delete-emptydir-data",
                "--pod-selector=training.kubeflow.org/job-name=their-drain,"
                "training.kubeflow.org/replica-type=worker,"
                "training.kubeflow.org/replica-index=1",
                "--timeout=90s",
                timeout=100,
            )
            kubectl("uncordon", node)
            while time.monotonic() - disrupted < RECOVERY_WINDOW:
                for name in ("their-oom", "their-drain"):
                    seen[name] = status_of(installed, NAMESPACE, name)
                time.sleep(2)
            for name in ("their-oom", "their-drain"):
                kubectl("delete", "mxjob", "-n", NAMESPACE, name, "--wait", "--timeout=120s",
                        timeout=130)  # fmt: skip
    finally:
        kubectl("uncordon", node, check=False)
        creations.stop()
    made = {name: sorted(p for p, _ in creations.seen if p.startswith(f"{name}-"))
            for name in seen}  # fmt: skip
    for name, status in seen.items():
        assert not {"Succeeded", "Failed"} & set(true_conditions(status)), (name, status)
        # One worker made again alone (the OOM kills worker rank 1, which ps-lite may give
        # either pod): 5 pods, no other.
        again = [pod for pod in set(made[name]) if made[name].count(pod) == 2]
        assert len(made[name]) == 5 and len(again) == 1 and "-worker-" in again[0], made[name]
    cases = {"their-oom": OOM_IN_EPOCH_3, "their-drain": DRAINED}
    for name, status in seen.items():
        twice = next(pod for pod in set(made[name]) if made[name].count(pod) == 2)
        figures.record(
            table="resume", case=cases[name], operator=THEIRS, window_s=RECOVERY_WINDOW,
            conditions=", ".join(true_conditions(status)),
            restart_count=status.get("restartCount", 0), pods_made=len(made[name]),
            made_twice=twice.removeprefix(f"{name}-"), ended=False,
        )  # fmt: skip


def true_conditions(status: dict[str, Any]) -> list[str]:
    return [c["type"] for c in status.get("conditions", []) if c.get("status") == "True"]
