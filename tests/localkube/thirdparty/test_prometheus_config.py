"""The component's ServiceMonitors and PrometheusRule as a plain Prometheus's configuration."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from localkube.thirdparty.prometheus_config import (
    UnsupportedMonitorError,
    configuration,
    label_name,
    rule_file,
    scrape_jobs,
)

COMPONENT = Path(__file__).resolve().parents[3] / "manifests" / "components" / "monitoring"
KUBECONFIG = Path("/state/kubeconfig")
CA = Path("/state/ca.crt")
TOKEN = Path("/state/prometheus.token")


def monitors() -> dict[str, dict[str, Any]]:
    loaded = yaml.safe_load_all((COMPONENT / "servicemonitors.yaml").read_text())
    return {m["metadata"]["name"]: m for m in loaded}


def relabel(job: dict[str, Any], action: str) -> list[dict[str, Any]]:
    return [r for r in job["relabel_configs"] if r["action"] == action]


def test_labels_are_named_as_kubernetes_service_discovery_names_them() -> None:
    assert label_name("app.kubernetes.io/component") == "app_kubernetes_io_component"


def test_the_controller_monitor_keeps_its_service_and_port_and_names_the_job_after_it() -> None:
    [job] = scrape_jobs(
        monitors()["mxjob-controller-metrics"], kubeconfig=KUBECONFIG, ca_file=CA, token_file=TOKEN
    )
    assert job["scheme"] == "https" and job["metrics_path"] == "/metrics"
    [discovery] = job["kubernetes_sd_configs"]
    assert discovery == {
        "role": "endpointslice",
        "kubeconfig_file": str(KUBECONFIG),
        "namespaces": {"names": ["mxjob-system"]},
    }
    keeps = {tuple(r["source_labels"]): r["regex"] for r in relabel(job, "keep")}
    assert keeps == {
        (
            "__meta_kubernetes_service_label_app_kubernetes_io_component",
            "__meta_kubernetes_service_labelpresent_app_kubernetes_io_component",
        ): "(controller);true",
        (
            "__meta_kubernetes_service_label_app_kubernetes_io_name",
            "__meta_kubernetes_service_labelpresent_app_kubernetes_io_name",
        ): r"(mxjob\-operator);true",
        ("__meta_kubernetes_endpointslice_port_name",): r"https\-metrics",
    }
    job_label = [r for r in relabel(job, "replace") if r["target_label"] == "job"]
    assert job_label == [
        {
            "action": "replace",
            "source_labels": ["__meta_kubernetes_service_name"],
            "target_label": "job",
        }
    ]
    assert "honor_labels" not in job


@pytest.mark.parametrize("monitor", ["mxjob-webhook-metrics", "mxjob-controller-metrics"])
def test_each_monitor_verifies_tls_for_the_service_name_and_sends_the_scrapers_token(
    monitor: str,
) -> None:
    [job] = scrape_jobs(monitors()[monitor], kubeconfig=KUBECONFIG, ca_file=CA, token_file=TOKEN)
    assert job["scheme"] == "https"
    assert job["tls_config"] == {
        "server_name": "mxjob-webhook.mxjob-system.svc",
        "ca_file": str(CA),
    }
    assert job["authorization"] == {"type": "Bearer", "credentials_file": str(TOKEN)}


def test_the_webhook_monitor_keeps_the_reviews_endpoint_label() -> None:
    [job] = scrape_jobs(
        monitors()["mxjob-webhook-metrics"], kubeconfig=KUBECONFIG, ca_file=CA, token_file=TOKEN
    )
    # The reviews' own `endpoint` label wins over the target's (the port's name).
    assert job["honor_labels"] is True


def test_a_field_not_translated_is_refused_by_name() -> None:
    monitor = monitors()["mxjob-controller-metrics"]
    monitor["spec"]["endpoints"][0]["bearerTokenSecret"] = {"name": "token"}
    with pytest.raises(UnsupportedMonitorError, match=r"endpoints\[0\]\.bearerTokenSecret"):
        scrape_jobs(monitor, kubeconfig=KUBECONFIG, ca_file=CA, token_file=TOKEN)
    monitor = monitors()["mxjob-controller-metrics"]
    monitor["spec"]["selector"]["matchExpressions"] = []
    with pytest.raises(UnsupportedMonitorError, match=r"spec\.selector\.matchExpressions"):
        scrape_jobs(monitor, kubeconfig=KUBECONFIG, ca_file=CA)


def test_a_ca_and_a_token_file_are_needed_to_translate_them() -> None:
    webhook = monitors()["mxjob-webhook-metrics"]
    with pytest.raises(UnsupportedMonitorError, match=r"tlsConfig\.ca needs its file"):
        scrape_jobs(webhook, kubeconfig=KUBECONFIG, ca_file=None, token_file=TOKEN)
    with pytest.raises(UnsupportedMonitorError, match=r"bearerTokenFile needs its file"):
        scrape_jobs(webhook, kubeconfig=KUBECONFIG, ca_file=CA)


def test_a_shorter_pending_time_changes_every_alerts_for_and_nothing_else() -> None:
    rule = yaml.safe_load((COMPONENT / "prometheusrule.yaml").read_text())
    shipped = rule_file(rule)
    shortened = rule_file(rule, pending_for="5s")
    assert shipped == {"groups": rule["spec"]["groups"]}
    for before, after in zip(shipped["groups"], shortened["groups"], strict=True):
        for old, new in zip(before["rules"], after["rules"], strict=True):
            assert new["for"] == "5s" and old["for"] != "5s"
            assert {k: v for k, v in new.items() if k != "for"} == {
                k: v for k, v in old.items() if k != "for"
            }


def test_a_scrape_may_take_the_whole_interval_and_no_more() -> None:
    config = configuration([], rule_files=[Path("/rules.yaml")], interval="1s")
    assert config["global"] == {
        "scrape_interval": "1s",
        "scrape_timeout": "1s",
        "evaluation_interval": "1s",
    }
    assert config["rule_files"] == ["/rules.yaml"]
