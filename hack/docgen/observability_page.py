"""docs/reference/observability.md: what the operator tells about itself and about jobs.

Metrics come from the processes' own Prometheus registries (controller/runtime/metrics.py,
webhook/metrics.py): a registry is built and read, so a metric added to the code is on the page.
Alerts come from the rule file the kustomize component and the chart install
(manifests/components/monitoring/prometheusrule.yaml), each linking its runbook heading in the
monitoring how-to. Conditions and Events come from :mod:`docgen.story`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

import yaml
from prometheus_client import CollectorRegistry
from prometheus_client.metrics import MetricWrapperBase

from controller.runtime import metrics as controller_metrics
from controller.runtime.job_series import EXIT_CLASSES
from controller.runtime.settings import ControllerSettings
from docgen import story
from docgen.crd import ROOT
from docgen.markdown import block, code, codes, header, link, page, slug, table
from webhook import metrics as webhook_metrics
from webhook.settings import WebhookSettings

MODULE = "hack/docgen/observability_page.py"
RULES = ROOT / "manifests" / "components" / "monitoring" / "prometheusrule.yaml"
RUNBOOKS = "../how-to/monitor.md"
CONTROLLER = "mxjob-controller"
WEBHOOK = "mxjob-webhook"
LABEL_VALUES: dict[tuple[str, str], tuple[str, ...]] = {
    (CONTROLLER, "framework"): (controller_metrics.FRAMEWORK,),
    (CONTROLLER, "name"): (controller_metrics.NAME,),
    (CONTROLLER, "controller"): (controller_metrics.NAME,),
    (CONTROLLER, "result"): controller_metrics.RESULTS,
    (CONTROLLER, "reason"): controller_metrics.EVENT_DROP_REASONS,
    (CONTROLLER, "exit_class"): tuple(EXIT_CLASSES),
    (WEBHOOK, "endpoint"): get_args(webhook_metrics.Endpoint),
    (WEBHOOK, "result"): get_args(webhook_metrics.Result),
}
"""Labels whose values are fixed by the code, with those values."""


@dataclass(frozen=True)
class Metric:
    name: str
    kind: str
    labels: tuple[str, ...]
    text: str


def metrics(registry: CollectorRegistry) -> Iterator[Metric]:
    """The registry's metrics, as exposed: a counter with ``_total``."""
    for collector in registry._collector_to_names:
        if isinstance(collector, MetricWrapperBase):
            name = collector._name + ("_total" if collector._type == "counter" else "")
            kind = str(collector._type)
            yield Metric(name, kind, collector._labelnames, collector._documentation)
            continue
        for family in collector.collect():
            labels = tuple(getattr(family, "_labelnames", ()))
            name = family.name + ("_total" if family.type == "counter" else "")
            yield Metric(name, str(family.type), labels, family.documentation)


def _labels(process: str, labels: tuple[str, ...]) -> str:
    shown = []
    for label in labels:
        fixed = LABEL_VALUES.get((process, label))
        shown.append(code(label) + (f" ({codes(fixed)})" if fixed else ""))
    return ", ".join(shown)


def metric_table(process: str, registry: CollectorRegistry) -> str:
    rows = [[code(m.name), m.kind, _labels(process, m.labels), m.text] for m in metrics(registry)]
    return table(["Metric", "Type", "Labels", "Description"], rows)


def metrics_section() -> str:
    controller = ControllerSettings()
    webhook = WebhookSettings()
    return page(
        "## Metrics",
        "Both processes serve Prometheus' text format at `/metrics`. A histogram is exposed as "
        "its `_bucket`, `_sum` and `_count` series.",
        f"### {CONTROLLER}",
        f"On `--metrics-bind-address` (default {code(controller.metrics_bind_address)}), over "
        "HTTPS to scrapers the API server authenticates and authorizes unless "
        "`--no-metrics-secure`. The job metrics keep training-operator's names, the work queue's "
        "client-go's and the reconcile metrics controller-runtime's.",
        metric_table(CONTROLLER, controller_metrics.Metrics().registry),
        f"### {WEBHOOK}",
        "On the listener of `--metrics-bind` (the manifests: `0.0.0.0:8443`), or beside the "
        f"reviews on `--bind` (default {code(webhook.bind)}) when it is unset.",
        metric_table(WEBHOOK, webhook_metrics.WebhookMetrics().registry),
    )


def alerts(path: Path = RULES) -> list[Mapping[str, Any]]:
    rules = yaml.safe_load(path.read_text(encoding="utf-8"))
    return [r for g in rules["spec"]["groups"] for r in g["rules"] if "alert" in r]


def untemplated(text: str) -> str:
    """An annotation without Prometheus' templates: ``{{ $labels.endpoint }}`` reads as
    ``<endpoint>``, ``{{ $value | ... }}`` as ``<value>`` (and no site template engine sees
    braces)."""

    def placeholder(match: re.Match[str]) -> str:
        inner = match.group(1).split("|")[0].strip()
        return code("<" + inner.removeprefix("$labels.").removeprefix("$") + ">")

    return re.sub(r"\{\{(.*?)\}\}", placeholder, " ".join(text.split()))


def alerts_section() -> str:
    found = alerts()
    rows = [
        [
            link(a["alert"], "#" + slug(a["alert"])),
            a["labels"]["severity"],
            str(a.get("for", "")),
            untemplated(a["annotations"]["summary"]),
            link("runbook", f"{RUNBOOKS}#{a['alert'].lower()}"),
        ]
        for a in found
    ]
    parts = [
        "## Alerts",
        "The rules of manifests/components/monitoring/prometheusrule.yaml (the chart's "
        "`metrics.prometheusRule.enabled`). Each alert's runbook is a heading of the "
        f"{link('monitoring how-to', RUNBOOKS)}.",
        table(["Alert", "Severity", "For", "Summary", "Runbook"], rows),
    ]
    for alert in found:
        parts += [
            f"### {alert['alert']}",
            untemplated(str(alert["annotations"].get("description", ""))),
            block(str(alert["expr"]), language="promql"),
        ]
    return page(*parts)


def render() -> str:
    return page(
        header(MODULE),
        "# Observability reference",
        "What the operator's processes export (metrics), what should wake someone (alerts), "
        "and what the controller writes about each job (conditions and Events). Flags that "
        "change them are in [Flags and environment variables](flags.md).",
        metrics_section(),
        alerts_section(),
        story.render(),
    )
