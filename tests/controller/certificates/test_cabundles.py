"""cabundles: the caBundle fields read from objects and the JSON patch that sets them."""

from __future__ import annotations

import base64
from typing import Any

import jsonpatch

from controller.certificates.cabundles import MUTATING, bundle_patch, crd_site, webhook_site


def configuration(*bundles: bytes) -> dict[str, Any]:
    return {
        "metadata": {"name": "hooks"},
        "webhooks": [
            {
                "name": f"w{i}.example.com",
                "clientConfig": {"caBundle": base64.b64encode(b).decode()},
            }
            for i, b in enumerate(bundles)
        ],
    }


def test_every_webhook_bundle_is_read_and_patched_by_name_at_its_index() -> None:
    hooks = configuration(b"old", b"")
    site = webhook_site(MUTATING, hooks)
    assert site.bundles == (b"old", b"") and not site.holds(b"new")
    patched = jsonpatch.apply_patch(hooks, bundle_patch(site, b"new"))
    assert webhook_site(MUTATING, patched).holds(b"new")
    assert [w["name"] for w in patched["webhooks"]] == ["w0.example.com", "w1.example.com"]


def test_a_patch_fails_when_the_webhooks_were_reordered_since_they_were_read() -> None:
    hooks = configuration(b"a", b"b")
    operations = bundle_patch(webhook_site(MUTATING, hooks), b"new")
    hooks["webhooks"].reverse()
    try:
        jsonpatch.apply_patch(hooks, operations)
    except jsonpatch.JsonPatchTestFailed:
        return
    raise AssertionError("the name test did not guard the index")


def test_a_bundle_that_is_not_base64_reads_as_empty() -> None:
    hooks = configuration(b"x")
    hooks["webhooks"][0]["clientConfig"]["caBundle"] = "%%%"
    assert webhook_site(MUTATING, hooks).bundles == (b"",)


def test_the_crd_conversion_bundle_is_a_site_only_with_webhook_conversion() -> None:
    crd: dict[str, Any] = {
        "metadata": {"name": "mxjobs.kubeflow.org"},
        "spec": {"conversion": {"strategy": "Webhook", "webhook": {"clientConfig": {}}}},
    }
    site = crd_site(crd)
    assert site is not None and site.bundles == (b"",)
    patched = jsonpatch.apply_patch(crd, bundle_patch(site, b"ca"))
    assert patched["spec"]["conversion"]["webhook"]["clientConfig"]["caBundle"] == "Y2E="
    assert crd_site({"spec": {"conversion": {"strategy": "None"}}}) is None
