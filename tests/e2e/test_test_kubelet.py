"""The test kubelet binds pods and writes the pod status a real kubelet would."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from localkube.base.api import Api
from localkube.kubelet.core import TestKubelet
from tests.helpers import mxjobs, pods
from tests.helpers.waiting import wait_for


def _pod(
    namespace: str,
    name: str,
    command: list[str],
    *,
    env: list[dict[str, Any]] | None = None,
    labels: dict[str, str] | None = None,
    restart_policy: str = "Never",
) -> dict[str, Any]:
    """A pod whose ``mxnet`` container runs ``command`` in the test kubelet's python image."""
    main = mxjobs.container(image="local/python", command=command, env=env or [])
    return pods.pod(
        name,
        namespace=namespace,
        labels=labels or {},
        restart_policy=restart_policy,
        containers=[main],
    )


def _wait_for_phase(
    api: Api, namespace: str, name: str, phases: set[str], timeout: float = 30
) -> dict[str, Any]:
    pod: dict[str, Any] = wait_for(
        f"pod {name} to reach {sorted(phases)}",
        lambda: api.request("GET", f"/api/v1/namespaces/{namespace}/pods/{name}"),
        lambda pod: pod.get("status", {}).get("phase") in phases,
        timeout=timeout,
    )
    return pod


def _main_status(pod: dict[str, Any]) -> dict[str, Any]:
    return next(s for s in pod["status"]["containerStatuses"] if s["name"] == "mxnet")


def test_exec_mode_records_the_real_exit_code_of_a_failing_command(
    api: Api, namespace: str, exec_kubelet: TestKubelet
) -> None:
    api.request(
        "POST",
        f"/api/v1/namespaces/{namespace}/pods",
        body=_pod(namespace, "exits-3", ["sh", "-c", "echo bye; exit 3"]),
    )
    pod = _wait_for_phase(api, namespace, "exits-3", {"Succeeded", "Failed"})
    assert pod["spec"]["nodeName"] == exec_kubelet.node_name
    assert pod["status"]["phase"] == "Failed"
    terminated = _main_status(pod)["state"]["terminated"]
    assert terminated["exitCode"] == 3
    assert terminated["reason"] == "Error"
    assert exec_kubelet.exec_settings is not None
    log = (exec_kubelet.exec_settings.log_dir / f"{namespace}_exits-3.log").read_text()
    assert "bye" in log


def test_exec_mode_resolves_downward_api_labels_and_var_expansion(
    api: Api, namespace: str, exec_kubelet: TestKubelet
) -> None:
    env: list[dict[str, Any]] = [
        {
            "name": "INDEX",
            "valueFrom": {
                "fieldRef": {"fieldPath": "metadata.labels['training.kubeflow.org/replica-index']"}
            },
        },
        {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "WORKER_ID", "value": "$(INDEX)"},
        {"name": "CONFIG", "value": '{"task": {"index": $(INDEX)}, "pod": "$(POD)"}'},
        {"name": "ESCAPED", "value": "$$(INDEX) and $(UNDEFINED)"},
    ]
    script = (
        "import os; print('|'.join(os.environ[k] for k in "
        "['INDEX','POD','WORKER_ID','CONFIG','ESCAPED','ARG']))"
    )
    pod = _pod(
        namespace,
        "envy",
        ["python", "-c", script],
        env=env,
        labels={"training.kubeflow.org/replica-index": "2"},
    )
    pod["spec"]["containers"][0]["env"].append({"name": "ARG", "value": "x"})
    api.request("POST", f"/api/v1/namespaces/{namespace}/pods", body=pod)
    done = _wait_for_phase(api, namespace, "envy", {"Succeeded", "Failed"})
    assert exec_kubelet.exec_settings is not None
    log = (exec_kubelet.exec_settings.log_dir / f"{namespace}_envy.log").read_text()
    assert done["status"]["phase"] == "Succeeded", log
    assert log.strip() == (
        '2|envy|2|{"task": {"index": 2}, "pod": "envy"}|$(INDEX) and $(UNDEFINED)|x'
    )


def test_exec_mode_makes_the_jobs_service_names_reach_loopback(
    api: Api, namespace: str, exec_kubelet: TestKubelet
) -> None:
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "demo-scheduler-0",
            "namespace": namespace,
            "labels": {"training.kubeflow.org/job-name": "demo"},
        },
        "spec": {"clusterIP": "None", "ports": [{"name": "mxjob-port", "port": 9091}]},
    }
    api.request("POST", f"/api/v1/namespaces/{namespace}/services", body=service)
    script = (
        "import socket; print(socket.gethostbyname('demo-scheduler-0'), "
        f"socket.gethostbyname('demo-scheduler-0.{namespace}.svc'))"
    )
    api.request(
        "POST",
        f"/api/v1/namespaces/{namespace}/pods",
        body=_pod(
            namespace,
            "resolver",
            ["python", "-c", script],
            labels={"training.kubeflow.org/job-name": "demo"},
        ),
    )
    done = _wait_for_phase(api, namespace, "resolver", {"Succeeded", "Failed"})
    assert exec_kubelet.exec_settings is not None
    log = (exec_kubelet.exec_settings.log_dir / f"{namespace}_resolver.log").read_text()
    assert done["status"]["phase"] == "Succeeded", log
    assert log.split() == ["127.0.0.1", "127.0.0.1"]
    # The entries go away with the pod's process: the kubelet removes them once it has
    # reported the exit.
    wait_for(
        "the job's host names gone from /etc/hosts",
        Path("/etc/hosts").read_text,
        lambda hosts: "demo-scheduler-0" not in hosts,
        timeout=10,
    )


