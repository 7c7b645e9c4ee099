"""docs/reference/ is what ``make generate`` makes of the sources now, and what it says can be
followed: every flag and metric is on its page, every relative link and anchor exists."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

import generated
from controller.runtime import settings as controller_settings
from controller.runtime.metrics import Metrics
from docgen import pages
from docgen.crd import ROOT
from docgen.markdown import HEADER, slug
from webhook import settings as webhook_settings
from webhook.metrics import WebhookMetrics

DOCS = ROOT / "docs"
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)


@pytest.fixture(scope="module")
def rendered() -> dict[Path, str]:
    return pages.render_all()


def test_every_reference_page_is_what_make_generate_writes(rendered: dict[Path, str]) -> None:
    stale = [str(p.relative_to(ROOT)) for p in generated.stale(pages.render_bytes())]
    assert stale == [], f"run make generate: {stale} differ from what the sources make now"


def test_every_page_says_it_is_generated_and_by_which_module(rendered: dict[Path, str]) -> None:
    prefix = HEADER.split("{", 1)[0]
    for path, text in rendered.items():
        first = text.splitlines()[0]
        assert first.startswith(prefix) and first.endswith("; do not edit. -->"), path
        module = first.removeprefix(prefix).split(")", 1)[0]
        assert (ROOT / module).is_file(), f"{path.name} names {module}, which does not exist"


def _flags(parser: argparse.ArgumentParser) -> set[str]:
    return {
        option
        for action in parser._actions
        for option in action.option_strings
        if option.startswith("--") and option != "--help" and action.help != argparse.SUPPRESS
    }


@pytest.mark.parametrize(
    "parser",
    [controller_settings._parser(), webhook_settings._parser()],
    ids=["controller", "webhook"],
)
def test_the_flags_page_lists_every_flag(
    parser: argparse.ArgumentParser, rendered: dict[Path, str]
) -> None:
    text = rendered[pages.REFERENCE / "flags.md"]
    assert sorted(f for f in _flags(parser) if f"`{f}`" not in text) == []
    for old in controller_settings.DEPRECATED_FLAGS:
        assert f"`{old}`" in text


def test_the_observability_page_lists_every_metric(rendered: dict[Path, str]) -> None:
    names = {
        metric.name + ("_total" if metric.type == "counter" else "")
        for registry in (Metrics().registry, WebhookMetrics().registry)
        for metric in registry.collect()
    }
    assert "workqueue_depth" in names and "controller_runtime_reconcile_total" in names
    text = rendered[pages.REFERENCE / "observability.md"]
    assert sorted(name for name in names if f"`{name}`" not in text) == []


def anchors(text: str) -> set[str]:
    """The anchors MkDocs makes for a page's headings (a repeated heading gets ``_1``...)."""
    found: set[str] = set()
    for line in FENCE.sub("", text).splitlines():
        if line.startswith("#"):
            base = slug(line.lstrip("#").strip().replace("`", ""))
            anchor, n = base, 0
            while anchor in found:
                n += 1
                anchor = f"{base}_{n}"
            found.add(anchor)
    return found


def broken_links(path: Path, text: str) -> list[str]:
    """Relative links of ``text`` (the page at ``path``) to a missing file or anchor."""
    broken = []
    for target in LINK.findall(FENCE.sub("", text)):
        if "://" in target or target.startswith("mailto:"):
            continue
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part).resolve()
        if file_part and not linked.is_file():
            broken.append(target)
            continue
        linked_text = linked.read_text(encoding="utf-8") if file_part else text
        if anchor and anchor not in anchors(linked_text):
            broken.append(target)
    return broken


def test_every_relative_link_and_anchor_of_the_pages_exists(rendered: dict[Path, str]) -> None:
    broken = {p.name: found for p, text in rendered.items() if (found := broken_links(p, text))}
    assert broken == {}


def test_the_link_check_finds_a_missing_page_and_a_missing_anchor(tmp_path: Path) -> None:
    page = tmp_path / "a.md"
    (tmp_path / "b.md").write_text("# B\n\n## Some `code` heading\n\n## B\n")
    text = (
        "# A\n\n[ok](b.md#some-code-heading) [ok](b.md#b_1) [ok](#a) [web](https://x.io/#y)\n"
        "[no file](c.md) [no anchor](b.md#nothing) [no local](#b)\n```\n[in code](d.md)\n```\n"
    )
    assert broken_links(page, text) == ["c.md", "b.md#nothing", "#b"]


def test_each_alert_links_its_runbook_heading_in_the_monitoring_how_to(
    rendered: dict[Path, str],
) -> None:
    text = rendered[pages.REFERENCE / "observability.md"]
    runbooks = re.findall(r"\(\.\./how-to/monitor\.md#([^)]+)\)", text)
    alerts = re.findall(r"^### (\w+)$", text.split("## Alerts", 1)[1].split("\n## ", 1)[0], re.M)
    assert alerts and runbooks == [a.lower() for a in alerts]
