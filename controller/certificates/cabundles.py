"""The ``caBundle`` fields of the webhook configurations and the CRD: read and patched as data.

Pure: the certificate keeper (controller/certificates/keeper.py) fetches the objects and sends
the patches. A JSON patch per object, each ``replace`` guarded by a ``test`` of the webhook's name
at that index, changes the ``caBundle`` and nothing else: the rest of the object stays owned by
whoever applied it (``kubectl apply``, Helm), who never sets a ``caBundle`` in the in-cluster
install and so never fights the keeper over it.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

MUTATING: Final = "mutatingwebhookconfigurations"
VALIDATING: Final = "validatingwebhookconfigurations"
CRDS: Final = "customresourcedefinitions"


@dataclass(frozen=True)
class BundleSite:
    """One object that carries ``caBundle`` fields, and what each holds now."""

    plural: str
    name: str
    bundles: tuple[bytes, ...]
    """The decoded ``caBundle`` of each webhook (or of the CRD conversion), in order."""
    patch_paths: tuple[tuple[str, str | None], ...]
    """The JSON-pointer of each ``caBundle``, and the webhook name to test at that index."""

    def holds(self, bundle: bytes) -> bool:
        return all(found == bundle for found in self.bundles)


def _decode(raw: Any) -> bytes:
    try:
        return base64.b64decode(str(raw or ""), validate=True)
    except (binascii.Error, ValueError):
        return b""


def webhook_site(plural: str, configuration: Mapping[str, Any]) -> BundleSite:
    """The ``caBundle`` of every webhook of a webhook configuration."""
    webhooks = configuration.get("webhooks") or []
    return BundleSite(
        plural=plural,
        name=str(configuration.get("metadata", {}).get("name", "")),
        bundles=tuple(_decode((w.get("clientConfig") or {}).get("caBundle")) for w in webhooks),
        patch_paths=tuple(
            (f"/webhooks/{index}/clientConfig/caBundle", str(w.get("name")))
            for index, w in enumerate(webhooks)
        ),
    )


def crd_site(crd: Mapping[str, Any]) -> BundleSite | None:
    """The conversion webhook's ``caBundle``; ``None`` when the CRD converts no versions."""
    conversion = (crd.get("spec") or {}).get("conversion") or {}
    webhook = conversion.get("webhook")
    if conversion.get("strategy") != "Webhook" or not isinstance(webhook, Mapping):
        return None
    return BundleSite(
        plural=CRDS,
        name=str(crd.get("metadata", {}).get("name", "")),
        bundles=(_decode((webhook.get("clientConfig") or {}).get("caBundle")),),
        patch_paths=(("/spec/conversion/webhook/clientConfig/caBundle", None),),
    )


def bundle_patch(site: BundleSite, bundle: bytes) -> list[dict[str, Any]]:
    """The JSON patch that sets every ``caBundle`` of ``site`` to ``bundle``."""
    encoded = base64.b64encode(bundle).decode()
    operations: list[dict[str, Any]] = []
    for path, webhook_name in site.patch_paths:
        if webhook_name is not None:
            name_path = path.removesuffix("/clientConfig/caBundle") + "/name"
            operations.append({"op": "test", "path": name_path, "value": webhook_name})
        operations.append({"op": "add", "path": path, "value": encoded})
    return operations
