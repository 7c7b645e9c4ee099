"""The Reconciler over an in-memory API server, with caches a test fills as informers would:
what the reconciler tests and the kill-point tests share."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from controller.integrations.budget.integration import BudgetIntegration
from controller.integrations.gang.integration import GangIntegration
from controller.job.hooks import Integration
from controller.job.reconciler import Reconciler
from controller.runtime.client import mxjobs_path, pods_path, services_path
from controller.runtime.events import EventRecorder
from controller.runtime.expectations import Expectations
from controller.runtime.failpoints import Failpoints
from controller.runtime.informers import Store
from controller.runtime.metrics import Metrics
from shared.constants import LABEL_JOB_NAME
from tests.controller.fakes import FakeApi
from tests.controller.samples import NOW

Obj = dict[str, Any]
KEY = "ns/mnist"


# -- the Reconciler against an in-memory API --------------------------------------------------
def integrations(api: FakeApi) -> list[Integration]:
    """What controller/manager.py hands a reconciler without Kueue: a budget, then the gang
    (``none``: pods scheduled one by one)."""
    return [BudgetIntegration(api, scheduler="none"), GangIntegration(api, scheduler="none")]


class World:
    """A Reconciler whose caches the test fills, over a FakeApi."""

    def __init__(
        self,
        job_obj: Obj | None,
        *,
        hooks: Callable[[FakeApi], list[Integration]] = integrations,
        api: FakeApi | None = None,
        failpoints: Failpoints | None = None,
    ) -> None:
        """A fresh controller: over ``api`` (another World's, as a restarted controller finds
        the API server), or a new one holding ``job_obj``."""
        self.api = api or FakeApi()
        self.jobs = Store()
        self.pods = Store(index_label=LABEL_JOB_NAME)
        self.services = Store(index_label=LABEL_JOB_NAME)
        self.expectations = Expectations()
        self.recorder = EventRecorder(self.api)
        self.clock = NOW
        self.reconciler = Reconciler(
            self.api,
            jobs=self.jobs,
            pods=self.pods,
            services=self.services,
            expectations=self.expectations,
            recorder=self.recorder,
            metrics=Metrics(),
            integrations=hooks(self.api),
            now=lambda: self.clock,
            failpoints=failpoints,
        )
        if job_obj is not None:
            self.api.put_object(mxjobs_path("ns", "mnist"), job_obj)
        self.sync_from_api()

    def sync_from_api(self) -> None:
        """What the informers would do: copy the API's objects into the caches."""
        for path, obj in self.api.objects.items():
            store = (
                self.pods
                if "/pods/" in path
                else self.services
                if "/services/" in path
                else self.jobs
            )
            store.put_if_newer(copy.deepcopy(obj))
        for store, marker in ((self.pods, "/pods/"), (self.services, "/services/")):
            for obj in store.objects():
                path = (pods_path if marker == "/pods/" else services_path)(
                    "ns", obj["metadata"]["name"]
                )
                if path not in self.api.objects:
                    store.apply("DELETED", obj)
                    self.expectations.deletion_observed(
                        KEY,
                        marker.strip("/"),  # type: ignore[arg-type]
                        obj["metadata"]["uid"],
                    )
        for obj in self.pods.objects():
            self.expectations.creation_observed(KEY, "pods", obj["metadata"]["name"])
        for obj in self.services.objects():
            self.expectations.creation_observed(KEY, "services", obj["metadata"]["name"])

    def set_pod_status(self, name: str, status: Obj) -> None:
        self.api.objects[pods_path("ns", name)]["status"] = status
        self.api.objects[pods_path("ns", name)]["metadata"]["resourceVersion"] += "0"
