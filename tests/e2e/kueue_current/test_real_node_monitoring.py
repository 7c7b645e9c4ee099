"""A real Prometheus watches the operator on the real node, as manifests/components/monitoring
tells prometheus-operator to.

The module fixture installs prometheus-operator's own CRDs (ServiceMonitor, PrometheusRule)
and the operator with the ``monitoring`` and ``kueue-workloads`` components, beside the
package's Kueue v0.19.2 (so the Kueue panel has a queued job to show). It reads the
ServiceMonitors and the PrometheusRule back from the API server (accepted by the real CRDs) and
turns them into a plain Prometheus's configuration as prometheus-operator would
(``localkube.thirdparty.prometheus_config``): Kubernetes service discovery of the Services the
ServiceMonitors select, both processes scraped over TLS with the CA of the ConfigMap they name
and with the token of the ServiceAccount ``monitoring/prometheus``, bound to the ClusterRole
``mxjob-metrics-reader`` as docs/how-to/monitor.md tells a user to bind theirs. prometheus-operator
itself is not run (it would run Prometheus as a StatefulSet from images this machine cannot
pull).

Prometheus scrapes and evaluates every second, and each alert's ``for`` is shortened to
:data:`PENDING_FOR` so that an alert fires in seconds; the expressions are the shipped ones
(tests/monitoring/ checks them with their real ``for`` in promtool). The tests stop the
controller and the webhook, so they restore both before they end.
"""

from __future__ import annotations

import base64
import functools
import http.client
import json
import socket
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from localkube.base.paths import PROJECT_ROOT
from localkube.plane.operator import wait_established
from localkube.realnode.cluster import SYSTEM_NAMESPACE
from localkube.thirdparty import dashboard_picture, prometheus, prometheus_config
from tests.e2e.kueue_queues import (
    Queued,
    queue_active,
    queue_objects,
    queued_job,
    state,
)
from tests.e2e.real_node_fixtures import (
    InstalledCluster,
    namespace_for,
    pods_of,
    remove_namespace,
)
from tests.helpers.waiting import wait_for
from webhook.app import VALIDATE_PATH

# A component built in the background by make test: first test waits for it (late_builds).
pytestmark = [
    pytest.mark.timeout(1500),
    pytest.mark.changes_install,
    pytest.mark.late_builds(
        "third-party-kueue-current", "late-images-kueue-current", "build-prometheus"
    ),
]

NAMESPACE = "monitored-jobs"
KUEUE_VERSION = "v1beta2"
COMPONENTS = ("monitoring", "kueue-workloads")
PENDING_FOR = "5s"
DASHBOARD = PROJECT_ROOT / "manifests" / "components" / "monitoring" / "dashboard.json"
MONITORING_API = "/apis/monitoring.coreos.com/v1/namespaces/mxjob-system"
CONTROLLER_JOB = "mxjob-controller-metrics"
WEBHOOK_JOB = "mxjob-webhook-metrics"
SCRAPERS = "monitoring"
"""The namespace of the scrapers' ServiceAccounts: ``prometheus`` (bound to the reader role)
and ``nosy`` (bound to nothing)."""
METRICS_PORT = 8443
SERVER_NAME = "mxjob-webhook.mxjob-system.svc"
CA_BUNDLE = "mxjob-webhook-ca-bundle"
NEEDS_A_REPORTING_JOB = frozenset({"Job progress"})
"""Panels with data only while a job reports its progress (the gauge of
controller/runtime/metrics.py keeps the unfinished reporting jobs only): the watched job reports
none, so their queries are asked (Prometheus must accept them) but may answer nothing."""


@dataclass
class Watched:
    installed: InstalledCluster
    server: prometheus.PrometheusServer
    queued: Queued
    started: float = field(default_factory=time.time)
    """When Prometheus began scraping (unix time): the dashboard picture starts there."""

    def kubectl(self, *args: str, **kwargs: Any) -> Any:
        return self.installed.plane.kubectl(*args, **kwargs)


def install_crds(installed: InstalledCluster) -> None:
    for path in prometheus.operator_crds():
        installed.plane.kubectl("apply", "--server-side", "-f", str(path), timeout=60)
    for plural in prometheus.MONITORING_KINDS:
        wait_established(installed.plane, f"{plural}.monitoring.coreos.com")


