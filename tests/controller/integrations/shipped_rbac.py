"""The RBAC the two installs grant the controller's ServiceAccount, read from their files: what
an integration's declared rules (controller/job/declaration.py) are held to.

Each install applies its base's RBAC and, per option that turns an integration on, the option's
own: kustomize's manifests/base/rbac.yaml and components (manifests/components/), the Helm
chart's templates (charts/mxjob-operator/templates/). The templates are read without Helm,
their template actions taken out (every conditional branch kept, every value a placeholder):
an option's template is read only when the option is on, and RBAC names no value but the
namespace. A rule counts when a ClusterRoleBinding binds its ClusterRole to the controller's
ServiceAccount (integrations act in every namespace watched) and it names no ``resourceNames``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

ROOT: Final = Path(__file__).resolve().parents[3]
CHART: Final = "charts/mxjob-operator/templates"
ACCOUNT: Final = "mxjob-controller"

Grant = tuple[str, str, str]
"""``(apiGroup, resource, verb)``."""


@dataclass(frozen=True)
class Install:
    """One way to install the operator: its base's RBAC files, and each option's."""

    name: str
    base: tuple[str, ...]
    kueue_workloads: tuple[str, ...]
    """With the controller's ``--kueue-workloads``."""
    job_network_policy: tuple[str, ...]
    """With the controller's ``--job-network-policy``."""

    def files(self, *, kueue_workloads: bool, job_network_policy: bool) -> tuple[str, ...]:
        """The RBAC files applied with those options."""
        return (
            *self.base,
            *(self.kueue_workloads if kueue_workloads else ()),
            *(self.job_network_policy if job_network_policy else ()),
        )


INSTALLS: Final = (
    Install(
        name="kustomize",
        base=("manifests/base/rbac.yaml",),
        kueue_workloads=("manifests/components/kueue-workloads/rbac.yaml",),
        job_network_policy=("manifests/components/network-policies/jobs/rbac.yaml",),
    ),
    Install(
        name="helm",
        base=(f"{CHART}/rbac.yaml",),
        kueue_workloads=(f"{CHART}/kueue-workloads-rbac.yaml",),
        job_network_policy=(f"{CHART}/network-policies.yaml",),
    ),
)

_TEMPLATE_COMMENT = re.compile(r"\{\{-?\s*/\*.*?\*/\s*-?\}\}", re.DOTALL)
_ACTION_LINE = re.compile(r"^[ \t]*\{\{.*\}\}[ \t]*$", re.MULTILINE)
_ACTION = re.compile(r"\{\{.*?\}\}")


def untemplated(text: str) -> str:
    """A chart template as YAML: comments and lines holding only an action (``if``, ``end``,
    an ``include`` of labels) dropped, any other action a placeholder."""
    text = _TEMPLATE_COMMENT.sub("", text)
    text = _ACTION_LINE.sub("", text)
    return _ACTION.sub("templated", text)


def documents(relative: str, *, root: Path = ROOT) -> list[dict[str, Any]]:
    """The objects of one install file (a template read as :func:`untemplated`)."""
    text = (root / relative).read_text(encoding="utf-8")
    if relative.startswith("charts/"):
        text = untemplated(text)
    return [doc for doc in yaml.safe_load_all(text) if isinstance(doc, dict)]


def _bound_to_the_controller(docs: Iterable[Mapping[str, Any]]) -> set[str]:
    return {
        str(doc["roleRef"]["name"])
        for doc in docs
        if doc.get("kind") == "ClusterRoleBinding"
        and any(
            s.get("kind") == "ServiceAccount" and s.get("name") == ACCOUNT
            for s in doc.get("subjects") or []
        )
    }


def granted(files: Iterable[str], *, root: Path = ROOT) -> frozenset[Grant]:
    """Every ``(apiGroup, resource, verb)`` the files grant the controller in every namespace."""
    docs = [doc for relative in files for doc in documents(relative, root=root)]
    roles = _bound_to_the_controller(docs)
    return frozenset(
        (group, resource, verb)
        for doc in docs
        if doc.get("kind") == "ClusterRole" and doc["metadata"]["name"] in roles
        for rule in doc.get("rules") or []
        if not rule.get("resourceNames")
        for group in rule.get("apiGroups") or []
        for resource in rule.get("resources") or []
        for verb in rule.get("verbs") or []
    )
