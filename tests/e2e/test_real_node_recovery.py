"""A real MXNet job that loses a replica on the real node is restarted as a whole and resumes.

Each test runs the resumable train example (real MXNet 1.9.1 ``dist_sync``: a scheduler, a
server, two workers, a checkpoint volume; tests/e2e/recovery_jobs.py) and ends one of its
processes the way the cluster would: the kernel's OOM killer at the worker's memory limit, or
SIGKILL to the server's or the scheduler's container. ps-lite cannot take any of them back
alone (docs/explanation/recovery.md), so the operator ends every pod, makes all of them again as
attempt 1, and the workers resume after the newest checkpoint: the job must Succeed with its
accuracy, one restart counted, and each pod made twice. The cluster's disruptions (drain,
preemption, a lost node) are in test_real_node_disruptions.py.
"""

from __future__ import annotations

import pytest

from tests.e2e.failing_jobs import events_of
from tests.e2e.real_node_fixtures import InstalledCluster, namespace_for, remove_namespace
from tests.e2e.recovery_jobs import (
    OOM_IN_EPOCH_3,
    assert_restarted_once_and_resumed,
    cause,
    checkpoint_claim,
    kill_container,
    record_resumed,
    resumable_job,
    run_disrupted,
)
from tests.helpers.figures import Figures

pytestmark = pytest.mark.timeout(600)


def test_a_worker_oom_killed_mid_training_restarts_the_job_which_resumes_and_succeeds(
    real_cluster: InstalledCluster, figures: Figures
) -> None:
    """Worker rank 1 allocates past its 1 GiB limit in epoch 3, once: the kernel kills it."""
    namespace = namespace_for(real_cluster, "recover-oom")
    job = resumable_job(real_cluster, "oom", fail_at=3, fail_with="oom")
    with checkpoint_claim(real_cluster, namespace) as checkpoints:
        run = run_disrupted(real_cluster, namespace, job, checkpoints, lambda: None, after_epoch=0)
    entry = cause(run)
    assert entry["reason"] == "OOMKilled" and entry["exitCode"] == 137, entry
    result = assert_restarted_once_and_resumed(run, replica=f"Worker-{entry['index']}")
    assert entry["countedAgainstBackoff"] is True and "disruptionRestarts" not in run.final
    events = events_of(real_cluster.api, namespace, "oom")
    assert any("OOMKilled" in e and "restarting the whole job" in e for e in events), events
    remove_namespace(real_cluster, namespace)
    record_resumed(figures, OOM_IN_EPOCH_3, run, result)


@pytest.mark.parametrize("replica", ["server", "scheduler"])
def test_a_killed_parameter_server_or_scheduler_restarts_the_job_which_resumes(
    real_cluster: InstalledCluster, figures: Figures, replica: str
) -> None:
    """SIGKILL to every process of the replica's container, after checkpoint 2."""
    namespace = namespace_for(real_cluster, f"recover-{replica}")
    job = resumable_job(real_cluster, replica)
    pod = f"{replica}-{replica}-0"
    killed: list[int] = []
    with checkpoint_claim(real_cluster, namespace) as checkpoints:
        run = run_disrupted(real_cluster, namespace, job, checkpoints,
                            lambda: killed.extend(kill_container(pod)))  # fmt: skip
    result = assert_restarted_once_and_resumed(
        run, replica=f"{replica.capitalize()}-0", exit_codes=(137,)
    )
    assert killed, pod
    remove_namespace(real_cluster, namespace)
    record_resumed(figures, f"the {replica}'s container SIGKILLed after checkpoint 2", run, result)
