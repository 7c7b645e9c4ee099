"""containerd's configuration for the real node, and the names its runc shims use."""

from __future__ import annotations

import hashlib
import tomllib
from pathlib import Path
from typing import Any

from localkube.realnode.containerd import (
    CNI_BIN_DIR,
    NAMESPACE,
    RUNC,
    SHIM_SOCKET_DIR,
    ContainerdPaths,
    config_toml,
    hosts_toml,
    shim_socket_paths,
    trust_registry,
)

CRI_RUNTIME = "io.containerd.cri.v1.runtime"


def config(tmp_path: Path, sandbox: str = "localhost/test/pause:1") -> dict[str, Any]:
    return tomllib.loads(config_toml(ContainerdPaths.under(tmp_path), sandbox_image=sandbox))


def test_the_configuration_is_version_3_toml_with_its_files_inside_the_node(
    tmp_path: Path,
) -> None:
    parsed = config(tmp_path)
    assert parsed["version"] == 3
    for key in ("root", "state"):
        assert Path(parsed[key]).is_relative_to(tmp_path)
    assert Path(parsed["grpc"]["address"]).is_relative_to(tmp_path)
    assert Path(parsed["ttrpc"]["address"]).is_relative_to(tmp_path)
    cni = parsed["plugins"][CRI_RUNTIME]["cni"]
    assert Path(cni["conf_dir"]).is_relative_to(tmp_path)
    assert cni["bin_dirs"] == [CNI_BIN_DIR]


def test_runc_may_start_containers_here_and_the_sandbox_is_pinned(tmp_path: Path) -> None:
    parsed = config(tmp_path, sandbox="localhost/test/pause:9")
    runtime = parsed["plugins"][CRI_RUNTIME]
    assert runtime["restrict_oom_score_adj"] is True
    assert runtime["netns_mounts_under_state_dir"] is True
    options = runtime["containerd"]["runtimes"]["runc"]["options"]
    assert options == {
        "BinaryName": RUNC,
        "SystemdCgroup": False,
        "Root": str(tmp_path / "state" / "runc"),
    }
    images = parsed["plugins"]["io.containerd.cri.v1.images"]
    assert images["pinned_images"]["sandbox"] == "localhost/test/pause:9"
    assert images["snapshotter"] == "overlayfs"


def test_a_path_with_quotes_and_backslashes_stays_one_toml_string(tmp_path: Path) -> None:
    odd = tmp_path / 'a "quoted" \\ dir'
    parsed = tomllib.loads(config_toml(ContainerdPaths.under(odd), sandbox_image="p"))
    assert Path(parsed["root"]).is_relative_to(odd)


def test_shim_sockets_are_named_by_the_hash_of_address_namespace_and_id() -> None:
    socket = Path("/x/containerd.sock")
    found = shim_socket_paths(socket, "abc")
    expected = [
        SHIM_SOCKET_DIR
        / hashlib.sha256(f"/x/containerd.sock/{NAMESPACE}/abc{tail}".encode()).hexdigest()
        for tail in ("", "/debug")
    ]
    assert found == expected
    assert shim_socket_paths(socket, "other") != found


def test_registry_hosts_are_read_from_a_directory_inside_the_node_empty_by_default(
    tmp_path: Path,
) -> None:
    paths = ContainerdPaths.under(tmp_path)
    registry = config(tmp_path)["plugins"]["io.containerd.cri.v1.images"]["registry"]
    assert registry == {"config_path": str(paths.hosts_dir)}
    assert paths.hosts_dir.is_relative_to(tmp_path) and not paths.hosts_dir.exists()


def test_a_trusted_registry_gets_a_hosts_toml_naming_its_ca(tmp_path: Path) -> None:
    paths = ContainerdPaths.under(tmp_path)
    written = trust_registry(paths, "127.0.0.1:5000", ca_file=tmp_path / "ca.crt")
    assert written == paths.hosts_dir / "127.0.0.1:5000"
    hosts = tomllib.loads((written / "hosts.toml").read_text())
    assert hosts == {
        "server": "https://127.0.0.1:5000",
        "host": {"https://127.0.0.1:5000": {"capabilities": ["pull", "resolve"],
                                             "ca": str(tmp_path / "ca.crt")}},
    }  # fmt: skip
    assert (
        hosts_toml("127.0.0.1:5000", ca_file=tmp_path / "ca.crt")
        == (written / "hosts.toml").read_text()
    )
