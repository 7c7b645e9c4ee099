"""localkube.thirdparty.network_policies: kube-network-policies' command line, its mount
namespace for client-go's in-cluster files, and the RBAC taken from its release."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from localkube.thirdparty import network_policies as knp

INSTALL_YAML = """\
kind: ClusterRole
apiVersion: rbac.authorization.k8s.io/v1
metadata: {name: kube-network-policies}
---
kind: ServiceAccount
apiVersion: v1
metadata: {name: kube-network-policies, namespace: kube-system}
---
kind: DaemonSet
apiVersion: apps/v1
metadata: {name: kube-network-policies, namespace: kube-system}
"""


def test_the_program_judges_this_nodes_pods_closed_and_without_nri() -> None:
    argv = knp.argv(Path("/b/kube-network-policies"), node_name="n1", metrics_address="a:1")
    assert argv[0] == "/b/kube-network-policies"
    assert "--hostname-override=n1" in argv and "--metrics-bind-address=a:1" in argv
    assert "--disable-nri" in argv and "--fail-open=false" in argv


def test_its_credentials_are_mounted_in_its_own_namespace_then_it_replaces_the_shell(
    tmp_path: Path,
) -> None:
    wrapped = knp.in_own_mounts(["/b/knp", "--v=2"], secrets=tmp_path)
    assert wrapped[:4] == ["unshare", "--mount", "--propagation", "private"]
    assert wrapped[-3:] == [str(tmp_path), "/b/knp", "--v=2"]
    script = wrapped[wrapped.index("-c") + 1]
    assert "tmpfs /run" in script and script.endswith('exec "$@"')


def test_the_mount_script_puts_the_files_where_client_go_reads_them(tmp_path: Path) -> None:
    """The script itself, run by sh with /run and mount replaced by a folder and a no-op."""
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    (secrets / "token").write_text("t0ken")
    (secrets / "ca.crt").write_text("ca")
    run = tmp_path / "run"
    script = knp.MOUNT_SCRIPT.replace("mount -t tmpfs -o mode=0755,size=1m tmpfs /run", "true")
    script = script.replace("/run/", f"{run}/")
    result = subprocess.run(
        ["sh", "-c", script, "knp", str(secrets), "cat", f"{run}/secrets/kubernetes.io/"
         "serviceaccount/token"], capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert result.stdout == "t0ken"
    assert knp.IN_CLUSTER_SECRETS == "/run/secrets/kubernetes.io/serviceaccount"


def test_the_release_s_rbac_is_applied_without_its_daemonset() -> None:
    kinds = [d["kind"] for d in knp.install_rbac(INSTALL_YAML)]
    assert kinds == ["ClusterRole", "ServiceAccount"]


def test_the_api_server_address_becomes_the_in_cluster_variables() -> None:
    assert knp.api_endpoint("https://198.18.0.1:40123") == ("198.18.0.1", "40123")
    with pytest.raises(knp.NetworkPolicyError, match="no host and port"):
        knp.api_endpoint("https://198.18.0.1")


def test_a_queue_is_bound_when_the_kernel_lists_it_first_on_a_line() -> None:
    listing = (
        "  100  12345     0 2 65531     0     0        0  1\n    7      1     0 2  128 0 0 0 1\n"
    )
    assert knp.queue_bound(100, listing=listing)
    assert knp.queue_bound(7, listing=listing)
    assert not knp.queue_bound(10, listing=listing)
    assert not knp.queue_bound(100, listing="")


def test_the_dns_workaround_is_off_it_needs_the_queue_expression_too() -> None:
    argv = knp.argv(Path("/b/knp"), node_name="n1", metrics_address="a:1")
    assert "--netfilter-bug-1766-fix=false" in argv
