"""The MultiKueue objects that point a manager's Kueue at a worker, as plain dicts."""

from __future__ import annotations

import base64
from typing import Any

import yaml

from localkube.plane.kubeconfig import kubeconfig
from localkube.thirdparty import multikueue


def test_the_kubeconfig_secret_holds_a_self_contained_kubeconfig_at_the_key_kueue_reads() -> None:
    config = kubeconfig(
        server="https://198.18.0.1:6443", ca_pem=b"CA", cert_pem=b"CERT", key_pem=b"KEY"
    )
    secret = multikueue.kubeconfig_secret("worker-kubeconfig", config)
    assert secret["metadata"] == {"name": "worker-kubeconfig", "namespace": "kueue-system"}
    stored = yaml.safe_load(base64.b64decode(secret["data"]["kubeconfig"]))
    # Kueue v0.19 refuses file paths, tokens from files and skipped TLS verification.
    (cluster,) = stored["clusters"]
    assert set(cluster["cluster"]) == {"server", "certificate-authority-data"}
    (user,) = stored["users"]
    assert set(user["user"]) == {"client-certificate-data", "client-key-data"}


def test_the_multikueue_objects_chain_cluster_config_and_admission_check() -> None:
    cluster, config, check = multikueue.multikueue_objects(
        workers={"worker": "worker-kubeconfig"}, check="worker-multikueue"
    )
    assert cluster["spec"] == {
        "clusterSource": {"kubeConfig": {"location": "worker-kubeconfig", "locationType": "Secret"}}
    }
    assert config["spec"] == {"clusters": ["worker"]}
    assert check["spec"] == {
        "controllerName": "kueue.x-k8s.io/multikueue",
        "parameters": {
            "apiGroup": "kueue.x-k8s.io",
            "kind": "MultiKueueConfig",
            "name": "worker-multikueue",
        },
    }
    assert {o["apiVersion"] for o in (cluster, config, check)} == {"kueue.x-k8s.io/v1beta2"}


def test_one_multikueue_config_lists_every_worker_each_with_its_own_cluster_object() -> None:
    objects = multikueue.multikueue_objects(
        workers={"a": "a-kubeconfig", "b": "b-kubeconfig"}, check="both"
    )
    clusters = [o for o in objects if o["kind"] == "MultiKueueCluster"]
    assert [(c["metadata"]["name"], c["spec"]["clusterSource"]["kubeConfig"]["location"])
            for c in clusters] == [("a", "a-kubeconfig"), ("b", "b-kubeconfig")]  # fmt: skip
    (config,) = [o for o in objects if o["kind"] == "MultiKueueConfig"]
    assert config["spec"] == {"clusters": ["a", "b"]}


def _queues(check: str | None) -> list[dict[str, Any]]:
    return multikueue.queue_objects(
        namespace="jobs", flavor="f", cluster_queue="cq", local_queue="lq",
        quota={"cpu": "2", "memory": "1Gi"}, admission_check=check,
    )  # fmt: skip


def test_the_managers_cluster_queue_asks_the_admission_check_and_the_workers_does_not() -> None:
    flavor, manager_queue, local = _queues("worker-multikueue")
    assert manager_queue["spec"]["admissionChecksStrategy"] == {
        "admissionChecks": [{"name": "worker-multikueue"}]
    }
    assert manager_queue["spec"]["resourceGroups"] == [
        {
            "coveredResources": ["cpu", "memory"],
            "flavors": [
                {
                    "name": "f",
                    "resources": [
                        {"name": "cpu", "nominalQuota": "2"},
                        {"name": "memory", "nominalQuota": "1Gi"},
                    ],
                }
            ],
        }
    ]
    assert local["metadata"] == {"name": "lq", "namespace": "jobs"}
    assert local["spec"] == {"clusterQueue": "cq"}
    assert flavor["metadata"] == {"name": "f"}
    assert "admissionChecksStrategy" not in _queues(None)[1]["spec"]


def test_the_worker_user_may_manage_workloads_and_the_managers_jobs_only() -> None:
    role, binding = multikueue.worker_access(user="mk")
    assert {g for rule in role["rules"] for g in rule["apiGroups"]} == {
        "kueue.x-k8s.io",
        "kubeflow.org",
        "batch",
    }
    assert multikueue.INTEGRATIONS["frameworks"] == ["batch/job"]
    assert binding["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "mk"}
    ]


def test_the_profile_drops_the_image_path_command_and_gives_the_pod_ip() -> None:
    remove, env = multikueue.PROFILE_OPS
    assert remove == {"op": "remove", "path": "/spec/template/spec/containers/0/command"}
    assert env["value"][0]["valueFrom"] == {"fieldRef": {"fieldPath": "status.podIP"}}
