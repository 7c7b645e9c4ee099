"""The job's CA ConfigMap as a child of the job (:mod:`controller.integrations.statusca.configmap`
builds it), made to stand before its pods through the shared path
(:mod:`controller.integrations.children.ensure`): created when missing, its CA put back when it
differs (a renewed CA, an edit), a foreign one of its name left alone.

Its pods need it (:attr:`CA_CONFIGMAPS`' ``pods_need_it``): a foreign ConfigMap of the name would
give them a CA of someone else's choosing, whom they would then send their tokens to, so while
one holds the name the pods wait (the caller's choice, :mod:`controller.integrations.statusca.
integration`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from controller.integrations.children.ensure import Ensured, OwnedChildren
from controller.integrations.children.kind import ChildKind
from controller.integrations.statusca.configmap import build_configmap, configmap_update
from controller.job.view import MXJobView
from shared import progress

CA_CONFIGMAPS: Final = ChildKind(
    kind="ConfigMap",
    group="",
    version="v1",
    plural="configmaps",
    pods_need_it=True,
    always_served=True,
    suffix=progress.CA_CONFIGMAP_SUFFIX,
)


def ensure_ca(
    configmaps: OwnedChildren, job: MXJobView, *, labels: Mapping[str, str], ca: bytes
) -> Ensured:
    """Make the job's ConfigMap hold ``ca`` (at most one write per call); a write the API server
    refuses (no RBAC for configmaps, a conflict) is raised."""
    wanted = build_configmap(job, labels=labels, ca=ca)
    return configmaps.ensure(job, wanted, revise=configmap_update)
