"""controller.manager: the informers it builds (its own and those the integrations declare), what
their events queue, and the gang scheduler resolved before any integration is built (in-memory
fake API; nothing started)."""

from __future__ import annotations

import http.client
import logging
import ssl
from typing import TypeVar

import pytest

from controller.integrations.budget.integration import BudgetIntegration
from controller.integrations.gang.integration import GangIntegration
from controller.integrations.kueue.integration import KueueIntegration
from controller.integrations.statusca.integration import StatusCAIntegration
from controller.manager import Controller
from controller.runtime.settings import from_args
from tests.controller.fakes import FakeApi
from tests.controller.integrations.gang.gated_api import GatedApi
from tests.controller.samples import job

T = TypeVar("T")
PDB = {"metadata": {"name": "mnist", "namespace": "ns", "uid": "pdb-uid"}}


def controller(*args: str, api: FakeApi | None = None) -> Controller:
    return Controller(from_args(list(args), environ={}), client=api or FakeApi())


def informer_names(built: Controller) -> list[str]:
    return [informer.name for informer in built.informers]


def integration(built: Controller, kind: type[T]) -> T:
    """The one integration of ``kind`` the controller built."""
    (found,) = [i for i in built.reconciler.integrations if isinstance(i, kind)]
    return found


def test_the_budgets_are_cached_always_and_the_policies_only_with_their_flag() -> None:
    names = informer_names(controller())
    assert names[:3] == ["mxjobs", "pods", "services"]
    assert "poddisruptionbudgets.policy" in names
    assert "networkpolicies.networking.k8s.io" not in names
    hardened = controller("--job-network-policy")
    assert "networkpolicies.networking.k8s.io" in informer_names(hardened)


def test_kueues_workloads_are_cached_only_with_their_flag() -> None:
    assert "workloads.kueue.x-k8s.io" not in informer_names(controller())
    queued = controller("--kueue-workloads")
    assert "workloads.kueue.x-k8s.io" in informer_names(queued)
    (informer,) = [i for i in queued.informers if i.name == "workloads.kueue.x-k8s.io"]
    bound = integration(queued, KueueIntegration).sync.workloads
    assert bound is informer.store, "the informer's store is bound to it"


def test_a_child_change_queues_the_job_of_its_name_when_there_is_one() -> None:
    built = controller()
    (budgets,) = [i for i in built.informers if i.name == "poddisruptionbudgets.policy"]
    budgets._fire("ADDED", PDB, None)
    assert built.queue.depth() == 0, "no such job: nothing to look at"
    built.jobs.store.apply("ADDED", job())
    budgets._fire("MODIFIED", PDB, PDB)
    assert built.queue.get(timeout=1) == "ns/mnist"
    built.queue.shutdown()


def test_auto_is_resolved_before_the_integrations_are_built_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO):
        built = controller(api=GatedApi())
    gang, budget = integration(built, GangIntegration), integration(built, BudgetIntegration)
    assert gang.scheduler == budget.scheduler == "native"
    names = informer_names(built)
    assert {"workloads.scheduling.k8s.io", "podgroups.scheduling.k8s.io"} <= set(names)
    assert "gang scheduler: native (asked: auto)" in caplog.messages
    assert (
        "integrations, in the order a reconcile calls them: statusca, budget, gang"
        in caplog.messages
    )


def test_without_a_gang_api_auto_is_none_and_no_gang_kind_is_cached() -> None:
    built = controller()
    assert integration(built, GangIntegration).scheduler == "none"
    assert not [n for n in informer_names(built) if "podgroups" in n]


def test_a_deleted_job_is_forgotten_and_its_uid_kept_for_its_reconcile() -> None:
    built = controller()
    built.jobs.store.apply("ADDED", job())
    built._on_job("DELETED", job(), None)
    assert built.reconciler.memory.take_gone("ns/mnist") == "job-uid"
    assert built.queue.get(timeout=1) == "ns/mnist"
    built.queue.shutdown()


def _post(port: int, body: bytes) -> int:
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    connection = http.client.HTTPSConnection("127.0.0.1", port, timeout=5, context=context)
    try:
        connection.request(
            "POST", "/apis/kubeflow.org/v1/namespaces/ns/mxjobs/mnist/status", body=body,
            headers={"Content-Type": "application/json"},
        )  # fmt: skip
        return connection.getresponse().status
    finally:
        connection.close()


def test_the_progress_endpoint_is_served_and_counted_and_its_ca_given_to_the_jobs() -> None:
    built = controller(
        "--progress-bind-address=127.0.0.1:0", "--metrics-bind-address=127.0.0.1:0",
        "--health-probe-bind-address=localhost:0",
    )  # fmt: skip
    assert "configmaps" in informer_names(built)
    assert built.progress_serving is not None
    statusca = integration(built, StatusCAIntegration)
    given = statusca.ca()
    assert given is not None and given == built.progress_serving.ca()
    assert given.startswith(b"-----BEGIN CERTIFICATE-----"), "the self-signed one: no files"
    built._start_servers()
    try:
        assert built.progress is not None
        assert _post(built.progress.port, b"{}") == 401, "no token"
        text = built.metrics.exposition().decode()
        assert 'mxjob_controller_progress_reports_total{code="401"} 1.0' in text
    finally:
        built.shutdown()


def test_without_progress_reports_nothing_is_served_and_no_configmap_is_cached() -> None:
    built = controller(
        "--no-progress-reports", "--metrics-bind-address=127.0.0.1:0",
        "--health-probe-bind-address=localhost:0",
    )  # fmt: skip
    assert "configmaps" not in informer_names(built)
    assert not [i for i in built.reconciler.integrations if isinstance(i, StatusCAIntegration)]
    built._start_servers()
    try:
        assert built.progress is None and built.progress_serving is None
    finally:
        built.shutdown()
