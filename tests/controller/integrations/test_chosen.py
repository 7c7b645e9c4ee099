"""controller/integrations/chosen.py: which integrations the flags turn on, in the order a
reconcile calls them, the gang scheduler resolved before they are built, and the RBAC each one
declares granted by both installs with the options that turn it on (tests/controller/
integrations/shipped_rbac.py reads the files): an integration whose rules were not added to the
manifests and the chart fails here, not in a cluster."""

from __future__ import annotations

import itertools
import logging

import pytest

from controller.integrations.chosen import chosen_integrations, resolve_gang_scheduler
from controller.integrations.gang.integration import GangIntegration
from controller.integrations.statusca.integration import StatusCAIntegration
from controller.job.declaration import Declaration
from controller.job.hooks import Integration
from controller.job.job_writes import MXJobWrites
from controller.runtime.events import EventRecorder
from controller.runtime.metrics import Metrics
from controller.runtime.settings import from_args
from controller.runtime.store import Store
from tests.controller.fakes import FakeApi
from tests.controller.integrations.gang.gated_api import GatedApi
from tests.controller.integrations.shipped_rbac import INSTALLS, Grant, Install, granted
from tests.controller.samples import NOW

SCHEDULERS = ("none", "native", "volcano", "scheduler-plugins")
OPTIONS = list(itertools.product((False, True), repeat=2))
METRICS = Metrics()


def chosen(*args: str, api: FakeApi | None = None) -> list[Integration]:
    client = api or FakeApi()
    return chosen_integrations(
        from_args(list(args), environ={}), client,
        job_writes=MXJobWrites(client, jobs=Store()), recorder=EventRecorder(client),
        metrics=METRICS, now=lambda: NOW,
    )  # fmt: skip


def names(*args: str) -> list[str]:
    return [integration.name for integration in chosen(*args)]


def test_the_budget_then_the_gang_always_and_the_rest_only_with_their_flags_first() -> None:
    assert names() == ["statusca", "budget", "gang"]
    assert names("--no-progress-reports") == ["budget", "gang"]
    assert names("--job-network-policy") == ["netpol", "statusca", "budget", "gang"]
    assert names("--kueue-workloads") == ["kueue", "statusca", "budget", "gang"]
    assert names("--kueue-workloads", "--job-network-policy") == [
        "kueue", "netpol", "statusca", "budget", "gang",
    ]  # fmt: skip


def test_the_status_ca_integration_reads_the_ca_it_is_given() -> None:
    client = FakeApi()
    built = chosen_integrations(
        from_args([], environ={}), client, job_writes=MXJobWrites(client, jobs=Store()),
        recorder=EventRecorder(client), metrics=METRICS, now=lambda: NOW, status_ca=lambda: b"PEM",
    )  # fmt: skip
    (statusca,) = [i for i in built if isinstance(i, StatusCAIntegration)]
    assert statusca.ca() == b"PEM"
    (without,) = [i for i in chosen() if isinstance(i, StatusCAIntegration)]
    assert without.ca() is None, "no CA given: no ConfigMap is made"


def test_auto_asks_the_api_server_and_logs_what_it_picked(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO):
        assert resolve_gang_scheduler(GatedApi(), "auto") == "native"
        assert resolve_gang_scheduler(FakeApi(), "auto") == "none"
    assert caplog.messages == [
        "gang scheduler: native (asked: auto)",
        "gang scheduler: none (asked: auto)",
    ]


def test_a_scheduler_named_is_taken_without_asking() -> None:
    api = FakeApi()
    assert resolve_gang_scheduler(api, "volcano") == "volcano"
    assert api.requests == []


def test_every_integration_is_built_with_the_scheduler_resolved() -> None:
    (gang,) = [i for i in chosen(api=GatedApi()) if isinstance(i, GangIntegration)]
    assert gang.scheduler == "native"


def missing(declaration: Declaration, grants: frozenset[Grant]) -> set[Grant]:
    return set(declaration.grants() - grants)


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_each_integration_declares_the_rules_its_own_watches_need(scheduler: str) -> None:
    for integration in chosen(f"--gang-scheduler={scheduler}", "--kueue-workloads",
                              "--job-network-policy"):  # fmt: skip
        declared = integration.declaration()
        for watch in declared.watches:
            for verb in ("list", "watch"):
                grant = (watch.group, watch.plural, verb)
                assert grant in declared.grants(), (integration.name, grant)


@pytest.mark.parametrize("install", INSTALLS, ids=lambda install: install.name)
@pytest.mark.parametrize("scheduler", SCHEDULERS)
@pytest.mark.parametrize(("kueue", "netpol"), OPTIONS, ids=lambda on: "on" if on else "off")
def test_the_install_grants_every_rule_each_integration_it_turns_on_declares(
    install: Install, scheduler: str, kueue: bool, netpol: bool
) -> None:
    flags = [f"--gang-scheduler={scheduler}"]
    flags += ["--kueue-workloads"] * kueue + ["--job-network-policy"] * netpol
    grants = granted(install.files(kueue_workloads=kueue, job_network_policy=netpol))
    for integration in chosen(*flags):
        absent = missing(integration.declaration(), grants)
        assert not absent, f"{install.name} does not grant {integration.name}: {sorted(absent)}"


def test_a_rule_the_files_do_not_grant_is_found_missing() -> None:
    (kueue,) = [i for i in chosen("--kueue-workloads") if i.name == "kueue"]
    base_only = granted(INSTALLS[0].files(kueue_workloads=False, job_network_policy=False))
    assert ("kueue.x-k8s.io", "workloads", "watch") in missing(kueue.declaration(), base_only)
