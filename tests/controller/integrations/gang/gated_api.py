"""An in-memory API server with some of kube-scheduler's feature gates off: it serves the
Workload API versions given and drops gated fields of what it stores silently, as
kube-apiserver's PodGroup strategy does (``dropDisabled…Field``); a dry run answers without
storing, under a generated name. For the tests of controller.integrations.gang."""

from __future__ import annotations

import copy
import itertools
from typing import Any

from controller.integrations.gang.native import gang_part
from controller.runtime.client import Query
from tests.controller.fakes import FakeApi, Request


class GatedApi(FakeApi):
    """Serves ``versions`` of scheduling.k8s.io and drops ``dropped`` fields of the gang part
    of what it stores; a dry run answers without storing, under a generated name."""

    def __init__(self, *, versions: tuple[str, ...] = ("v1alpha2",), dropped: tuple[str, ...] = ()):
        super().__init__()
        self.versions = versions
        self.dropped = dropped
        self._names = itertools.count(1)

    def request(self, method: str, path: str, *, body: Any = None, query: Query | None = None,
                **kwargs: Any) -> Any:  # fmt: skip
        version = path.removeprefix("/apis/scheduling.k8s.io/")
        if method == "GET" and version in ("v1alpha2", "v1alpha3"):
            if version not in self.versions:
                raise self._error(404, "NotFound")
            return {"resources": [{"name": "workloads"}, {"name": "podgroups"}]}
        if method == "POST" and body is not None:
            body = copy.deepcopy(body)
            part = gang_part(body)
            assert isinstance(part, dict)
            for name in self.dropped:
                part.pop(name, None)
            if ("dryRun", "All") in (query or []):
                self.requests.append(
                    Request("POST", path, copy.deepcopy(body), [("dryRun", "All")])
                )
                meta = body["metadata"]
                meta["name"] = f"{meta.pop('generateName')}{next(self._names)}"
                return body
        return super().request(method, path, body=body, query=query, **kwargs)
