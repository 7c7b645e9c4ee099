"""Builds of the documentation site (mkdocs.yml) for tests/docs: the project's and small ones.

A small site is a repository of its own in a temporary directory: pages under docs/, files
outside it that they link, and an mkdocs.yml made from the project's (same theme, extensions,
validation and hook) with its own nav.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
HOOK = ROOT / "hack" / "docs_hooks.py"

# A repository whose pages link files outside docs/ every way the hook handles: a Markdown file
# (README.md, which links back into docs/), a text file (with a code host's line anchor), a
# directory with a README.md, one without (a listing), an image; and a link in a code block,
# which is no link.
SMALL_REPO = {
    "README.md": "# Small\n\nRead [the install](docs/how-to/install.md#steps) and "
    "[the example](examples/a.yaml).\n",
    "examples/a.yaml": "kind: MXJob\n",
    "examples/README.md": "# Examples\n\n- [a.yaml](a.yaml)\n",
    "manifests/base/kustomization.yaml": "resources: []\n",
    "docs/index.md": "# Home\n\n"
    "- [the front page](../README.md#small)\n"
    "- [an example](../examples/a.yaml#L1)\n"
    "- [the examples](../examples/)\n"
    "- [the base](../manifests/base)\n"
    "- [install](how-to/install.md)\n\n"
    "![a logo](../logo.png)\n",
    "docs/how-to/install.md": "# Install\n\n## Steps\n\n"
    "Apply [the file](../../examples/a.yaml).\n\n"
    "```text\n[not a link](../../missing.yaml)\n```\n",
}
SMALL_NAV = [{"Home": "index.md"}, {"Install": "how-to/install.md"}]
# A PNG's signature and a NUL: a file that is not text.
LOGO = b"\x89PNG\r\n\x1a\n\x00"


def write_repo(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (root / "logo.png").write_bytes(LOGO)
    return root


def write_config(root: Path, nav: list[Any]) -> Path:
    """root/mkdocs.yml: the project's settings, with ``nav`` and the project's hook by path."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    config.update(site_name="small", nav=nav, hooks=[str(HOOK)])
    config.pop("site_dir", None)
    path = root / "mkdocs.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def small_site(root: Path, **changes: str) -> Path:
    """A small repository with SMALL_REPO's files (``changes`` by path replace or add some):
    its mkdocs.yml."""
    write_repo(root, {**SMALL_REPO, **changes})
    return write_config(root, SMALL_NAV)


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    """``mkdocs build --strict`` of ``config`` into ``site``, its output in ``stdout``."""
    # NO_MKDOCS_2_WARNING: mkdocs-material's banner about its end of life, not the build's.
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config)]
    return subprocess.run(
        [*command, "--site-dir", str(site)],
        cwd=config.parent,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=240,
        check=False,
    )
