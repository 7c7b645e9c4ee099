"""The install profile's pure rules: which program an image runs as, and its pod's network."""

from __future__ import annotations

import subprocess
from pathlib import Path

from localkube.kubelet.profile.entrypoints import ExecProfile, image_repository
from localkube.kubelet.profile.probes import probe_spec
from localkube.kubelet.profile.sandbox import (
    bind_to_pod_ip,
    in_mount_namespace,
    missing_mount_points,
    mounted_anywhere,
    remove_empty_tree,
)
from localkube.kubelet.profile.volumes import Mount


def test_an_image_is_matched_by_repository_whatever_its_tag_or_digest() -> None:
    assert image_repository("mxjob-operator/webhook:0.1.0") == "mxjob-operator/webhook"
    assert image_repository("registry:5000/a/b@sha256:00") == "registry:5000/a/b"
    assert image_repository("registry:5000/a/b") == "registry:5000/a/b"
    profile = ExecProfile(entrypoints={"mxjob-operator/webhook": "/venv/bin/mxjob-webhook"})
    assert profile.entrypoint("mxjob-operator/webhook:0.1.0") == "/venv/bin/mxjob-webhook"
    assert profile.entrypoint("busybox") is None


def test_listen_addresses_on_every_interface_bind_to_the_pod_ip() -> None:
    argv = ["--bind=0.0.0.0:9443", "--metrics-bind-address=:8080", ":81", "[::]:82", "--x=a:1"]
    assert bind_to_pod_ip(argv, "198.18.0.2") == [
        "--bind=198.18.0.2:9443",
        "--metrics-bind-address=198.18.0.2:8080",
        "198.18.0.2:81",
        "198.18.0.2:82",
        "--x=a:1",
    ]


def test_named_probe_ports_resolve_to_the_container_port() -> None:
    container = {
        "ports": [{"name": "https", "containerPort": 9443}],
        "readinessProbe": {
            "httpGet": {"path": "/readyz", "port": "https", "scheme": "HTTPS"},
            "periodSeconds": 5,
            "failureThreshold": 2,
        },
    }
    spec = probe_spec(container, "readinessProbe")
    assert spec is not None
    assert (spec.kind, spec.port, spec.path, spec.https, spec.period, spec.failure_threshold) == (
        "http", 9443, "/readyz", True, 5.0, 2
    )  # fmt: skip
    assert probe_spec(container, "livenessProbe") is None


def test_a_mount_over_the_directory_holding_the_sources_hides_none_of_them(
    tmp_path: Path,
) -> None:
    """An emptyDir on a parent of the kubelet's files (``/tmp``) is mounted after the rest."""
    empty, secret = tmp_path / "empty", tmp_path / "secret"
    empty.mkdir()
    secret.mkdir()
    (secret / "key").write_text("k")
    target = tmp_path / "seen"
    argv = in_mount_namespace(
        [Mount(empty, str(tmp_path), False), Mount(secret, str(target), True)],
        ["sh", "-c", f"cat {target}/key; touch {target}/x 2>/dev/null || echo read-only"],
    )
    result = subprocess.run(argv, capture_output=True, text=True, check=True)
    assert result.stdout == "k" + "read-only\n"


def test_mount_points_made_on_the_host_are_known_and_removed_when_empty(tmp_path: Path) -> None:
    existing = tmp_path / "etc"
    existing.mkdir()
    mounts = [
        Mount(tmp_path, str(tmp_path / "run" / "secrets" / "sa"), True),
        Mount(tmp_path, str(tmp_path / "run" / "secrets" / "other"), True),
        Mount(tmp_path, str(existing), False),
        Mount(tmp_path, str(existing / "tls"), True),
    ]
    made = missing_mount_points(mounts)
    assert made == [tmp_path / "run", existing / "tls"]
    (tmp_path / "run" / "secrets" / "sa").mkdir(parents=True)
    (existing / "tls").mkdir()
    assert all(remove_empty_tree(path) for path in made)
    assert not (tmp_path / "run").exists() and existing.is_dir()


def test_a_file_is_bound_onto_a_file_made_for_it_and_removed_with_the_mount_points(
    tmp_path: Path,
) -> None:
    """A ``subPath`` mount of one file (Kueue's configuration at ``/<file>.yaml``)."""
    source = tmp_path / "volume" / "config.yaml"
    source.parent.mkdir()
    source.write_text("kind: Configuration\n")
    target = tmp_path / "root" / "config.yaml"
    mounts = [Mount(source, str(target), True)]
    made = missing_mount_points(mounts)
    argv = in_mount_namespace(mounts, ["cat", str(target)])
    result = subprocess.run(argv, capture_output=True, text=True, check=True)
    assert result.stdout == "kind: Configuration\n"
    assert made == [tmp_path / "root"] and target.is_file() and target.stat().st_size == 0
    assert all(remove_empty_tree(path) for path in made)
    assert not (tmp_path / "root").exists()


def test_a_made_directory_that_now_holds_a_file_is_kept(tmp_path: Path) -> None:
    (tmp_path / "made" / "deep").mkdir(parents=True)
    (tmp_path / "made" / "deep" / "file").write_text("x")
    assert not remove_empty_tree(tmp_path / "made")
    assert (tmp_path / "made" / "deep" / "file").exists()


def test_a_mount_over_the_checkout_binds_the_checkout_back() -> None:
    """An emptyDir on /tmp must not hide a program that runs from a checkout under /tmp."""
    mounts = [Mount(Path("/k/tmp-vol"), "/tmp", False), Mount(Path("/k/tls"), "/etc/tls", True)]
    script = in_mount_namespace(mounts, ["prog"], keep_visible=["/tmp/ck/repo", "/work/elsewhere"])[
        -3
    ]
    lines = script.splitlines()
    assert "exec {keep0}</tmp/ck/repo" in lines
    assert not any("/work/elsewhere" in line for line in lines)
    bind_back = lines.index('mount --no-canonicalize --bind "/proc/self/fd/$keep0" /tmp/ck/repo')
    assert bind_back > lines.index('mount --no-canonicalize --bind "/proc/self/fd/$fd0" /tmp')
    assert lines.index("mount -o remount,bind,ro /etc/tls") > bind_back


def test_a_mount_point_a_running_pod_mounts_on_is_known_as_in_use(tmp_path: Path) -> None:
    """Removing it would unmount the pod's volume: the kubelet that made it leaves it then."""
    source, target = tmp_path / "volume", tmp_path / "run" / "secrets" / "sa"
    source.mkdir()
    (source / "token").write_text("t")
    argv = in_mount_namespace([Mount(source, str(target), True)], ["sh", "-c", "echo up; cat"])
    pod = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert pod.stdout is not None and pod.stdout.readline() == "up\n"
        assert mounted_anywhere(target)
        assert mounted_anywhere(tmp_path / "run")  # a mount under it counts too
        assert not mounted_anywhere(source)  # the source is no mount point
        assert not (target / "token").exists()  # the host sees the empty mount point only
    finally:
        assert pod.stdin is not None
        pod.stdin.close()
        pod.wait(timeout=10)
    assert not mounted_anywhere(target)
    assert remove_empty_tree(tmp_path / "run")
