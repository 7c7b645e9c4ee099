"""What each kind of volume holds, computed from lookups (no API server, no files)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from localkube.kubelet.profile.volumes import VolumeError, volume_files, write_volumes

POD = {
    "metadata": {"name": "p", "namespace": "ns", "uid": "u-1"},
    "spec": {"serviceAccountName": "robot"},
}
SECRETS = {"tls": {"tls.crt": b"CERT", "tls.key": b"KEY", "ca.crt": b"CA"}}
CONFIG_MAPS = {"kube-root-ca.crt": {"ca.crt": b"ROOT"}}


def secret(name: str) -> Mapping[str, bytes] | None:
    return SECRETS.get(name)


def config_map(name: str) -> Mapping[str, bytes] | None:
    return CONFIG_MAPS.get(name)


def token(account: str, audiences: list[str], seconds: int) -> str:
    return f"token-for-{account}-{','.join(audiences)}-{seconds}"


def files(volume: Mapping[str, Any]) -> object:
    return volume_files(POD, volume, secret=secret, config_map=config_map, token=token)


def test_a_secret_volume_holds_every_key_with_its_default_mode() -> None:
    got = files({"name": "tls", "secret": {"secretName": "tls", "defaultMode": 0o440}})
    assert got == {
        "tls.crt": (b"CERT", 0o440),
        "tls.key": (b"KEY", 0o440),
        "ca.crt": (b"CA", 0o440),
    }


def test_items_select_keys_and_rename_them() -> None:
    volume = {
        "name": "tls",
        "secret": {
            "secretName": "tls",
            "items": [{"key": "ca.crt", "path": "x/ca.pem", "mode": 0o400}],
        },
    }
    assert files(volume) == {"x/ca.pem": (b"CA", 0o400)}


def test_a_missing_secret_waits_unless_optional() -> None:
    with pytest.raises(VolumeError, match="secret 'gone' not found"):
        files({"name": "v", "secret": {"secretName": "gone"}})
    assert files({"name": "v", "secret": {"secretName": "gone", "optional": True}}) == {}


def test_an_empty_dir_is_an_empty_writable_directory() -> None:
    assert files({"name": "tmp", "emptyDir": {"medium": "Memory"}}) is None


def test_the_projected_token_volume_holds_a_pod_bound_token_the_ca_and_the_namespace() -> None:
    volume = {
        "name": "kube-api-access-x",
        "projected": {
            "defaultMode": 420,
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {
                    "configMap": {
                        "name": "kube-root-ca.crt",
                        "items": [{"key": "ca.crt", "path": "ca.crt"}],
                    }
                },
                {
                    "downwardAPI": {
                        "items": [
                            {"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}}
                        ]
                    }
                },
            ],
        },
    }
    assert files(volume) == {
        "token": (b"token-for-robot--3607", 420),
        "ca.crt": (b"ROOT", 420),
        "namespace": (b"ns", 420),
    }


def test_write_volumes_fills_one_directory_per_volume_and_returns_the_mounts(
    tmp_path: Path,
) -> None:
    pod = {
        **POD,
        "spec": {
            "volumes": [
                {"name": "tls", "secret": {"secretName": "tls", "defaultMode": 0o440}},
                {"name": "tmp", "emptyDir": {}},
            ]
        },
    }
    container = {
        "volumeMounts": [
            {"name": "tls", "mountPath": "/etc/tls", "readOnly": True},
            {"name": "tmp", "mountPath": "/tmp"},
        ]
    }
    mounts = write_volumes(
        pod, container, root=tmp_path, secret=secret, config_map=config_map, token=token
    )
    assert [(m.source, m.target, m.read_only) for m in mounts] == [
        (tmp_path / "tls", "/etc/tls", True),
        (tmp_path / "tmp", "/tmp", False),
    ]
    assert (tmp_path / "tls" / "tls.key").read_bytes() == b"KEY"
    assert (tmp_path / "tls" / "tls.key").stat().st_mode & 0o777 == 0o440
    assert list((tmp_path / "tmp").iterdir()) == []


def test_a_sub_path_mounts_one_key_of_the_volume_as_a_file(tmp_path: Path) -> None:
    """Kueue mounts its configuration this way: one ConfigMap key at a file path."""
    pod = {**POD, "spec": {"volumes": [{"name": "cfg", "configMap": {"name": "kube-root-ca.crt"}}]}}
    container = {"volumeMounts": [{"name": "cfg", "mountPath": "/ca.crt", "subPath": "ca.crt"}]}
    (mount,) = write_volumes(
        pod, container, root=tmp_path, secret=secret, config_map=config_map, token=token
    )
    assert (mount.source, mount.target) == (tmp_path / "cfg" / "ca.crt", "/ca.crt")
    assert mount.source.read_bytes() == b"ROOT"


@pytest.mark.parametrize("sub_path", ["../escape", "/abs"])
def test_a_sub_path_must_stay_in_its_volume(tmp_path: Path, sub_path: str) -> None:
    pod = {**POD, "spec": {"volumes": [{"name": "tmp", "emptyDir": {}}]}}
    container = {"volumeMounts": [{"name": "tmp", "mountPath": "/x", "subPath": sub_path}]}
    with pytest.raises(VolumeError, match="must stay in the volume"):
        write_volumes(
            pod, container, root=tmp_path, secret=secret, config_map=config_map, token=token
        )
