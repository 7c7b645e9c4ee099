"""A picture of the Grafana dashboard (manifests/components/monitoring/dashboard.json) drawn from
what a real Prometheus answered, as SVG, for docs/how-to/monitor.md.

Grafana is not built here, so this draws the dashboard's own layout (each panel's ``gridPos`` on
Grafana's 24-column grid, its title, its queries' ``legendFormat``) with the series Prometheus
returned for each query over a time range: time series as lines, a stat panel as its last
value. Pure: :func:`render` takes the answers; the caller queries Prometheus
(:meth:`localkube.thirdparty.prometheus.PrometheusServer.query_range`).
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

COLUMN = 50
"""Pixels per grid column (24 of them: 1200 px)."""
ROW = 30
"""Pixels per grid row."""
PAD = 8
COLOURS = ("#7eb26d", "#eab839", "#6ed0e0", "#ef843c", "#e24d42", "#1f78c1", "#ba43a9")
LEGEND_LINES = 4
GRAFANA_VARIABLES = {"$namespace": ".*", "$__rate_interval": "1m"}
"""What the dashboard's variables stand for in the picture: every namespace, a 1-minute rate."""


@dataclass(frozen=True)
class Series:
    legend: str
    points: tuple[tuple[float, float], ...]
    """(unix time, value); NaN values (a quantile of no observation) are left out."""


def query_of(expr: str) -> str:
    """A panel query with Grafana's variables replaced by :data:`GRAFANA_VARIABLES`."""
    for variable, value in GRAFANA_VARIABLES.items():
        expr = expr.replace(variable, value)
    return expr


def legend(template: str, labels: Mapping[str, str]) -> str:
    """Grafana's ``legendFormat``: each ``{{label}}`` replaced by the series' value."""
    return re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: labels.get(m.group(1), ""), template).strip()


def series_of(template: str, matrix: Sequence[Mapping[str, Any]]) -> list[Series]:
    """A ``query_range`` answer (a matrix) as named series."""
    found = []
    for item in matrix:
        points = tuple((float(t), float(v)) for t, v in item["values"] if not math.isnan(float(v)))
        found.append(Series(legend(template, item["metric"]) or "value", points))
    return found


def _scale(values: Sequence[float], low: float, high: float, size: float) -> list[float]:
    span = (high - low) or 1.0
    return [(value - low) / span * size for value in values]


def _timeseries(series: Sequence[Series], box: tuple[float, float, float, float]) -> list[str]:
    x, y, width, height = box
    points = [p for s in series for p in s.points]
    if not points:
        return [f'<text x="{x + 4}" y="{y + 16}" class="none">no data</text>']
    times, values = [p[0] for p in points], [p[1] for p in points]
    top = max(*values, 0.0) or 1.0
    bottom = min(*values, 0.0)
    parts = [
        f'<text x="{x}" y="{y + 10}" class="axis">{top:.3g}</text>',
        f'<text x="{x}" y="{y + height}" class="axis">{bottom:.3g}</text>',
    ]
    left, plot_width = x + 34, width - 34
    for index, one in enumerate(series):
        colour = COLOURS[index % len(COLOURS)]
        xs = _scale([p[0] for p in one.points], min(times), max(times), plot_width)
        ys = _scale([p[1] for p in one.points], bottom, top, height - 4)
        drawn = " ".join(
            f"{left + a:.1f},{y + height - b:.1f}" for a, b in zip(xs, ys, strict=True)
        )
        if drawn:
            parts.append(f'<polyline points="{drawn}" stroke="{colour}" class="line"/>')
    return parts


def _legend(series: Sequence[Series], x: float, y: float) -> list[str]:
    parts = []
    for index, one in enumerate(series[:LEGEND_LINES]):
        colour = COLOURS[index % len(COLOURS)]
        line_y = y + index * 12
        parts.append(f'<rect x="{x}" y="{line_y - 7}" width="8" height="8" fill="{colour}"/>')
        parts.append(
            f'<text x="{x + 12}" y="{line_y}" class="legend">{html.escape(one.legend)}</text>'
        )
    if len(series) > LEGEND_LINES:
        more = f"and {len(series) - LEGEND_LINES} more"
        parts.append(f'<text x="{x}" y="{y + LEGEND_LINES * 12}" class="legend">{more}</text>')
    return parts


def _panel(panel: Mapping[str, Any], series: Sequence[Series]) -> list[str]:
    grid = panel["gridPos"]
    x, y = grid["x"] * COLUMN + PAD / 2, grid["y"] * ROW + PAD / 2
    width, height = grid["w"] * COLUMN - PAD, grid["h"] * ROW - PAD
    title = html.escape(panel["title"])
    if panel["type"] == "row":
        return [f'<text x="{x}" y="{y + 18}" class="row">{title}</text>']
    parts = [
        f'<rect x="{x}" y="{y}" width="{width}" height="{height}" class="panel"/>',
        f'<text x="{x + 8}" y="{y + 18}" class="title">{title}</text>',
    ]
    legend_height = min(len(series), LEGEND_LINES + 1) * 12
    if panel["type"] == "stat":
        last = [s.points[-1][1] for s in series if s.points]
        text = f"{last[-1]:g}" if last else "no data"
        parts.append(
            f'<text x="{x + width / 2}" y="{y + height / 2 + 14}" class="stat">{text}</text>'
        )
    else:
        box = (x + 8, y + 28, width - 16, height - 40 - legend_height)
        parts += _timeseries(series, box)
    parts += _legend(series, x + 8, y + height - legend_height + 6)
    return parts


STYLE = """
  .panel { fill: #181b1f; stroke: #2c3235; }
  text { font-family: sans-serif; fill: #ccccdc; }
  .title { font-size: 12px; font-weight: bold; }
  .row { font-size: 15px; font-weight: bold; }
  .axis, .legend { font-size: 9px; }
  .none { font-size: 11px; fill: #8e8e8e; }
  .stat { font-size: 40px; text-anchor: middle; fill: #73bf69; }
  .line { fill: none; stroke-width: 1.5; }
"""


def render(
    dashboard: Mapping[str, Any], answers: Mapping[str, Sequence[Series]], *, caption: str
) -> str:
    """The dashboard as an SVG document; ``answers`` holds each panel's series by its title
    (all of its queries together)."""
    panels = dashboard["panels"]
    bottom = max(p["gridPos"]["y"] + p["gridPos"]["h"] for p in panels)
    width, height = 24 * COLUMN, bottom * ROW + 24
    body = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}">',
        f"<style>{STYLE}</style>",
        f'<rect width="{width}" height="{height}" fill="#111217"/>',
    ]
    for panel in panels:
        body += _panel(panel, answers.get(panel["title"], ()))
    body.append(f'<text x="8" y="{height - 8}" class="legend">{html.escape(caption)}</text>')
    body.append("</svg>")
    return "\n".join(body) + "\n"
