"""A real MXNet job that loses a replica on the real node is restarted as a whole and resumes.

Each case runs the resumable train example (real MXNet 1.9.1 ``dist_sync``: a scheduler, a
server, two workers, a checkpoint volume; tests/e2e/recovery_jobs.py) and ends one of its
processes the way the cluster would: the kernel's OOM killer at the worker's memory limit, or
SIGKILL to the server's or the scheduler's container; the three jobs run side by side. ps-lite
cannot take any of them back alone (docs/explanation/recovery.md), so the operator ends every
pod, makes all of them again as attempt 1, and the workers resume after the newest checkpoint:
each job must Succeed with its accuracy, one restart counted, and each pod made twice. The
cluster's disruptions (drain, preemption, a lost node) are in test_real_node_disruptions.py.
"""

from __future__ import annotations

from functools import partial
from typing import Any

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
from tests.e2e.side_by_side import run_cases, share_of
from tests.helpers.figures import Figures

pytestmark = pytest.mark.timeout(600)


def oom_killed_worker(installed: InstalledCluster, figures: Figures, job: dict[str, Any]) -> None:
    """Worker rank 1 allocates past its 1 GiB limit in epoch 3, once: the kernel kills it."""
    namespace = namespace_for(installed, "recover-oom")
    with checkpoint_claim(installed, namespace) as checkpoints:
        run = run_disrupted(installed, namespace, job, checkpoints, lambda: None, after_epoch=0)
    entry = cause(run)
    assert entry["reason"] == "OOMKilled" and entry["exitCode"] == 137, entry
    result = assert_restarted_once_and_resumed(run, replica=f"Worker-{entry['index']}")
    assert entry["countedAgainstBackoff"] is True and "disruptionRestarts" not in run.final
    events = events_of(installed.api, namespace, "oom")
    assert any("OOMKilled" in e and "restarting the whole job" in e for e in events), events
    remove_namespace(installed, namespace)
    record_resumed(figures, OOM_IN_EPOCH_3, run, result)


def killed_container(
    installed: InstalledCluster, figures: Figures, job: dict[str, Any], replica: str
) -> None:
    """SIGKILL to every process of the ``replica`` container (server or scheduler) of ``job``
    (named after it), after checkpoint 2."""
    namespace = namespace_for(installed, f"recover-{replica}")
    pod = f"{replica}-{replica}-0"
    killed: list[int] = []
    with checkpoint_claim(installed, namespace) as checkpoints:
        run = run_disrupted(installed, namespace, job, checkpoints,
                            lambda: killed.extend(kill_container(pod)))  # fmt: skip
    result = assert_restarted_once_and_resumed(
        run, replica=f"{replica.capitalize()}-0", exit_codes=(137,)
    )
    assert killed, pod
    remove_namespace(installed, namespace)
    record_resumed(figures, f"the {replica}'s container SIGKILLed after checkpoint 2", run, result)


def test_a_job_whose_worker_is_oom_killed_or_whose_server_or_scheduler_is_killed_resumes(
    real_cluster: InstalledCluster, figures: Figures
) -> None:
    """Three jobs side by side (tests/e2e/side_by_side.py): each restarts as a whole once and
    Succeeds from its newest checkpoint."""
    share = share_of(figures, cases=3)
    oom = resumable_job(real_cluster, "oom", fail_at=3, fail_with="oom", share=share)
    killed = {
        replica: resumable_job(real_cluster, replica, share=share)
        for replica in ("server", "scheduler")
    }  # fitted before any of them is created
    run_cases(figures, [
        ("a worker OOM-killed", partial(oom_killed_worker, real_cluster, figures, oom)),
        *((f"the {replica} killed", partial(killed_container, real_cluster, figures, job, replica))
          for replica, job in killed.items()),
    ])  # fmt: skip
