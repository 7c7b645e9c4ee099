"""docs/operations.md lists every flag and every metric of both processes."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from controller.runtime import settings as controller_settings
from controller.runtime.metrics import Metrics
from webhook import settings as webhook_settings
from webhook.metrics import WebhookMetrics

DOC = (Path(__file__).resolve().parent.parent / "docs" / "operations.md").read_text()


def _flags(parser: argparse.ArgumentParser) -> set[str]:
    return {
        option
        for action in parser._actions
        for option in action.option_strings
        if option.startswith("--") and option != "--help"
    }


@pytest.mark.parametrize(
    "parser",
    [controller_settings._parser(), webhook_settings._parser()],
    ids=["controller", "webhook"],
)
def test_every_flag_is_listed(parser: argparse.ArgumentParser) -> None:
    missing = sorted(flag for flag in _flags(parser) if f"`{flag}`" not in DOC)
    assert missing == []


def test_every_metric_is_listed() -> None:
    names = {
        metric.name + ("_total" if metric.type == "counter" else "")
        for registry in (Metrics().registry, WebhookMetrics().registry)
        for metric in registry.collect()
    }
    assert "workqueue_depth" in names and "controller_runtime_reconcile_total" in names
    assert sorted(name for name in names if f"`{name}`" not in DOC) == []
