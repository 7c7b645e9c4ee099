"""The distribution registry's configuration for the release tests."""

from __future__ import annotations

from pathlib import Path

import yaml

from localkube.thirdparty.registry import config_yaml


def test_the_registry_serves_tls_on_the_given_address_from_its_own_storage(
    tmp_path: Path,
) -> None:
    config = yaml.safe_load(
        config_yaml(
            storage=tmp_path / "s",
            address="127.0.0.1:5000",
            certificate=tmp_path / "tls.crt",
            key=tmp_path / "tls.key",
        )
    )
    assert config["version"] == 0.1
    assert config["storage"]["filesystem"] == {"rootdirectory": str(tmp_path / "s")}
    assert config["storage"]["delete"] == {"enabled": True}
    assert config["http"] == {
        "addr": "127.0.0.1:5000",
        "tls": {"certificate": str(tmp_path / "tls.crt"), "key": str(tmp_path / "tls.key")},
    }
