"""manifests/components/monitoring against the code, the other manifests and promtool.

Without a cluster: every alert has a promtool case that fires it and one that keeps it quiet
(``rules.test.yaml``), a runbook in docs/how-to/monitor.md, and queries only metrics the controller
and the webhook export (their registries say which), as does the dashboard; the ServiceMonitors
scrape the ports the metrics Services of manifests/base serve, the way they serve them (the
chart's copies of the rules and the dashboard are generated from the component's files:
tests/hack/test_chartsync.py). Then the pinned ``promtool`` (hack/build-prometheus.sh)
checks the rules and runs the unit tests; it is built the first time (minutes; ``make test``
builds it in the background while the first tests run). When it cannot be built, these tests are
skipped, visibly, or fail under ``CI=true``.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from controller.runtime.metrics import JOB_PROGRESS_NAME, Metrics
from localkube.base.builds import BuildError
from localkube.thirdparty import prometheus
from localkube.thirdparty.dashboard_picture import query_of
from tests.e2e.real_node_fixtures import require
from webhook.metrics import WebhookMetrics

# A component built in the background by make test: its first user waits for it (late_builds).
pytestmark = [pytest.mark.timeout(1200), pytest.mark.late_builds("build-prometheus")]

ROOT = Path(__file__).resolve().parents[2]
COMPONENT = ROOT / "manifests" / "components" / "monitoring"
RULE_TESTS = Path(__file__).resolve().parent / "rules.test.yaml"
MONITOR = ROOT / "docs" / "how-to" / "monitor.md"
"""The how-to whose ``#### <AlertName>`` sections are the alerts' runbooks."""
PREFIXES = ("mxjob_", "training_operator_", "workqueue_", "controller_runtime_")
"""The metric names of the operator's own registries start with one of these."""
SCRAPE_SERIES = frozenset({"up"})
"""What Prometheus records of every scrape itself (``up``: 1 when the target answered)."""
SELECTOR = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{")
IDENTIFIER = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
Obj = dict[str, Any]


def load(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def rules() -> dict[str, Obj]:
    rule = load(COMPONENT / "prometheusrule.yaml")
    return {r["alert"]: r for group in rule["spec"]["groups"] for r in group["rules"]}


def exported_names() -> set[str]:
    """Every series name the controller and the webhook expose, as Prometheus stores it."""
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum")}
    return {
        family.name + suffix
        for registry in (Metrics().registry, WebhookMetrics().registry)
        for family in registry.collect()
        for suffix in suffixes.get(family.type, ("",))
    }


def queried_names(expr: str) -> set[str]:
    """The metric names a query selects (each selector carries a label matcher here), and any
    other identifier that looks like one of the operator's metrics."""
    selected = set(SELECTOR.findall(expr)) - {"by", "on", "without", "ignoring"}
    return selected | {word for word in IDENTIFIER.findall(expr) if word.startswith(PREFIXES)}


def load_dashboard() -> Obj:
    loaded: Obj = json.loads((COMPONENT / "dashboard.json").read_text())
    return loaded


def panel_of(metric: str) -> Obj:
    """The one dashboard panel that queries ``metric``."""
    panel: Obj
    [panel] = [
        panel
        for panel in load_dashboard()["panels"]
        if any(metric in queried_names(t["expr"]) for t in panel.get("targets", []))
    ]
    return panel


def dashboard_queries(dashboard: Obj) -> Iterator[str]:
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            yield target["expr"]
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            yield variable["definition"]


# -- the alerts and their tests --------------------------------------------------------------------
def test_every_alert_fires_in_one_case_and_stays_quiet_in_another() -> None:
    cases = load(RULE_TESTS)
    assert cases["rule_files"] == ["rules.yaml"]
    fired: set[str] = set()
    quiet: set[str] = set()
    for case in cases["tests"]:
        for check in case["alert_rule_test"]:
            (fired if check["exp_alerts"] else quiet).add(check["alertname"])
    alerts = set(rules())
    assert len(alerts) >= 8
    assert sorted(alerts - fired) == [] and sorted(alerts - quiet) == []
    assert fired | quiet <= alerts  # no test of an alert that does not exist


def test_every_alert_has_a_severity_a_duration_and_a_runbook_in_monitor_md() -> None:
    doc = MONITOR.read_text()
    headings = re.findall(r"^#{2,5} (\S+)$", doc, re.M)
    for name, rule in rules().items():
        assert rule["labels"]["severity"] in ("warning", "critical"), name
        assert re.fullmatch(r"[0-9]+m", rule["for"]), name
        annotations = rule["annotations"]
        assert annotations["summary"] and annotations["description"], name
        assert annotations["runbook_url"] == f"docs/how-to/monitor.md#{name.lower()}"
        assert name in headings, f"docs/how-to/monitor.md has no runbook heading for {name}"
        runbook = doc.split(f" {name}\n", 1)[1].split("\n#", 1)[0]
        assert "What to do" in runbook, f"{name}'s runbook says what it means, not what to do"


def test_rules_and_the_dashboard_query_only_metrics_the_operator_exports() -> None:
    exported = exported_names() | SCRAPE_SERIES
    assert {"mxjob_controller_jobs", "mxjob_controller_job_restarts_total"} <= exported
    assert "mxjob_webhook_review_duration_seconds_bucket" in exported
    for name, rule in rules().items():
        names = queried_names(rule["expr"])
        assert names and names <= exported, (name, sorted(names - exported))
    dashboard = json.loads((COMPONENT / "dashboard.json").read_text())
    queries = list(dashboard_queries(dashboard))
    assert len(queries) > 20
    unknown = {n for q in queries for n in queried_names(q)} - exported
    assert not unknown, sorted(unknown)


def test_the_rules_select_the_scrape_jobs_the_service_monitors_make() -> None:
    """The Prometheus Operator names a ServiceMonitor's scrape job after the Service."""
    monitors = [d for d in yaml.safe_load_all((COMPONENT / "servicemonitors.yaml").read_text())]
    jobs = {m["metadata"]["name"] for m in monitors}
    dashboard = (COMPONENT / "dashboard.json").read_text()
    for name, rule in rules().items():
        for selector in re.findall(r"\{([^}]*)\}", rule["expr"]):
            assert re.search(r'job="([^"]+)"', selector), (name, selector)
            assert set(re.findall(r'job="([^"]+)"', selector)) <= jobs, (name, selector)
    assert set(re.findall(r'job=\\"([^"\\]+)\\"', dashboard)) == jobs


# -- the objects ---------------------------------------------------------------------------------
def base_services() -> list[Obj]:
    docs: list[Obj] = []
    for name in ("controller.yaml", "webhook.yaml"):
        docs += yaml.safe_load_all((ROOT / "manifests" / "base" / name).read_text())
    return [d for d in docs if d and d["kind"] == "Service"]


def test_service_monitors_scrape_the_metrics_services_as_they_serve() -> None:
    """One Service per monitor has its port; HTTPS with the certificate's name and CA for the
    webhook (gunicorn serves TLS only), plain HTTP for the controller (http.server)."""
    monitors = {d["metadata"]["name"]: d for d in
                yaml.safe_load_all((COMPONENT / "servicemonitors.yaml").read_text())}  # fmt: skip
    assert sorted(monitors) == ["mxjob-controller-metrics", "mxjob-webhook-metrics"]
    for name, monitor in monitors.items():
        assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
        (endpoint,) = monitor["spec"]["endpoints"]
        wanted = monitor["spec"]["selector"]["matchLabels"].items()
        scraped = [
            s["metadata"]["name"]
            for s in base_services()
            if wanted <= s["metadata"]["labels"].items()
            and endpoint["port"] in {p["name"] for p in s["spec"]["ports"]}
        ]
        assert scraped == [name]
        assert endpoint["path"] == "/metrics"
        namespace = monitor["metadata"]["namespace"]
        assert monitor["spec"]["namespaceSelector"]["matchNames"] == [namespace]
        # Both over HTTPS, verified for the serving certificate's name, with Prometheus's token.
        assert endpoint["scheme"] == "https"
        assert endpoint["tlsConfig"]["serverName"] == "mxjob-webhook.mxjob-system.svc"
        assert endpoint["tlsConfig"]["ca"]["configMap"] == {
            "name": "mxjob-webhook-ca-bundle",
            "key": "ca.crt",
        }
        assert endpoint["bearerTokenFile"] == "/var/run/secrets/kubernetes.io/serviceaccount/token"


def test_the_dashboard_is_for_grafanas_sidecar_with_unique_panels() -> None:
    kustomization = load(COMPONENT / "kustomization.yaml")
    (generator,) = kustomization["configMapGenerator"]
    assert generator["options"]["labels"]["grafana_dashboard"] == "1"
    assert generator["options"]["disableNameSuffixHash"] is True
    assert generator["files"] == ["mxjob-operator.json=dashboard.json"]
    dashboard = json.loads((COMPONENT / "dashboard.json").read_text())
    assert dashboard["uid"] == "mxjob-operator"
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    datasource = {"type": "prometheus", "uid": "${datasource}"}
    assert all(p["datasource"] == datasource for p in dashboard["panels"] if p["type"] != "row")


# -- promtool --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def promtool() -> Path:
    """The pinned promtool: from the cache, or once ``make test``'s background build of it has
    ended (the build script waits on its lock); built here when neither has it."""
    try:
        return prometheus.binaries() / "promtool"
    except BuildError as error:
        require(f"promtool {prometheus.version()} cannot be built: {error}")
        raise


@pytest.fixture
def rule_dir(tmp_path: Path) -> Path:
    """The PrometheusRule's spec as a plain rule file, beside the unit tests that name it."""
    spec = load(COMPONENT / "prometheusrule.yaml")["spec"]
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    shutil.copy(RULE_TESTS, tmp_path / RULE_TESTS.name)
    return tmp_path


def test_promtool_checks_the_rules(promtool: Path, rule_dir: Path) -> None:
    done = prometheus.promtool(promtool, "check", "rules", "rules.yaml", cwd=rule_dir)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(rules())} rules found" in done.stdout + done.stderr


def test_promtool_unit_tests_pass(promtool: Path, rule_dir: Path) -> None:
    done = prometheus.promtool(promtool, "test", "rules", RULE_TESTS.name, cwd=rule_dir)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_dashboard_shows_the_deadlines_its_alert_fires_on() -> None:
    alerted = queried_names(rules()["MXJobProgressDeadlineExceeded"]["expr"])
    assert alerted == {"mxjob_controller_job_progress_deadline_exceeded_total"}
    [target] = panel_of(*alerted)["targets"]
    assert "{{state}}" in target["legendFormat"]  # Restarting apart from Failed


def test_promtool_the_progress_panel_draws_a_line_per_job_whichever_pod_exported_it(
    promtool: Path, tmp_path: Path
) -> None:
    """Each controller pod exports its own series (the pod's labels differ): across a change of
    leader a job is still one line, named by its namespace and name, on the 0-100 scale."""
    panel = panel_of(JOB_PROGRESS_NAME)
    [target] = panel["targets"]
    assert target["legendFormat"] == "{{job_namespace}}/{{job_name}}"
    assert panel["fieldConfig"]["defaults"]["unit"] == "percent"
    labels = 'job="mxjob-controller-metrics", job_namespace="ns"'

    def series(instance: str, name: str) -> str:
        return f'{JOB_PROGRESS_NAME}{{{labels}, instance="{instance}", job_name="{name}"}}'

    case = {
        "interval": "1m",
        "input_series": [
            {"series": series("old-leader", "train"), "values": "10 20 30"},
            {"series": series("new-leader", "train"), "values": "_ _ 35"},
            {"series": series("new-leader", "tune"), "values": "_ _ 5"},
        ],
        "promql_expr_test": [{
            "expr": query_of(target["expr"]),
            "eval_time": "2m",
            "exp_samples": [
                {"labels": '{job_namespace="ns", job_name="train"}', "value": 35},
                {"labels": '{job_namespace="ns", job_name="tune"}', "value": 5},
            ],
        }],
    }  # fmt: skip
    (tmp_path / "panel.test.yaml").write_text(yaml.safe_dump({"tests": [case]}))
    done = prometheus.promtool(promtool, "test", "rules", "panel.test.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