def scraper_token(installed: InstalledCluster, name: str) -> str:
    """A token of the ServiceAccount ``monitoring/<name>``, as its pod would have mounted."""
    done = installed.plane.kubectl("create", "token", name, "-n", SCRAPERS, "--duration=2h")
    return done.stdout.strip()


def add_scrapers(installed: InstalledCluster) -> None:
    """``monitoring/prometheus`` bound to ``mxjob-metrics-reader``; ``monitoring/nosy`` not."""
    namespace_for(installed, SCRAPERS)
    for name in ("prometheus", "nosy"):
        installed.plane.kubectl("create", "serviceaccount", name, "-n", SCRAPERS)
    installed.plane.kubectl(
        "create", "clusterrolebinding", "prometheus-mxjob-metrics",
        "--clusterrole=mxjob-metrics-reader", f"--serviceaccount={SCRAPERS}:prometheus",
    )  # fmt: skip


def webhook_ca(installed: InstalledCluster) -> bytes:
    """ca.crt of the ConfigMap the ServiceMonitors name, as the controller published it (equal
    to the trust bundle of the Secret the scrapers no longer read)."""
    path = f"/api/v1/namespaces/{SYSTEM_NAMESPACE}/configmaps/{CA_BUNDLE}"
    published = wait_for(
        "the controller to publish the CA bundle",
        lambda: (installed.api.request("GET", path).get("data") or {}).get("ca.crt"),
        bool,
        timeout=60,
    )
    secret = f"/api/v1/namespaces/{SYSTEM_NAMESPACE}/secrets/mxjob-webhook-tls"
    stored = base64.b64decode(installed.api.request("GET", secret)["data"]["ca.crt"])
    assert str(published).encode() == stored
    return stored


def prometheus_configuration(installed: InstalledCluster, work: Path) -> dict[str, Any]:
    """The component's objects as the API server stored them, as Prometheus's configuration."""
    api = installed.api
    ca_file = work / "webhook-ca.crt"
    ca_file.write_bytes(webhook_ca(installed))
    token_file = work / "prometheus.token"
    token_file.write_text(scraper_token(installed, "prometheus"))
    monitors = api.request("GET", f"{MONITORING_API}/servicemonitors")["items"]
    assert {m["metadata"]["name"] for m in monitors} == {CONTROLLER_JOB, WEBHOOK_JOB}
    jobs = [
        job
        for monitor in monitors
        for job in prometheus_config.scrape_jobs(
            monitor, kubeconfig=installed.plane.kubeconfig, ca_file=ca_file, token_file=token_file
        )
    ]
    rule = api.request("GET", f"{MONITORING_API}/prometheusrules/mxjob-operator")
    rules = work / "mxjob-operator.rules.yaml"
    rules.write_text(json.dumps(prometheus_config.rule_file(rule, pending_for=PENDING_FOR)))
    return prometheus_config.configuration(jobs, rule_files=[rules], interval="1s")


def scale(watched: Watched, component: str, replicas: int) -> None:
    """Deployment ``mxjob-<component>`` at ``replicas``, waiting until it has that many pods."""
    watched.kubectl(
        "-n", SYSTEM_NAMESPACE, "scale", f"deployment/mxjob-{component}", f"--replicas={replicas}"
    )
    wait_for(
        f"{replicas} {component} pods",
        lambda: pods_of(watched.installed, component),
        lambda pods: len(pods) == replicas,
        timeout=120,
    )
    if replicas:
        watched.kubectl(
            "-n", SYSTEM_NAMESPACE, "rollout", "status", f"deployment/mxjob-{component}",
            "--timeout=120s", timeout=130,
        )  # fmt: skip


