"""What a release writes from the registry and the pushed digests: the references, the chart's
values (which the chart's own schema must accept) and the kustomize overlay."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from jsonschema import Draft7Validator

from localkube.base.paths import PROJECT_ROOT
from localkube.scenarios.release_plan import (
    IMAGES,
    Registry,
    ReleaseError,
    chart_values,
    checked_digest,
    components_named,
    kustomization,
    pinned,
)

CHART = PROJECT_ROOT / "charts" / "mxjob-operator"
DIGESTS = {"webhook": "sha256:" + "a" * 64, "controller": "sha256:" + "b" * 64}


@pytest.mark.parametrize(
    ("value", "host", "base"),
    [
        ("127.0.0.1:5000/mxjob", "127.0.0.1:5000", "127.0.0.1:5000/mxjob"),
        ("oci://198.18.0.1:443/a/b/", "198.18.0.1:443", "198.18.0.1:443/a/b"),
        ("registry.example.com", "registry.example.com", "registry.example.com"),
    ],
)
def test_a_registry_is_a_host_and_a_prefix(value: str, host: str, base: str) -> None:
    registry = Registry.parse(value)
    assert (registry.host, registry.base) == (host, base)
    assert registry.repository("webhook") == f"{base}/webhook"
    assert registry.charts == f"oci://{base}/charts"


@pytest.mark.parametrize("value", ["", "https://r.example.com", "r:port/x", "r/UPPER", "r//x"])
def test_a_registry_that_is_not_host_port_prefix_is_refused(value: str) -> None:
    with pytest.raises(ReleaseError, match="is not host"):
        Registry.parse(value)


def test_a_digest_is_taken_stripped_and_only_as_sha256() -> None:
    assert checked_digest(DIGESTS["webhook"] + "\n", what="x") == DIGESTS["webhook"]
    for wrong in ("sha256:abc", "sha512:" + "a" * 64, "sha256:" + "A" * 64, ""):
        with pytest.raises(ReleaseError, match=r"x: .* is not a sha256 digest"):
            checked_digest(wrong, what="x")
    assert pinned("r/webhook", DIGESTS["webhook"]) == f"r/webhook@{DIGESTS['webhook']}"


def test_the_charts_values_name_the_registry_and_the_digests_and_pass_its_schema() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    schema = Draft7Validator(json.loads((CHART / "values.schema.json").read_text()))
    assert not list(schema.iter_errors(values))
    chart_values(values, Registry.parse("127.0.0.1:5000/mxjob"), DIGESTS)
    for name in IMAGES:
        image = values["images"][name]
        assert image["repository"] == f"127.0.0.1:5000/mxjob/{name}"
        assert image["digest"] == DIGESTS[name]
    assert not list(schema.iter_errors(values))


def test_the_charts_schema_refuses_a_digest_that_is_not_sha256() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    values["images"]["webhook"]["digest"] = "sha256:abc"
    schema = Draft7Validator(json.loads((CHART / "values.schema.json").read_text()))
    assert [e.path[-1] for e in schema.iter_errors(values)] == ["digest"]


def test_the_overlay_installs_the_base_with_both_images_by_digest(tmp_path: Path) -> None:
    base = PROJECT_ROOT / "manifests" / "overlays" / "in-cluster"
    at = tmp_path / "out" / "overlay"
    text = kustomization(Registry.parse("127.0.0.1:5000/mxjob"), DIGESTS, base=base, at=at)
    document = yaml.safe_load(text)
    (resource,) = document["resources"]
    assert (at / resource).resolve() == base.resolve()
    assert document["images"] == [
        {"name": f"mxjob-operator/{name}", "newName": f"127.0.0.1:5000/mxjob/{name}",
         "digest": DIGESTS[name]}
        for name in IMAGES
    ]  # fmt: skip


def test_an_overlay_is_never_written_with_a_missing_digest(tmp_path: Path) -> None:
    with pytest.raises(KeyError):
        kustomization(Registry.parse("r"), {"webhook": DIGESTS["webhook"]}, base=tmp_path,
                      at=tmp_path)  # fmt: skip


def test_an_sboms_components_are_named_lower_case() -> None:
    sbom = {"components": [{"name": "Flask"}, {"name": "gunicorn"}]}
    assert components_named(sbom) == {"flask", "gunicorn"}
    assert components_named({}) == set()