def test_exec_mode_restarts_in_place_under_on_failure(
    api: Api, namespace: str, exec_kubelet: TestKubelet, tmp_path: Path
) -> None:
    marker = tmp_path / "attempts"
    script = (
        f"import pathlib,sys; p=pathlib.Path({str(marker)!r}); n=len(p.read_text()) "
        "if p.exists() else 0; p.write_text('x'*(n+1)); sys.exit(0 if n>=2 else 7)"
    )
    api.request(
        "POST",
        f"/api/v1/namespaces/{namespace}/pods",
        body=_pod(namespace, "flaky", ["python", "-c", script], restart_policy="OnFailure"),
    )
    pod = _wait_for_phase(api, namespace, "flaky", {"Succeeded"})
    status = _main_status(pod)
    assert status["restartCount"] == 2
    assert status["lastState"]["terminated"]["exitCode"] == 7
    assert status["state"]["terminated"]["exitCode"] == 0


def test_manual_mode_drives_running_restart_exit_and_eviction(api: Api, namespace: str) -> None:
    kubelet = TestKubelet(api, node_name=f"manual-{namespace}", namespaces=(namespace,))
    with kubelet:
        for name in ("a", "b"):
            api.request(
                "POST", f"/api/v1/namespaces/{namespace}/pods", body=_pod(namespace, name, ["true"])
            )
        for name in ("a", "b"):
            pod = _wait_for_phase(api, namespace, name, {"Running"})
            assert _main_status(pod)["ready"] is True
            assert pod["status"]["podIP"] == "127.0.0.1"
        assert kubelet.restart_in_place(namespace, "a", exit_code=137, reason="OOMKilled") == 1
        pod = kubelet.get_pod(namespace, "a")
        assert _main_status(pod)["lastState"]["terminated"] == {
            **_main_status(pod)["lastState"]["terminated"],
            "exitCode": 137,
            "reason": "OOMKilled",
        }
        assert pod["status"]["phase"] == "Running"
        kubelet.terminate(namespace, "a", exit_code=0)
        pod = kubelet.get_pod(namespace, "a")
        assert pod["status"]["phase"] == "Succeeded"
        assert _main_status(pod)["restartCount"] == 1
        kubelet.evict(namespace, "b")
        pod = kubelet.get_pod(namespace, "b")
        assert (pod["status"]["phase"], pod["status"]["reason"]) == ("Failed", "Evicted")
        assert "terminated" not in _main_status(pod)["state"]
    node = api.request("GET", f"/api/v1/nodes/manual-{namespace}")
    ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "True"
    api.request("DELETE", f"/api/v1/nodes/manual-{namespace}")


def test_exec_mode_binds_a_pods_api_volumes_at_their_mount_paths_once_they_can_be_made(
    api: Api, namespace: str, exec_kubelet: TestKubelet
) -> None:
    """A job pod's process reads its ConfigMap and its projected token at the mount paths, as in
    a container; a volume whose ConfigMap is missing keeps the pod waiting until it is made, and
    an optional one is simply absent. The host sees none of the files."""
    settings, status = "/etc/localkube-test-settings", "/var/run/secrets/localkube.test"
    script = "\n".join(
        [
            "import os, pathlib",
            f"print(pathlib.Path('{settings}/level').read_text())",
            f"print(sorted(os.listdir('{status}')))",
            f"print(len(pathlib.Path('{status}/token').read_text().split('.')))",
            "try:",
            f"    open('{status}/x', 'w')",
            "except OSError as error:",
            "    print(error.strerror)",
        ]
    )
    pod = _pod(namespace, "mounts", ["python", "-u", "-c", script])
    pod["spec"]["containers"][0]["volumeMounts"] = [
        {"name": "settings", "mountPath": settings},
        {"name": "status", "mountPath": status, "readOnly": True},
    ]
    pod["spec"]["volumes"] = [
        {"name": "settings", "configMap": {"name": "settings"}},
        {
            "name": "status",
            "projected": {
                "sources": [
                    {"serviceAccountToken": {"audience": "localkube.test", "path": "token"}},
                    {"configMap": {"name": "absent", "optional": True}},
                ]
            },
        },
    ]
    api.request("POST", f"/api/v1/namespaces/{namespace}/pods", body=pod)
    waiting = wait_for(
        "the pod to wait for its ConfigMap",
        lambda: api.request("GET", f"/api/v1/namespaces/{namespace}/pods/mounts"),
        lambda found: (
            "waiting" in _main_status(found).get("state", {})
            if found.get("status", {}).get("containerStatuses")
            else False
        ),
        timeout=30,
    )
    assert _main_status(waiting)["state"]["waiting"]["reason"] == "ContainerCreating"
    assert "'settings' not found" in _main_status(waiting)["state"]["waiting"]["message"]
    config_map = {"metadata": {"name": "settings"}, "data": {"level": "high"}}
    api.request("POST", f"/api/v1/namespaces/{namespace}/configmaps", body=config_map)
    done = _wait_for_phase(api, namespace, "mounts", {"Succeeded", "Failed"})
    assert exec_kubelet.exec_settings is not None
    log = (exec_kubelet.exec_settings.log_dir / f"{namespace}_mounts.log").read_text()
    assert done["status"]["phase"] == "Succeeded", log
    # The token is a JWT (three parts); the mount marked read-only refuses a write.
    assert log.splitlines() == ["high", "['token']", "3", "Read-only file system"], log
    assert not Path(settings, "level").exists()
    assert not Path(status, "token").exists()
