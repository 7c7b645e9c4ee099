"""``kubectl logs`` on the local control plane: the real kubectl, the real API server, the test
kubelet's TLS log endpoint."""

from __future__ import annotations

import re
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from certs import CertificateAuthority
from localkube.base.api import Api, read_pod_log
from localkube.kubelet.core import TestKubelet
from localkube.plane.controlplane import ControlPlane
from tests.helpers import mxjobs, pods
from tests.helpers.waiting import wait_for

TICKS = 12
"""Lines the follow test's process prints, one each 0.4 s: 4.4 s of output."""
TIMESTAMP = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z"


def _pod(name: str, script: str, *, restart_policy: str = "Never") -> dict[str, Any]:
    """A pod whose ``mxnet`` container runs the python ``script``."""
    main = mxjobs.container(image="local/python", command=["python", "-c", script])
    return pods.pod(name, restart_policy=restart_policy, containers=[main])


def _create(api: Api, namespace: str, pod: dict[str, Any]) -> None:
    api.request("POST", f"/api/v1/namespaces/{namespace}/pods", body=pod)


def _wait_for_phase(
    api: Api, namespace: str, name: str, phases: set[str], timeout: float = 30
) -> dict[str, Any]:
    pod: dict[str, Any] = wait_for(
        f"pod {name} to reach {sorted(phases)}",
        lambda: api.request("GET", f"/api/v1/namespaces/{namespace}/pods/{name}"),
        lambda pod: pod.get("status", {}).get("phase") in phases,
        timeout=timeout,
        interval=0.05,
    )
    return pod


def _logs(plane: ControlPlane, namespace: str, *args: str) -> subprocess.CompletedProcess[str]:
    return plane.kubectl("logs", "-n", namespace, *args, check=False, timeout=30)


def test_the_node_advertises_the_kubelet_port_and_its_loopback_address(
    api: Api, exec_kubelet: TestKubelet
) -> None:
    node = api.request("GET", f"/api/v1/nodes/{exec_kubelet.node_name}")
    assert node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"] == exec_kubelet.log_port
    assert {"type": "InternalIP", "address": "127.0.0.1"} in node["status"]["addresses"]


def test_read_pod_log_reads_what_kubectl_logs_prints_and_nothing_of_a_pod_not_there(
    api: Api, namespace: str, control_plane: ControlPlane, exec_kubelet: TestKubelet
) -> None:
    # A first line that parses as JSON: the log is read as text all the same.
    _create(api, namespace, _pod("reader", "print('{\"a\": 1}')\nprint('trial 1')"))
    _wait_for_phase(api, namespace, "reader", {"Succeeded"})
    printed = _logs(control_plane, namespace, "reader")
    assert printed.returncode == 0, printed.stderr
    assert read_pod_log(api, namespace, "reader") == printed.stdout == '{"a": 1}\ntrial 1\n'
    assert read_pod_log(api, namespace, "not-there") == ""


def test_kubectl_logs_shows_a_finished_pods_output_whole_tailed_limited_and_timestamped(
    api: Api, namespace: str, control_plane: ControlPlane, exec_kubelet: TestKubelet
) -> None:
    script = (
        "import sys, time\n"
        "for i in range(1, 6): print(f'line {i}', flush=True)\n"
        # stdout and stderr are two pipes read apart, as a container runtime reads them: only
        # time orders lines of different streams in the log.
        "time.sleep(0.5)\n"
        "print('to stderr', file=sys.stderr, flush=True)"
    )
    _create(api, namespace, _pod("printer", script))
    _wait_for_phase(api, namespace, "printer", {"Succeeded"})

    whole = _logs(control_plane, namespace, "printer")
    assert whole.returncode == 0, whole.stderr
    assert whole.stdout == "line 1\nline 2\nline 3\nline 4\nline 5\nto stderr\n"

    assert _logs(control_plane, namespace, "printer", "--tail=2").stdout == ("line 5\nto stderr\n")
    assert _logs(control_plane, namespace, "printer", "--limit-bytes=9").stdout == "line 1\nli"
    stamped = _logs(control_plane, namespace, "printer", "--timestamps", "--tail=1").stdout
    assert re.fullmatch(f"{TIMESTAMP} to stderr\n", stamped), stamped
    # -f on a container that has ended prints its log and returns at once.
    started = time.monotonic()
    assert _logs(control_plane, namespace, "printer", "-f").stdout == whole.stdout
    assert time.monotonic() - started < 5