@pytest.fixture(scope="module")
def watched(real_cluster: InstalledCluster, kueue_current_seconds: float) -> Iterator[Watched]:
    binary = prometheus.binaries() / "prometheus"
    cluster = real_cluster.cluster
    work = cluster.plane.dir / "monitoring"
    work.mkdir(parents=True, exist_ok=True)
    server = None
    replicas = {c: len(pods_of(real_cluster, c)) for c in ("controller", "webhook")}
    try:
        install_crds(real_cluster)
        cluster.install_operator(work / "operator", components=COMPONENTS)
        namespace_for(real_cluster, NAMESPACE)
        add_scrapers(real_cluster)
        queued = Queued(real_cluster, kueue_current_seconds, NAMESPACE, KUEUE_VERSION)
        queued.apply(*queue_objects(NAMESPACE, KUEUE_VERSION))
        wait_for("the ClusterQueue to be active", lambda: queue_active(queued), bool, timeout=60)
        server = prometheus.serve(
            binary, work / "prometheus", prometheus_configuration(real_cluster, work)
        )
        watched = Watched(real_cluster, server, queued)
        yield watched
        for component, count in replicas.items():
            scale(watched, component, count)
    finally:
        if server is not None:
            server.stop()
        remove_namespace(real_cluster, NAMESPACE, SCRAPERS, until_gone=True)
        real_cluster.plane.kubectl(
            "delete", "clusterrolebinding", "prometheus-mxjob-metrics", "--ignore-not-found",
            check=False,
        )  # fmt: skip
        # The components' objects and roles gone; the session's install is put back later.
        real_cluster.plane.kubectl(
            "delete", "servicemonitors,prometheusrules", "--all", "-n", SYSTEM_NAMESPACE,
            "--ignore-not-found", check=False,
        )  # fmt: skip
        real_cluster.plane.kubectl(
            "delete", "configmap/mxjob-operator-dashboard", "-n", SYSTEM_NAMESPACE,
            "--ignore-not-found", check=False,
        )  # fmt: skip
        for crd in prometheus.MONITORING_KINDS:
            real_cluster.plane.kubectl(
                "delete", f"crd/{crd}.monitoring.coreos.com", "--ignore-not-found", check=False
            )
        real_cluster.put_back_later()


def targets_by_job(watched: Watched) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for target in watched.server.targets():
        found.setdefault(target["labels"]["job"], []).append(target)
    return found


def pod_ips(watched: Watched, component: str) -> set[str]:
    return {p["status"].get("podIP", "") for p in pods_of(watched.installed, component)}


def alert_state(watched: Watched, name: str) -> str | None:
    return watched.server.alerts().get(name)


def until_firing(watched: Watched, name: str, *, timeout: float = 120) -> None:
    """Wait until alert ``name`` is firing in Prometheus."""
    wait_for(
        f"{name} to fire",
        lambda: alert_state(watched, name),
        lambda found: found == "firing",
        timeout=timeout,
    )


def until_resolved(watched: Watched, name: str, *, timeout: float = 120) -> None:
    """Wait until alert ``name`` is no longer pending or firing in Prometheus."""
    wait_for(
        f"{name} to resolve",
        lambda: alert_state(watched, name),
        lambda found: found is None,
        timeout=timeout,
    )


def scrape_urls(watched: Watched) -> dict[str, set[str]]:
    """The URL of every pod the ServiceMonitors select, as Prometheus should scrape it."""
    return {
        job: {f"https://{ip}:{METRICS_PORT}/metrics" for ip in pod_ips(watched, component)}
        for job, component in ((CONTROLLER_JOB, "controller"), (WEBHOOK_JOB, "webhook"))
    }


def scraped_urls(watched: Watched) -> dict[str, set[str]]:
    """Prometheus's targets by job: the URL of each that answered its last scrape."""
    return {
        job: {t["scrapeUrl"] for t in targets if t["health"] == "up" and not t["lastError"]}
        for job, targets in targets_by_job(watched).items()
    }


def test_prometheus_scrapes_every_operator_pod_the_service_monitors_select(
    watched: Watched,
) -> None:
    # Discovery follows the EndpointSlices: the pods a rollout replaced leave within seconds.
    wait_for(
        "Prometheus to scrape every controller and webhook pod, and nothing else",
        lambda: (scraped_urls(watched), targets_by_job(watched), scrape_urls(watched)),
        lambda found: (
            found[0] == found[2]
            and {job: len(t) for job, t in found[1].items()}
            == {j: len(u) for j, u in found[2].items()}
        ),
        timeout=90,
    )
    # Exactly one controller leads, and Prometheus sees it.
    leaders = watched.server.query(f'sum(mxjob_controller_is_leader{{job="{CONTROLLER_JOB}"}})')
    assert [float(v["value"][1]) for v in leaders] == [1.0]


