"""The job's CA ConfigMap as an :class:`~controller.job.hooks.Integration` (controller/job/
hooks.py): with the progress endpoint on (``--progress-reports``), made just before the job's
pods are, and kept equal to the CA while they run.

The CA is read when asked (``ca``: controller/runtime/serving_tls.py's ``trust_anchor`` over the
progress endpoint's certificate, given by controller/manager.py), so a renewed CA or the Secret
replacing the self-signed fallback reaches every running job at its next reconcile (a pod event,
or the resync), through :meth:`~StatusCAIntegration.refresh`; the kubelet then updates the
mounted file, which the reporting library re-reads.

A ConfigMap that cannot be written is an error for the reconcile to retry, but holds no pod back:
the pod's volume takes the ConfigMap as optional (shared/progress_pods.py), so the job runs and
only its reports wait for the CA. A foreign ConfigMap of the name does hold the pods back,
without an error, as a foreign CA would be trusted: it is left alone, and the job's ``Pending``
condition and a ``ForeignObjectExists`` Warning say why
(:mod:`controller.integrations.children.foreign`); its removal, seen by the ConfigMaps' cache
(declared here, bound by the manager), brings the job back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from controller.integrations.children.ensure import OwnedChildren
from controller.integrations.children.stores import ChildStores
from controller.integrations.statusca.ca_writes import CA_CONFIGMAPS, ensure_ca
from controller.job.declaration import Declaration, Stores
from controller.job.desired import job_labels
from controller.job.hooks import READY, NoHooks, Notice, Preparation
from controller.job.pods import JobPods
from controller.job.status.outcome import Wait
from controller.job.view import MXJobView
from controller.runtime.client import KubeClient


class StatusCAIntegration(NoHooks):
    """A job's pods find the CA of the controller's progress endpoint in a ConfigMap of the
    job's own."""

    name = "statusca"

    def __init__(self, client: KubeClient, *, ca: Callable[[], bytes | None]) -> None:
        self.children = ChildStores(client)
        self.ca = ca
        """The CA (PEM) the endpoint's certificate chains to now; None: nothing to give yet."""

    @property
    def configmaps(self) -> OwnedChildren:
        return self.children.owned(CA_CONFIGMAPS)

    def declaration(self) -> Declaration:
        """The ConfigMaps' cache, and their rule: a ConfigMap's CA is put back in place
        (``update``); RBAC for it ships in manifests/base/rbac.yaml."""
        rule = CA_CONFIGMAPS.rule("update")
        return Declaration(watches=(CA_CONFIGMAPS.watch,), rules=(rule,))

    def bind(self, stores: Stores) -> None:
        self.children.bind(stores)

    def prepare_pods(self, job: MXJobView, *, labels: Mapping[str, str]) -> Preparation:
        """Ensure the ConfigMap; a foreign one holds the pods back, a failed write does not."""
        ca = self.ca()
        if ca is None:
            return READY
        try:
            ensured = ensure_ca(self.configmaps, job, labels=labels, ca=ca)
        except Exception as error:
            return Preparation(ready=True, errors=(error,))
        return Preparation(ready=not ensured.foreign)

    def refresh(self, job: MXJobView) -> Sequence[Exception]:
        """Keep the running job's ConfigMap equal to the CA (no write while it is)."""
        ca = self.ca()
        if ca is None or self.configmaps.foreign(job) is not None:
            return ()
        try:
            ensure_ca(self.configmaps, job, labels=job_labels(job), ca=ca)
        except Exception as error:
            return (error,)
        return ()

    def waits(self, job: MXJobView, pods: JobPods) -> Wait | None:
        """``Pending`` while a foreign object holds the ConfigMap's name."""
        return self.configmaps.wait(job)

    def notices(self, job: MXJobView, pods: JobPods) -> Sequence[Notice]:
        notice = self.configmaps.notice(job)
        return (notice,) if notice is not None else ()

    def job_gone(self, namespace: str, name: str, *, uid: str | None) -> None:
        self.configmaps.forget(namespace, name)
