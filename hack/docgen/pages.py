"""The pages of docs/reference/ and who writes each: the one list ``make generate`` and the
staleness test (tests/hack/docgen/test_pages.py) both go through."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from docgen import (
    api_page,
    contract_page,
    flags_page,
    helm_page,
    observability_page,
)
from docgen.crd import ROOT
from docgen.markdown import header, link, page, table

REFERENCE = ROOT / "docs" / "reference"
MODULE = "hack/docgen/pages.py"

PAGES: dict[str, tuple[str, Callable[[], str]]] = {
    "api.md": ("MXJob API", api_page.render),
    "job-contract.md": ("The job contract", contract_page.render),
    "helm-values.md": ("Helm values", helm_page.render),
    "flags.md": ("Flags and environment variables", flags_page.render),
    "observability.md": ("Observability", observability_page.render),
}
"""File name → (title in the index, what writes it)."""

SUMMARIES = {
    "api.md": "every field of the MXJob resource: type, default, allowed values, meaning",
    "job-contract.md": "the env, names, labels and annotations of a job's pods, and the "
    "exit-code rules",
    "helm-values.md": "every value of the Helm chart, with its default",
    "flags.md": "every flag and environment variable of the controller and the webhook",
    "observability.md": "metrics, alerts, the job's conditions and Events",
}


def index() -> str:
    rows = [[link(title, name), SUMMARIES[name]] for name, (title, _) in PAGES.items()]
    return page(
        header(MODULE),
        "# Reference",
        "Facts to look up, made from the sources they describe by `make generate`: each page "
        "is current with the code it was generated from.",
        table(["Page", "What it lists"], rows),
    )


def render_all() -> dict[Path, str]:
    """Every page's path and text, the index first."""
    found = {REFERENCE / "index.md": index()}
    for name, (_, render) in PAGES.items():
        found[REFERENCE / name] = render()
    return found


def render_bytes() -> dict[Path, bytes]:
    """:func:`render_all` as the bytes written (UTF-8), what hack/generated.py compares."""
    return {path: text.encode("utf-8") for path, text in render_all().items()}