def test_kubectl_logs_follow_streams_lines_as_written_and_ends_when_the_process_exits(
    api: Api, namespace: str, control_plane: ControlPlane, exec_kubelet: TestKubelet
) -> None:
    script = (
        "import time\n"
        f"for i in range({TICKS}):\n"
        "    print(f'tick {i} {time.time():.6f}', flush=True)\n"
        "    time.sleep(0.4)\n"
    )
    _create(api, namespace, _pod("ticker", script))
    _wait_for_phase(api, namespace, "ticker", {"Running", "Succeeded"})
    follower = subprocess.Popen(
        [
            str(control_plane.kubectl_path),
            f"--kubeconfig={control_plane.kubeconfig}",
            "logs",
            "-f",
            "-n",
            namespace,
            "ticker",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert follower.stdout is not None
    arrivals: list[tuple[str, float]] = []
    try:
        for line in follower.stdout:
            arrivals.append((line, time.time()))
        follower.wait(timeout=10)
    finally:
        follower.kill()
    ended = time.time()
    assert follower.returncode == 0, follower.stderr.read() if follower.stderr else ""
    assert [line.split()[:2] for line, _ in arrivals] == [["tick", str(i)] for i in range(TICKS)]
    pod = _wait_for_phase(api, namespace, "ticker", {"Succeeded"}, timeout=5)
    finished = pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"]
    assert finished == 0
    # Lines arrive while the process runs, not all at its end. The stream opens once the pod is
    # Running, which on a loaded machine can be a second or two after its first lines: those
    # arrive at once. Every line printed after the first arrival came on its own, soon after it
    # was printed, and the arrivals span seconds.
    opened = arrivals[0][1]
    printed = [float(line.split()[2]) for line, _ in arrivals]
    live = [arrived - at for (_, arrived), at in zip(arrivals, printed, strict=True) if at > opened]
    assert len(live) >= TICKS // 2, (printed, opened)
    assert max(live) < 1.0, live
    assert arrivals[-1][1] - arrivals[0][1] > 1.5
    # The stream ends with the process (it sleeps 0.4 s after its last line).
    assert ended - float(arrivals[-1][0].split()[2]) < 3.0


def test_kubectl_logs_refuses_an_unknown_container_and_a_missing_previous_instance(
    api: Api, namespace: str, control_plane: ControlPlane, exec_kubelet: TestKubelet
) -> None:
    _create(api, namespace, _pod("quiet", "print('hi')"))
    _wait_for_phase(api, namespace, "quiet", {"Succeeded"})
    unknown = _logs(control_plane, namespace, "quiet", "-c", "nope")
    assert unknown.returncode != 0
    assert "container nope is not valid for pod quiet" in unknown.stderr
    previous = _logs(control_plane, namespace, "quiet", "--previous")
    assert previous.returncode != 0
    assert 'previous terminated container "mxnet" in pod "quiet" not found' in previous.stderr
    missing = _logs(control_plane, namespace, "ghost")
    assert missing.returncode != 0
    assert 'pods "ghost" not found' in missing.stderr


def test_kubectl_logs_previous_shows_the_instance_before_an_in_place_restart(
    api: Api, namespace: str, control_plane: ControlPlane, exec_kubelet: TestKubelet, tmp_path: Path
) -> None:
    marker = tmp_path / "attempts"
    script = (
        f"import pathlib,sys; p=pathlib.Path({str(marker)!r}); n=len(p.read_text()) "
        "if p.exists() else 0; p.write_text('x'*(n+1)); print(f'attempt {n}'); "
        "sys.exit(0 if n>=1 else 7)"
    )
    _create(api, namespace, _pod("flaky", script, restart_policy="OnFailure"))
    _wait_for_phase(api, namespace, "flaky", {"Succeeded"})
    assert _logs(control_plane, namespace, "flaky").stdout == "attempt 1\n"
    assert _logs(control_plane, namespace, "flaky", "--previous").stdout == "attempt 0\n"


def test_manual_mode_answers_with_what_the_test_wrote_and_follow_ends_at_termination(
    api: Api, namespace: str, control_plane: ControlPlane, kubelet: TestKubelet
) -> None:
    _create(api, namespace, _pod("scripted", "unused"))
    _wait_for_phase(api, namespace, "scripted", {"Running"})
    empty = _logs(control_plane, namespace, "scripted")
    assert (empty.returncode, empty.stdout) == (0, ""), empty.stderr
    kubelet.write_log(namespace, "scripted", "epoch 1 done\n")
    follower = subprocess.Popen(
        [
            str(control_plane.kubectl_path),
            f"--kubeconfig={control_plane.kubeconfig}",
            "logs",
            "-f",
            "-n",
            namespace,
            "scripted",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert follower.stdout is not None
    try:
        assert follower.stdout.readline() == "epoch 1 done\n"
        kubelet.write_log(namespace, "scripted", "epoch 2 done\n")
        assert follower.stdout.readline() == "epoch 2 done\n"
        kubelet.terminate(namespace, "scripted", exit_code=0)
        assert follower.wait(timeout=10) == 0
    finally:
        follower.kill()
    assert _logs(control_plane, namespace, "scripted").stdout == "epoch 1 done\nepoch 2 done\n"


def _kubelet_get(port: int, path: str, context: ssl.SSLContext) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(
            f"https://127.0.0.1:{port}{path}", context=context, timeout=10
        ) as response:
            return int(response.status), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_the_kubelet_endpoint_checks_client_certificates_and_answers_bad_requests_in_its_shape(
    api: Api, namespace: str, control_plane: ControlPlane, kubelet: TestKubelet, tmp_path: Path
) -> None:
    port = kubelet.log_port
    assert port is not None
    _create(api, namespace, _pod("direct", "unused"))
    _wait_for_phase(api, namespace, "direct", {"Running"})
    base = f"/containerLogs/{namespace}/direct/mxnet"

    anonymous = ssl.create_default_context(cafile=str(control_plane.pki / "ca.crt"))
    assert _kubelet_get(port, base, anonymous) == (401, "Unauthorized\n")

    stranger = CertificateAuthority.create(common_name="not-the-cluster-ca")
    pair = stranger.issue_client(common_name="intruder")
    (tmp_path / "c.crt").write_bytes(pair.cert_pem)
    (tmp_path / "c.key").write_bytes(pair.key_pem)
    untrusted = ssl.create_default_context(cafile=str(control_plane.pki / "ca.crt"))
    untrusted.load_cert_chain(str(tmp_path / "c.crt"), str(tmp_path / "c.key"))
    with pytest.raises((ssl.SSLError, urllib.error.URLError, ConnectionError)):
        _kubelet_get(port, base, untrusted)

    admin = control_plane.ssl_context()  # the cluster CA signed it, as it did the API server's
    kubelet.write_log(namespace, "direct", "hello\n")
    assert _kubelet_get(port, base, admin) == (200, "hello\n")
    status, body = _kubelet_get(port, f"{base}?tailLines=many", admin)
    assert (status, "tailLines" in body) == (400, True)
    status, body = _kubelet_get(port, f"{base}?limitBytes=0", admin)
    assert (status, "limitBytes" in body) == (422, True)
    assert _kubelet_get(port, f"/containerLogs/{namespace}/nobody/mxnet", admin) == (
        404,
        'pod "nobody" does not exist\n',
    )
    assert _kubelet_get(port, f"/containerLogs/{namespace}/direct/other", admin) == (
        404,
        'container "other" not found in pod "direct"\n',
    )
    assert _kubelet_get(port, "/nothing", admin) == (404, "404 page not found\n")
