"""The install options of ``manifests/components/`` applied to the local operator's manifests.

A user picks an option by naming its kustomize component in an overlay; the local operator
(``localkube.plane.operator``) installs the CRD and the webhook configurations from the same
files without kustomize, so it applies each chosen component's JSON patches itself, read from
the component. What the tests and ``make dev-up`` run is then what the component installs, not
a second description of it. Pure: the manifests in, the patched manifests out.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonpatch
import yaml

from localkube.base.paths import PROJECT_ROOT

COMPONENTS_DIR = PROJECT_ROOT / "manifests" / "components"


@dataclass(frozen=True, kw_only=True)
class InstallChoices:
    """Which options of the install the local operator takes (all off: the default install)."""

    v1beta1: bool = False
    """``components/v1beta1``: serve MXJob v1beta1 beside v1."""
    validate_on_create: bool = False
    """``components/validate-on-create``: the validating webhook judges CREATE too."""

    @property
    def components(self) -> tuple[str, ...]:
        chosen = {"v1beta1": self.v1beta1, "validate-on-create": self.validate_on_create}
        return tuple(name for name, on in chosen.items() if on)


def _patches(component: str, *, root: Path) -> list[dict[str, Any]]:
    document = yaml.safe_load((root / component / "kustomization.yaml").read_text())
    if document.get("kind") != "Component":
        raise ValueError(f"{component}: not a kustomize Component")
    patches: list[dict[str, Any]] = document.get("patches", [])
    return patches


def _targets(target: dict[str, Any], manifest: dict[str, Any]) -> bool:
    group = str(manifest["apiVersion"]).rpartition("/")[0]
    return bool(
        target.get("kind") == manifest["kind"]
        and target.get("name") == manifest["metadata"]["name"]
        and target.get("group", group) == group
    )


def apply_choices(
    manifest: dict[str, Any], choices: InstallChoices, *, root: Path = COMPONENTS_DIR
) -> dict[str, Any]:
    """``manifest`` as the chosen components patch it (a copy; unchanged when none targets it).

    A component patch that fails (its ``test`` operation included) raises
    ``jsonpatch.JsonPatchException``: the manifest is no longer the one the component was
    written for, and kustomize would refuse it the same way.
    """
    result = copy.deepcopy(manifest)
    for component in choices.components:
        for patch in _patches(component, root=root):
            if _targets(patch["target"], result):
                result = jsonpatch.apply_patch(result, yaml.safe_load(patch["patch"]))
    return result
