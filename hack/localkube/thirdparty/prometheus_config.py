"""A plain Prometheus's configuration that watches the operator as prometheus-operator would.

prometheus-operator turns each ServiceMonitor into a scrape job over Kubernetes service discovery
(role ``endpointslice``, with its ``serviceDiscoveryRole: EndpointSlice``) and each PrometheusRule
into a rule file. This module makes the same translation for the fields
manifests/components/monitoring uses: the Service selector (``matchLabels``), the namespaces, the
port by name, the path, the scheme, the TLS verification and ``honorLabels``, with ``job`` set to
the Service's name and ``endpoint`` to the port's, as prometheus-operator sets them. Anything else
in a ServiceMonitor is refused by name, so a field added to the component is never ignored silently
here. Pure: the caller writes the files and starts Prometheus
(:mod:`localkube.thirdparty.prometheus`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

Obj = dict[str, Any]

ENDPOINT_FIELDS = frozenset(
    {"path", "port", "scheme", "tlsConfig", "honorLabels", "bearerTokenFile"}
)
"""The ServiceMonitor endpoint fields translated here."""
TLS_FIELDS = frozenset({"serverName", "ca"})


class UnsupportedMonitorError(ValueError):
    """A ServiceMonitor uses a field this translation does not make; the message names it."""


def label_name(label: str) -> str:
    """A Kubernetes label as Prometheus's service discovery names it: every character that is
    not a letter, digit or underscore becomes an underscore."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", label)


def _selector_keeps(selector: Mapping[str, Any], name: str) -> list[Obj]:
    unknown = set(selector) - {"matchLabels"}
    if unknown:
        raise UnsupportedMonitorError(f"ServiceMonitor {name}: spec.selector.{min(unknown)}")
    return [
        {
            "action": "keep",
            "source_labels": [
                f"__meta_kubernetes_service_label_{label_name(key)}",
                f"__meta_kubernetes_service_labelpresent_{label_name(key)}",
            ],
            "regex": f"({re.escape(str(value))});true",
        }
        for key, value in sorted((selector.get("matchLabels") or {}).items())
    ]


def _target_labels() -> list[Obj]:
    """The labels prometheus-operator gives every target of a ServiceMonitor."""
    copies = {
        "namespace": "__meta_kubernetes_namespace",
        "service": "__meta_kubernetes_service_name",
        "pod": "__meta_kubernetes_pod_name",
        "container": "__meta_kubernetes_pod_container_name",
        "job": "__meta_kubernetes_service_name",
    }
    return [
        {"action": "replace", "source_labels": [source], "target_label": target}
        for target, source in copies.items()
    ]


def _tls(tls: Mapping[str, Any], *, name: str, ca_file: Path | None) -> Obj:
    unknown = set(tls) - TLS_FIELDS
    if unknown:
        raise UnsupportedMonitorError(f"ServiceMonitor {name}: tlsConfig.{min(unknown)}")
    config: Obj = {}
    if "serverName" in tls:
        config["server_name"] = tls["serverName"]
    if "ca" in tls:
        if ca_file is None:
            raise UnsupportedMonitorError(f"ServiceMonitor {name}: tlsConfig.ca needs its file")
        config["ca_file"] = str(ca_file)
    return config


def scrape_jobs(
    monitor: Mapping[str, Any],
    *,
    kubeconfig: Path,
    ca_file: Path | None,
    token_file: Path | None = None,
) -> list[Obj]:
    """One scrape job per endpoint of ``monitor`` (a ServiceMonitor), discovering targets
    through the API server of ``kubeconfig``. ``ca_file`` holds the CA its ``tlsConfig.ca``
    names (the caller reads the Secret, as prometheus-operator does); ``token_file`` stands for
    the file an endpoint's ``bearerTokenFile`` names inside the Prometheus pod (its
    ServiceAccount's token)."""
    meta, spec = monitor["metadata"], monitor["spec"]
    name = f"{meta['namespace']}/{meta['name']}"
    namespaces = (spec.get("namespaceSelector") or {}).get("matchNames") or [meta["namespace"]]
    jobs = []
    for index, endpoint in enumerate(spec["endpoints"]):
        unknown = set(endpoint) - ENDPOINT_FIELDS
        if unknown:
            raise UnsupportedMonitorError(
                f"ServiceMonitor {name}: endpoints[{index}].{min(unknown)}"
            )
        job: Obj = {
            "job_name": f"serviceMonitor/{name}/{index}",
            "metrics_path": endpoint.get("path", "/metrics"),
            "scheme": endpoint.get("scheme", "http"),
            "kubernetes_sd_configs": [
                {
                    "role": "endpointslice",
                    "kubeconfig_file": str(kubeconfig),
                    "namespaces": {"names": list(namespaces)},
                }
            ],
            "relabel_configs": [
                *_selector_keeps(spec["selector"], name),
                {
                    "action": "keep",
                    "source_labels": ["__meta_kubernetes_endpointslice_port_name"],
                    "regex": re.escape(endpoint["port"]),
                },
                {
                    "action": "drop",
                    "source_labels": ["__meta_kubernetes_pod_phase"],
                    "regex": "(Failed|Succeeded)",
                },
                *_target_labels(),
                {"action": "replace", "target_label": "endpoint", "replacement": endpoint["port"]},
            ],
        }
        if endpoint.get("honorLabels"):
            job["honor_labels"] = True
        if "bearerTokenFile" in endpoint:
            if token_file is None:
                raise UnsupportedMonitorError(
                    f"ServiceMonitor {name}: endpoints[{index}].bearerTokenFile needs its file"
                )
            job["authorization"] = {"type": "Bearer", "credentials_file": str(token_file)}
        if "tlsConfig" in endpoint:
            job["tls_config"] = _tls(endpoint["tlsConfig"], name=name, ca_file=ca_file)
        jobs.append(job)
    return jobs


def rule_file(rule: Mapping[str, Any], *, pending_for: str | None = None) -> Obj:
    """A PrometheusRule's ``spec`` as the rule file Prometheus loads. With ``pending_for``, each
    alert's ``for`` is that instead (a test's shorter wait; the expressions stay as shipped)."""
    groups = []
    for group in rule["spec"]["groups"]:
        rules = [
            {**r, "for": pending_for} if pending_for is not None and "alert" in r else dict(r)
            for r in group["rules"]
        ]
        groups.append({**group, "rules": rules})
    return {"groups": groups}


def configuration(jobs: Sequence[Obj], *, rule_files: Sequence[Path], interval: str = "15s") -> Obj:
    """prometheus.yml: ``jobs`` scraped and the rules evaluated every ``interval`` (a scrape
    may take all of it: Prometheus refuses a timeout above the interval)."""
    return {
        "global": {
            "scrape_interval": interval,
            "scrape_timeout": interval,
            "evaluation_interval": interval,
        },
        "rule_files": [str(path) for path in rule_files],
        "scrape_configs": list(jobs),
    }
