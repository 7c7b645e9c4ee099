"""The dashboard drawn from Prometheus's answers, without Grafana."""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path

from localkube.thirdparty.dashboard_picture import Series, legend, query_of, render, series_of

DASHBOARD = Path(__file__).resolve().parents[3] / "manifests/components/monitoring/dashboard.json"
SVG = "{http://www.w3.org/2000/svg}"


def test_grafana_variables_become_every_namespace_and_a_one_minute_rate() -> None:
    expr = 'rate(x{job_namespace=~"$namespace"}[$__rate_interval])'
    assert query_of(expr) == 'rate(x{job_namespace=~".*"}[1m])'


def test_a_legend_format_takes_the_series_labels_and_leaves_missing_ones_empty() -> None:
    assert legend("p90 {{state}}", {"state": "Succeeded"}) == "p90 Succeeded"
    assert legend("{{verb}} {{resource}}", {"verb": "create"}) == "create"


def test_a_matrix_becomes_named_series_without_its_nan_points() -> None:
    matrix = [{"metric": {"state": "Running"}, "values": [[1, "2"], [2, "NaN"], [3, "4"]]}]
    [one] = series_of("{{state}}", matrix)
    assert one == Series("Running", ((1.0, 2.0), (3.0, 4.0)))
    assert not any(math.isnan(v) for _, v in one.points)


def test_every_panel_is_drawn_where_its_grid_puts_it_with_its_series_or_no_data() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    answers = {
        "Leader": [Series("controllers leading", ((0.0, 1.0),))],
        "Jobs by state": [
            Series("Succeeded", ((0.0, 0.0), (60.0, 1.0))),
            Series("Running <1>", ((0.0, 1.0), (60.0, 0.0))),
        ],
    }
    svg = ET.fromstring(render(dashboard, answers, caption="made here"))
    texts = [t.text for t in svg.iter(f"{SVG}text")]
    for panel in dashboard["panels"]:
        assert panel["title"] in texts
    assert "Running <1>" in texts  # escaped in the document, read back whole
    lines = list(svg.iter(f"{SVG}polyline"))
    assert len(lines) == 2
    # The stat panel shows the last value; panels without answers say so.
    assert "1" in texts
    assert texts.count("no data") == sum(
        1 for p in dashboard["panels"] if p["type"] == "timeseries" and p["title"] not in answers
    )
    width = int(svg.attrib["width"])
    for line in lines:
        xs = [float(p.split(",")[0]) for p in line.attrib["points"].split()]
        assert 0 < min(xs) < max(xs) <= width
