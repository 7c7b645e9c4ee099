"""controller.integrations.statusca.integration: the job's CA ConfigMap made before its pods and
kept equal to the CA while they run; a write that fails holds no pod back, a foreign ConfigMap of
the name does (in-memory fake API)."""

from __future__ import annotations

from controller.integrations.children.kind import child_object
from controller.integrations.statusca.ca_writes import CA_CONFIGMAPS
from controller.integrations.statusca.integration import StatusCAIntegration
from controller.job.desired import job_labels
from controller.job.hooks import Integration
from controller.job.pods import JobPods
from controller.job.view import MXJobView
from controller.runtime.client import error_for
from controller.runtime.events import FOREIGN_OBJECT_EXISTS
from tests.controller.fakes import FakeApi, catch_up
from tests.controller.samples import job, view_of

MNIST = view_of(job())
PATH = CA_CONFIGMAPS.path("ns", "mnist-status-ca")


class CA:
    """The CA the integration is given, changed by the test."""

    def __init__(self, pem: bytes | None = b"ONE") -> None:
        self.pem = pem

    def __call__(self) -> bytes | None:
        return self.pem


def prepare(integration: StatusCAIntegration, view: MXJobView) -> tuple[bool, list[Exception]]:
    prepared = integration.prepare_pods(view, labels=job_labels(view))
    return prepared.ready, list(prepared.errors)


def seen(integration: StatusCAIntegration, api: FakeApi) -> None:
    store = integration.children(CA_CONFIGMAPS)
    catch_up(store, api, CA_CONFIGMAPS.path("ns"), transform=child_object)


def test_it_is_an_integration_named_statusca() -> None:
    integration: Integration = StatusCAIntegration(FakeApi(), ca=CA())
    assert integration.name == "statusca"


def test_every_job_gets_its_ca_before_its_pods() -> None:
    api = FakeApi()
    assert prepare(StatusCAIntegration(api, ca=CA()), MNIST) == (True, [])
    assert api.objects[PATH]["data"] == {"ca.crt": "ONE"}


def test_a_renewed_ca_reaches_a_running_job_and_an_unchanged_one_costs_no_write() -> None:
    api, ca = FakeApi(), CA()
    integration = StatusCAIntegration(api, ca=ca)
    prepare(integration, MNIST)
    seen(integration, api)
    assert integration.refresh(MNIST) == ()
    assert len(api.writes()) == 1
    ca.pem = b"TWO"
    assert integration.refresh(MNIST) == ()
    assert api.objects[PATH]["data"] == {"ca.crt": "TWO"}


def test_a_configmap_that_cannot_be_written_is_an_error_that_holds_no_pod_back() -> None:
    api = FakeApi()
    refused = error_for(403, "Forbidden", {"kind": "Status", "reason": "Forbidden", "code": 403})
    api.fail_next[("POST", CA_CONFIGMAPS.path("ns"))] = refused
    assert prepare(StatusCAIntegration(api, ca=CA()), MNIST) == (True, [refused])
    api.fail_next[("POST", CA_CONFIGMAPS.path("ns"))] = refused
    assert StatusCAIntegration(api, ca=CA()).refresh(MNIST) == (refused,)


def test_without_a_ca_nothing_is_made() -> None:
    api = FakeApi()
    integration = StatusCAIntegration(api, ca=CA(None))
    assert prepare(integration, MNIST) == (True, [])
    assert integration.refresh(MNIST) == ()
    assert api.writes() == []


def test_a_foreign_configmap_of_the_name_holds_the_pods_back_and_stays() -> None:
    api = FakeApi()
    users = {"metadata": {"name": "mnist-status-ca", "namespace": "ns"}, "data": {"ca.crt": "X"}}
    api.put_object(PATH, users)
    integration = StatusCAIntegration(api, ca=CA())
    seen(integration, api)
    assert prepare(integration, MNIST) == (False, []), "held back, and not an error"
    assert integration.refresh(MNIST) == ()
    assert api.writes() == []
    wait = integration.waits(MNIST, JobPods())
    assert wait is not None and wait.reason == FOREIGN_OBJECT_EXISTS
    assert "ConfigMap ns/mnist-status-ca is not this job's" in wait.message
    (notice,) = integration.notices(MNIST, JobPods())
    assert (notice.type, notice.reason) == ("Warning", FOREIGN_OBJECT_EXISTS)
    integration.job_gone("ns", "mnist", uid="job-uid")
    (again,) = integration.notices(MNIST, JobPods())
    assert again.reason == FOREIGN_OBJECT_EXISTS, "a gone job is forgotten"


def test_it_declares_the_configmaps_cache_and_the_rule_to_put_them_back() -> None:
    declared = StatusCAIntegration(FakeApi(), ca=CA()).declaration()
    assert declared.watches == (CA_CONFIGMAPS.watch,)
    assert declared.grants() == {
        ("", "configmaps", verb) for verb in ("get", "list", "watch", "create", "update")
    }
