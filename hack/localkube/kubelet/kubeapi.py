"""Every call the test kubelet makes to the API server, as a kubelet's client makes them.

The Node (registered Ready, untainted, advertising the log endpoint), bindings, the pods it
watches and the ``pods/status`` it writes, the graceful deletion it confirms, and what exec-mode
containers are given: ConfigMap and Secret keys, the job's Services, service-account tokens.
Gathered here so the kubelet's logic reads without URL paths, and so each path is spelled once.
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from localkube.base.api import Api, ApiError
from localkube.kubelet.podstatus import HOST_IP, now

KeySource = Callable[[str, str], "str | None"]
"""``(object name, key)`` → a ConfigMap's or Secret's value, None when missing."""
MERGE_PATCH = "application/merge-patch+json"


class KubeletApi:
    """The test kubelet's API client: plain dicts in, plain dicts out, :class:`ApiError` raised."""

    def __init__(self, api: Api) -> None:
        self.api = api

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        content_type: str = "application/json",
        query: list[tuple[str, str]] | None = None,
    ) -> Any:
        return self.api.request(method, path, body=body, content_type=content_type, query=query)

    # -- the node --------------------------------------------------------------------------------
    def register_node(
        self, node_name: str, *, capacity: Mapping[str, str], log_port: int | None
    ) -> None:
        """Create (or refresh) the Node and mark it Ready; advertise ``log_port`` if serving."""
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": node_name,
                "labels": {"kubernetes.io/hostname": node_name, "kubernetes.io/os": "linux"},
            },
        }
        with contextlib.suppress(ApiError):
            self.request("POST", "/api/v1/nodes", body=node)
        # The API server taints a new Node not-ready; the node lifecycle controller (not run here)
        # lifts the taint once the node reports Ready, which is what kube-scheduler waits for.
        self.request(
            "PATCH",
            f"/api/v1/nodes/{node_name}",
            body={"spec": {"taints": None}},
            content_type=MERGE_PATCH,
        )
        status: dict[str, Any] = {
            "capacity": capacity,
            "allocatable": capacity,
            "addresses": [
                {"type": "InternalIP", "address": HOST_IP},
                {"type": "Hostname", "address": node_name},
            ],
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "test kubelet is posting ready status",
                    "lastHeartbeatTime": now(),
                    "lastTransitionTime": now(),
                }
            ],
        }
        if log_port is not None:
            # Where the API server dials this kubelet for `kubectl logs`.
            status["daemonEndpoints"] = {"kubeletEndpoint": {"Port": log_port}}
        self.request(
            "PATCH",
            f"/api/v1/nodes/{node_name}/status",
            body={"status": status},
            content_type=MERGE_PATCH,
        )

    def bind(self, namespace: str, name: str, *, node_name: str) -> None:
        """Bind a pod to the node, as the scheduler would."""
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
        }
        self.request("POST", f"/api/v1/namespaces/{namespace}/pods/{name}/binding", body=binding)

    # -- pods ------------------------------------------------------------------------------------
    def get_pod(self, namespace: str, name: str) -> dict[str, Any]:
        pod: dict[str, Any] = self.request("GET", f"/api/v1/namespaces/{namespace}/pods/{name}")
        return pod

    def list_pods(self) -> dict[str, Any]:
        listing: dict[str, Any] = self.request("GET", "/api/v1/pods")
        return listing

    def watch_pods(self, resource_version: str) -> Iterator[dict[str, Any]]:
        """Every pod's events from ``resource_version``, bookmarks included, for a minute."""
        query = [
            ("resourceVersion", resource_version),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", "60"),
        ]
        yield from self.api.watch("/api/v1/pods", query=query)

    def patch_status(self, namespace: str, name: str, status: dict[str, Any], uid: str) -> None:
        # The uid precondition makes a late write for a deleted pod fail instead of landing on a
        # newer pod of the same name (the controller recreates pods under the same name).
        self.request(
            "PATCH",
            f"/api/v1/namespaces/{namespace}/pods/{name}/status",
            body={"metadata": {"uid": uid}, "status": status},
            content_type=MERGE_PATCH,
        )

    def confirm_deletion(self, pod: Mapping[str, Any]) -> None:
        """Delete the pod now (grace 0), as a kubelet does once its containers are gone."""
        meta = pod["metadata"]
        self.request(
            "DELETE",
            f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}",
            body={"gracePeriodSeconds": 0, "preconditions": {"uid": meta.get("uid")}},
        )

    # -- what containers are given ---------------------------------------------------------------
    def get_object(self, namespace: str, plural: str, name: str) -> dict[str, Any] | None:
        """A namespaced core object (``configmaps``, ``secrets``…); None when it cannot be read."""
        try:
            obj: dict[str, Any] = self.request(
                "GET", f"/api/v1/namespaces/{namespace}/{plural}/{name}"
            )
        except ApiError:
            return None
        return obj

    def env_sources(self, namespace: str) -> tuple[KeySource, KeySource]:
        """Lookups of ConfigMap keys and (decoded) Secret keys, for ``valueFrom`` in env."""

        def config_map(name: str, key: str) -> str | None:
            obj = self.get_object(namespace, "configmaps", name)
            value = None if obj is None else obj.get("data", {}).get(key)
            return None if value is None else str(value)

        def secret(name: str, key: str) -> str | None:
            obj = self.get_object(namespace, "secrets", name)
            value = None if obj is None else obj.get("data", {}).get(key)
            return None if value is None else base64.b64decode(value).decode()

        return config_map, secret

    def request_token(
        self, pod: Mapping[str, Any], account: str, audiences: list[str], seconds: int
    ) -> str:
        """A service-account token bound to the pod, from the TokenRequest API."""
        meta = pod["metadata"]
        spec: dict[str, Any] = {
            "expirationSeconds": seconds,
            "boundObjectRef": {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": meta["name"],
                "uid": meta["uid"],
            },
        }
        if audiences:
            spec["audiences"] = audiences
        review = self.request(
            "POST",
            f"/api/v1/namespaces/{meta['namespace']}/serviceaccounts/{account}/token",
            body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec},
        )
        return str(review["status"]["token"])

    def service_host_names(self, namespace: str, pod: Mapping[str, Any]) -> tuple[str, ...]:
        """Every Service of the pod's job, under the names a cluster DNS would answer."""
        job = pod["metadata"].get("labels", {}).get("training.kubeflow.org/job-name")
        selector = f"training.kubeflow.org/job-name={job}" if job else None
        query = [("labelSelector", selector)] if selector else []
        services = self.request("GET", f"/api/v1/namespaces/{namespace}/services", query=query).get(
            "items", []
        )
        names: list[str] = []
        for service in services:
            short = service["metadata"]["name"]
            names += [
                short,
                f"{short}.{namespace}",
                f"{short}.{namespace}.svc",
                f"{short}.{namespace}.svc.cluster.local",
            ]
        names.append(pod["metadata"]["name"])
        return tuple(dict.fromkeys(names))
