"""controller.integrations.netpol.integration: the job's NetworkPolicy made before its pods,
which wait while it cannot be, or while a foreign object holds its name (in-memory fake API)."""

from __future__ import annotations

from controller.integrations.children.kind import child_object
from controller.integrations.netpol.integration import NetworkPolicyIntegration
from controller.integrations.netpol.policy_writes import POLICIES
from controller.job.desired import job_labels
from controller.job.hooks import Integration
from controller.job.pods import JobPods
from controller.job.status import compute_status
from controller.job.view import MXJobView
from controller.manager import Controller
from controller.runtime.client import ApiError, error_for
from controller.runtime.events import FOREIGN_OBJECT_EXISTS
from controller.runtime.settings import ControllerSettings, from_args
from tests.controller.fakes import FakeApi, catch_up
from tests.controller.samples import NOW, job, view_of

MNIST = view_of(job())


def policy_path(namespace: str, name: str | None = None) -> str:
    return POLICIES.path(namespace, name)


def prepare(integration: NetworkPolicyIntegration, view: MXJobView) -> tuple[bool, list[Exception]]:
    prepared = integration.prepare_pods(view, labels=job_labels(view))
    return prepared.ready, list(prepared.errors)


def test_it_is_an_integration_named_netpol() -> None:
    integration: Integration = NetworkPolicyIntegration(FakeApi())
    assert integration.name == "netpol"


def test_every_job_gets_its_policy_before_its_pods() -> None:
    api = FakeApi()
    assert prepare(NetworkPolicyIntegration(api), MNIST) == (True, [])
    stored = api.objects[policy_path("ns", "mnist")]
    assert stored["metadata"]["labels"] == job_labels(MNIST)


def test_a_policy_that_cannot_be_written_holds_the_pods_back_with_the_error() -> None:
    api = FakeApi()
    refused = error_for(403, "Forbidden", {"kind": "Status", "reason": "Forbidden", "code": 403})
    api.fail_next[("POST", policy_path("ns"))] = refused
    ready, errors = prepare(NetworkPolicyIntegration(api), MNIST)
    assert ready is False
    assert errors == [refused] and isinstance(errors[0], ApiError)


def test_a_users_policy_of_the_jobs_name_holds_the_pods_back_and_stays() -> None:
    api = FakeApi()
    integration = NetworkPolicyIntegration(api)
    users = {"metadata": {"name": "mnist", "namespace": "ns"}, "spec": {"podSelector": {}}}
    api.put_object(policy_path("ns", "mnist"), users)
    catch_up(integration.children(POLICIES), api, policy_path("ns"), transform=child_object)
    assert prepare(integration, MNIST) == (False, []), "held back, and not an error"
    assert api.writes() == []
    assert api.objects[policy_path("ns", "mnist")]["spec"] == {"podSelector": {}}
    wait = integration.waits(MNIST, JobPods())
    assert wait is not None and wait.reason == FOREIGN_OBJECT_EXISTS
    pending = next(
        c for c in compute_status(MNIST, JobPods(), now=NOW, held=wait).status["conditions"]
        if c["type"] == "Pending"
    )  # fmt: skip
    assert (pending["status"], pending["reason"]) == ("True", FOREIGN_OBJECT_EXISTS)
    assert "NetworkPolicy ns/mnist is not this job's" in pending["message"]
    assert "the job's pods wait" in pending["message"]
    (notice,) = integration.notices(MNIST, JobPods())
    assert (notice.type, notice.reason) == ("Warning", FOREIGN_OBJECT_EXISTS)
    assert integration.notices(MNIST, JobPods()) == ()


def test_it_declares_the_policies_cache_and_the_rule_to_put_them_back() -> None:
    declared = NetworkPolicyIntegration(FakeApi()).declaration()
    assert declared.watches == (POLICIES.watch,)
    assert ("networking.k8s.io", "networkpolicies", "update") in declared.grants()


def test_the_controller_joins_it_to_reconciles_only_with_the_flag_before_the_others() -> None:
    def names(settings: ControllerSettings) -> list[str]:
        controller = Controller(settings, client=FakeApi())
        return [i.name for i in controller.reconciler.integrations]

    assert "netpol" not in names(from_args([], environ={}))
    on = names(from_args(["--job-network-policy"], environ={}))
    assert on[0] == "netpol" and "budget" in on
    by_env = from_args([], environ={"MXJOB_CONTROLLER_JOB_NETWORK_POLICY": "true"})
    assert by_env.job_network_policy is True