def scrape_status(ip: str, *, token: str | None, ca: bytes) -> int:
    """The HTTP status of one scrape of ``https://<ip>:8443/metrics``, verified as the
    ServiceMonitors verify it: against the CA, for the Service name the certificate carries
    (Prometheus's ``server_name``), whatever pod address is dialled."""
    context = ssl.create_default_context(cadata=ca.decode())
    authorization = "" if token is None else f"Authorization: Bearer {token}\r\n"
    request = f"GET /metrics HTTP/1.1\r\nHost: {ip}\r\nConnection: close\r\n{authorization}\r\n"
    with (
        socket.create_connection((ip, METRICS_PORT), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname=SERVER_NAME) as tls,
    ):
        tls.sendall(request.encode())
        response = http.client.HTTPResponse(tls)
        response.begin()
        return int(response.status)


def test_a_scrape_without_a_token_is_401_and_one_without_the_reader_role_is_403(
    watched: Watched,
) -> None:
    ca = webhook_ca(watched.installed)
    nosy = scraper_token(watched.installed, "nosy")
    reader = scraper_token(watched.installed, "prometheus")
    for component in ("controller", "webhook"):
        for ip in pod_ips(watched, component):
            answers = {
                "none": scrape_status(ip, token=None, ca=ca),
                "forged": scrape_status(ip, token="not-a-token", ca=ca),
                "nosy": scrape_status(ip, token=nosy, ca=ca),
                "reader": scrape_status(ip, token=reader, ca=ca),
            }
            assert answers == {"none": 401, "forged": 401, "nosy": 403, "reader": 200}, (
                component, ip,
            )  # fmt: skip


def dashboard_queries() -> list[tuple[str, str]]:
    """Each panel's title and query, with Grafana's variables as a user would have them: every
    namespace, and a rate window of a minute (``dashboard_picture.GRAFANA_VARIABLES``)."""
    dashboard = json.loads(DASHBOARD.read_text())
    return [
        (panel["title"], dashboard_picture.query_of(target["expr"]))
        for panel in dashboard["panels"]
        for target in panel.get("targets", [])
    ]


def draw_dashboard(watched: Watched, *, since: float) -> tuple[Path, dict[str, int]]:
    """The dashboard drawn from Prometheus's answers since ``since`` (unix time), written to
    the plane's directory; and how many series each panel got."""
    dashboard = json.loads(DASHBOARD.read_text())
    end = time.time()
    answers: dict[str, list[dashboard_picture.Series]] = {}
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            matrix = watched.server.query_range(
                dashboard_picture.query_of(target["expr"]), start=since, end=end, step=2
            )
            found = dashboard_picture.series_of(target.get("legendFormat", ""), matrix)
            answers.setdefault(panel["title"], []).extend(found)
    caption = (
        f"mxjob-operator's dashboard, drawn from Prometheus {prometheus.release()} scraping the "
        f"operator on the real node, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(end))}"
    )
    picture = watched.installed.plane.dir / "monitoring" / "dashboard.svg"
    picture.write_text(dashboard_picture.render(dashboard, answers, caption=caption))
    return picture, {title: len(series) for title, series in answers.items()}


def test_every_dashboard_query_returns_data_after_a_queued_job_has_run(watched: Watched) -> None:
    queued = watched.queued
    queued.create(queued_job("watched", queued.installed.cluster.images.examples.ref, seconds=3))
    wait_for(
        "the queued job to end",
        lambda: state(queued, "watched"),
        lambda found: found in ("Succeeded", "Failed"),
        timeout=180,
    )
    assert state(queued, "watched") == "Succeeded"
    queries = dashboard_queries()
    assert len(queries) >= 20
    empty = wait_for(
        "every dashboard query to return data",
        lambda: [
            (title, expr)
            for title, expr in queries
            if not watched.server.query(expr) and title not in NEEDS_A_REPORTING_JOB
        ],
        lambda left: not left,
        timeout=60,
    )
    assert empty == []
    # The reviews keep their own endpoint label (honorLabels), not the port's name.
    # (A webhook pod's series appear at its first review: the job's create made some.)
    endpoints = wait_for(
        "the webhook's reviews scraped with their endpoint label",
        lambda: {
            r["metric"].get("endpoint")
            for r in watched.server.query(
                f'sum by (endpoint) (mxjob_webhook_reviews_total{{job="{WEBHOOK_JOB}"}})'
            )
        },
        lambda found: "mutate" in found,
        timeout=30,
    )
    assert endpoints <= {"mutate", "validate", "convert", "validate-experiment"}, endpoints
    # The job's counts reach Prometheus at its next scrape of the leader (every second here).
    for metric in ("mxjob_controller_job_admission_wait_seconds_count",
                   "training_operator_jobs_successful_total"):  # fmt: skip
        wait_for(
            f"{metric} of {NAMESPACE} to be 1",
            functools.partial(
                values_of,
                watched,
                f'sum({metric}{{job="{CONTROLLER_JOB}", job_namespace="{NAMESPACE}"}})',
            ),
            lambda found: found == [1.0],
            timeout=30,
        )


