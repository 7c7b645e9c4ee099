"""Which integrations join a reconcile, chosen from the controller's flags, in the order the
reconciler calls them (controller/job/hooks.py).

- Kueue first (``--kueue-workloads``): a job it writes (suspends, starts) is not looked at
  further.
- With ``--job-network-policy``, the job's NetworkPolicy before anything else of its pods.
- With ``--progress-reports`` (the default), the job's CA ConfigMap, which its pods mount.
- The budget before the gang, so that a PodGroup that cannot be written still leaves its budget
  made.

The gang scheduler is resolved before any of them is built (:func:`resolve_gang_scheduler`:
``--gang-scheduler=auto`` asks the API server), so that each is built knowing it, and declares
the caches and RBAC it needs under it.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable

from controller.integrations.budget.integration import BudgetIntegration
from controller.integrations.gang.integration import GangIntegration
from controller.integrations.gang.podgroup_writes import detect
from controller.integrations.gang.podgroups import GangScheduler
from controller.integrations.kueue.integration import WORKLOADS, KueueIntegration
from controller.integrations.kueue.workload_sync import WorkloadSync
from controller.integrations.netpol.integration import NetworkPolicyIntegration
from controller.integrations.statusca.integration import StatusCAIntegration
from controller.job.hooks import Integration
from controller.job.job_writes import MXJobWrites
from controller.runtime.client import KubeClient
from controller.runtime.events import EventRecorder
from controller.runtime.metrics import Metrics
from controller.runtime.settings import ControllerSettings, GangSchedulerChoice

log = logging.getLogger(__name__)


def resolve_gang_scheduler(client: KubeClient, choice: GangSchedulerChoice) -> GangScheduler:
    """The gang scheduler to write for: ``auto`` asks the API server
    (:func:`~controller.integrations.gang.podgroup_writes.detect`), any other choice is taken
    as given."""
    scheduler = detect(client) if choice == "auto" else choice
    log.info("gang scheduler: %s (asked: %s)", scheduler, choice)
    return scheduler


def chosen_integrations(
    settings: ControllerSettings,
    client: KubeClient,
    *,
    job_writes: MXJobWrites,
    recorder: EventRecorder,
    metrics: Metrics,
    now: Callable[[], datetime.datetime],
    status_ca: Callable[[], bytes | None] | None = None,
) -> list[Integration]:
    """The integrations ``settings`` turn on, in the order a reconcile calls them, built over
    ``client`` once the gang scheduler is resolved (their caches bound later, by
    controller/integrations/registration.py). ``status_ca``: the CA the progress endpoint's
    certificate chains to, read when asked (controller/manager.py gives it; without it the
    status-CA integration has no CA to give, and makes no ConfigMap)."""
    scheduler = resolve_gang_scheduler(client, settings.gang_scheduler)
    kueue: list[Integration] = []
    if settings.kueue_workloads:
        sync = WorkloadSync(
            client,
            workloads=WORKLOADS.empty_store(),
            job_writes=job_writes,
            recorder=recorder,
            metrics=metrics,
            now=now,
        )
        kueue.append(KueueIntegration(sync))
    policy = settings.job_network_policy
    netpol: list[Integration] = [NetworkPolicyIntegration(client)] if policy else []
    statusca: list[Integration] = []
    if settings.progress_reports:
        statusca.append(StatusCAIntegration(client, ca=status_ca or _no_ca))
    budget = BudgetIntegration(client, scheduler=scheduler)
    return [*kueue, *netpol, *statusca, budget, GangIntegration(client, scheduler=scheduler)]


def _no_ca() -> bytes | None:
    return None
