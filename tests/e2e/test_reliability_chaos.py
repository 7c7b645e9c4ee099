"""The short chaos run: a few jobs to completion while the controller and kube-apiserver die,
one controller at the point of a restart where its status is written and no pod deleted yet.

``make chaos`` runs the full version (50 jobs, 10 controller SIGKILLs, etcd restart, ...) and
writes its figures into ``docs/explanation/recovery.md``; this one keeps the same invariants
within the budget of ``make test``. It runs on its own control plane
(``localkube.scenarios.chaos`` starts one), since restarting kube-apiserver under the session's
plane would disturb the other tests' clients.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.runtime.failpoints import STATUS_WRITTEN
from localkube.scenarios.chaos.plan import ChaosConfig
from localkube.scenarios.chaos.run import ChaosRun


@pytest.mark.timeout(240)
def test_jobs_finish_as_scripted_through_controller_kills_and_an_apiserver_restart(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    config = ChaosConfig(
        jobs=6,
        controller_kills=2,
        webhook_kills=1,
        apiserver_restarts=1,
        etcd_restarts=0,
        compactions=1,
        spread=6.0,
        gap=(0.3, 1.0),
        timeout=60.0,
        # One retry job at least (plan_jobs): its restart's status write kills a controller.
        failpoints=(STATUS_WRITTEN,),
    )
    lines: list[str] = []
    state_dir: Path = tmp_path_factory.mktemp("chaos-plane")
    report = ChaosRun(config, state_dir, log=lines.append).run()
    summary = "\n".join(lines) + "\n" + report.markdown()
    kinds = sorted(fault.kind for fault in report.faults)
    assert kinds == ["apiserver", "compaction", "controller", "controller", "webhook"], summary
    assert [inv.name for inv in report.invariants if not inv.ok] == [], summary
    assert len(report.invariants) == 7, summary
