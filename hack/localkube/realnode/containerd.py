"""containerd for the real node: its configuration, its image imports, its shims.

Everything containerd keeps lives in the node's state directory (root, state, sockets, network
namespaces, runc's state of each container), so a node's teardown removes it whole; only the
shims' sockets have a fixed place. Two settings this machine needs: runc cannot
lower its own ``oom_score_adj`` here (``restrict_oom_score_adj``), and cgroups are managed by
the cgroupfs driver (no systemd). The sandbox ("pause") image is the project's own, built from
Kubernetes' ``pause.c`` (``localkube.images``): no registry is reachable. Registries are
configured by ``hosts.toml`` files under ``certs.d`` (``config_path``), none by default; a test
that serves a registry of its own trusts it there (:func:`trust_registry`).
"""

from __future__ import annotations

import hashlib
import subprocess
from dataclasses import dataclass
from pathlib import Path

RUNC = "/usr/sbin/runc"
CNI_BIN_DIR = "/usr/lib/cni"
NAMESPACE = "k8s.io"
"""containerd's namespace of the CRI plugin: what the kubelet's containers live in."""
SHIM_SOCKET_DIR = Path("/run/containerd/s")
"""Where every runc shim puts its socket, whatever containerd's state dir (pkg/shim)."""


class ContainerdError(RuntimeError):
    """containerd could not import an image; the message has ctr's error."""


@dataclass(frozen=True)
class ContainerdPaths:
    """containerd's files inside the node's state directory."""

    root: Path
    state: Path
    socket: Path
    cni_conf_dir: Path
    hosts_dir: Path
    """The registry hosts' configuration (``config_path``): empty, so containerd's defaults,
    until a test trusts a registry of its own (:func:`trust_registry`)."""

    @classmethod
    def under(cls, directory: Path) -> ContainerdPaths:
        return cls(
            root=directory / "root",
            state=directory / "state",
            socket=directory / "containerd.sock",
            cni_conf_dir=directory / "net.d",
            hosts_dir=directory / "certs.d",
        )


def _quote(value: str | Path) -> str:
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def config_toml(paths: ContainerdPaths, *, sandbox_image: str) -> str:
    """containerd's ``config.toml`` (version 3)."""
    return f"""version = 3
root = {_quote(paths.root)}
state = {_quote(paths.state)}
disabled_plugins = ["io.containerd.nri.v1.nri", "io.containerd.internal.v1.tracing"]

[grpc]
  address = {_quote(paths.socket)}

[ttrpc]
  address = {_quote(paths.socket.with_name("containerd.ttrpc.sock"))}

[debug]
  address = ""

[metrics]
  address = ""

[plugins]
  [plugins.'io.containerd.internal.v1.opt']
    path = {_quote(paths.root / "opt")}
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = "overlayfs"
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = {_quote(sandbox_image)}
    [plugins.'io.containerd.cri.v1.images'.registry]
      config_path = {_quote(paths.hosts_dir)}
  [plugins.'io.containerd.cri.v1.runtime']
    restrict_oom_score_adj = true
    netns_mounts_under_state_dir = true
    enable_selinux = false
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = [{_quote(CNI_BIN_DIR)}]
      conf_dir = {_quote(paths.cni_conf_dir)}
      max_conf_num = 1
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = "runc"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          BinaryName = {_quote(RUNC)}
          Root = {_quote(paths.state / "runc")}
          SystemdCgroup = false
  [plugins.'io.containerd.grpc.v1.cri']
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
"""


def ctr(bin_dir: Path, socket: Path, *args: str, timeout: float = 300) -> str:
    """Run ``ctr`` against this node's containerd in the CRI namespace; its stdout."""
    result = subprocess.run(
        [str(bin_dir / "ctr"), f"--address={socket}", f"--namespace={NAMESPACE}", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )
    if result.returncode != 0:
        raise ContainerdError(f"ctr {' '.join(args)}: {result.stderr.strip()}")
    return result.stdout


def import_image(bin_dir: Path, socket: Path, archive: Path) -> None:
    """Load a docker-archive into the CRI namespace, under the name the archive carries.

    ``--no-unpack`` is left off: the kubelet starts containers from unpacked snapshots, and
    ``imagePullPolicy: Never`` (no registry here) needs the image complete up front.
    """
    ctr(bin_dir, socket, "images", "import", "--snapshotter=overlayfs", str(archive))


def hosts_toml(address: str, *, ca_file: Path) -> str:
    """A ``hosts.toml`` for the registry at ``address`` (``host:port``): HTTPS, its certificate
    verified with ``ca_file``, pulls and resolves only."""
    server = _quote(f"https://{address}")
    return f"""server = {server}

[host.{server}]
  capabilities = ["pull", "resolve"]
  ca = {_quote(ca_file)}
"""


def trust_registry(paths: ContainerdPaths, address: str, *, ca_file: Path) -> Path:
    """Make containerd trust ``ca_file`` for the registry at ``address``, from its next pull on
    (containerd reads ``config_path`` at each pull, no restart); the directory written, which
    removing undoes it."""
    directory = paths.hosts_dir / address
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "hosts.toml").write_text(hosts_toml(address, ca_file=ca_file))
    return directory


def shim_socket_paths(containerd_socket: Path, shim_id: str) -> list[Path]:
    """The sockets a runc shim of this containerd made for ``shim_id`` (pkg/shim names them
    after a hash of the containerd address, the namespace and the id)."""
    base = Path(str(containerd_socket)) / NAMESPACE / shim_id
    return [
        SHIM_SOCKET_DIR / hashlib.sha256(str(path).encode()).hexdigest()
        for path in (base, base / "debug")
    ]