def values_of(watched: Watched, expr: str) -> list[float]:
    return [float(v["value"][1]) for v in watched.server.query(expr)]


def test_no_controller_fires_the_no_leader_alert_and_its_return_resolves_it(
    watched: Watched,
) -> None:
    # Each controller pod is a series of its own; the last value of each, summed, counts every
    # reconcile Prometheus has seen in the window, the replaced pod's included.
    reconciles = (
        "sum(last_over_time(controller_runtime_reconcile_total"
        f'{{job="{CONTROLLER_JOB}", controller="mxjob"}}[10m]))'
    )
    before = float(watched.server.query(reconciles)[0]["value"][1])
    assert alert_state(watched, "MXJobControllerNoLeader") is None
    scale(watched, "controller", 0)
    until_firing(watched, "MXJobControllerNoLeader")
    scale(watched, "controller", 1)
    until_resolved(watched, "MXJobControllerNoLeader")
    # The new pod's counters start from zero, and the old pod's counts are still there.
    after = float(watched.server.query(reconciles)[0]["value"][1])
    assert after >= before > 0, (before, after)


def malformed_review(url: str, context: ssl.SSLContext) -> int:
    """POST a body that is no AdmissionReview to the webhook; its HTTP status."""
    request = urllib.request.Request(
        url, data=b'{"kind": "AdmissionReview"}', headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=5, context=context) as response:
            return int(response.status)
    except urllib.error.HTTPError as refused:
        return int(refused.code)


def test_reviews_the_webhook_cannot_read_fire_the_webhook_errors_alert(watched: Watched) -> None:
    context = ssl.create_default_context(cadata=webhook_ca(watched.installed).decode())
    context.check_hostname = False
    address = sorted(pod_ips(watched, "webhook"))[0]
    url = f"https://{address}:9443{VALIDATE_PATH}"
    started = time.monotonic()
    statuses = [malformed_review(url, context)]
    while alert_state(watched, "MXJobWebhookErrors") != "firing":
        assert statuses == [400] * len(statuses), statuses
        assert time.monotonic() - started < 120, watched.server.alerts()
        time.sleep(0.2)
        statuses.append(malformed_review(url, context))


def test_no_webhook_fires_the_webhook_down_alert_and_its_return_resolves_it(
    watched: Watched,
) -> None:
    replicas = len(pods_of(watched.installed, "webhook"))
    scale(watched, "webhook", 0)
    try:
        until_firing(watched, "MXJobWebhookDown")
    finally:
        scale(watched, "webhook", replicas)
    until_resolved(watched, "MXJobWebhookDown")
    watched.installed.cluster.wait_admission()


def test_the_dashboard_drawn_from_the_whole_run_has_data_in_every_panel(watched: Watched) -> None:
    """Last in the module: the picture spans the job, the controller's and the webhook's
    absences and the unreadable reviews. It is left in the plane's directory, at
    ``monitoring/dashboard.svg``."""
    _, series = draw_dashboard(watched, since=watched.started)
    panels = [p["title"] for p in json.loads(DASHBOARD.read_text())["panels"] if p["type"] != "row"]
    assert sorted(series) == sorted(panels)
    empty = {title for title, count in series.items() if not count}
    assert empty <= NEEDS_A_REPORTING_JOB, (empty, series)
