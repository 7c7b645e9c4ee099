"""The documentation site builds in strict mode: every page in the nav, every link and anchor
found, and every link to a repository file outside docs/ followed (hack/docs_hooks.py).

mkdocs and mkdocs-material are test dependencies (pyproject.toml): nothing here skips.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.docs_site import ROOT, SMALL_NAV, build, small_site, write_config, write_repo


def test_the_site_builds_in_strict_mode(tmp_path: Path) -> None:
    result = build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stdout}"
    assert (tmp_path / "site" / "index.html").is_file()


def test_links_to_repository_files_work_in_the_built_site(tmp_path: Path) -> None:
    site = tmp_path / "site"
    result = build(small_site(tmp_path / "repo"), site)
    assert result.returncode == 0, result.stdout
    home = (site / "index.html").read_text()
    for link in (
        'href="_repo/#small"',  # README.md, with its anchor
        'href="_repo/examples/a.yaml/"',  # the line anchor is dropped
        'href="_repo/examples/"',  # examples/README.md
        'href="_repo/manifests/base/"',  # a listing
        'src="_repo/logo.png"',
        'href="how-to/install/"',
    ):
        assert link in home, f"{link} not in the home page:\n{home}"
    assert "MXJob" in (site / "_repo" / "examples" / "a.yaml" / "index.html").read_text()
    listing = (site / "_repo" / "manifests" / "base" / "index.html").read_text()
    assert 'href="kustomization.yaml/"' in listing
    assert (site / "_repo" / "manifests" / "base" / "kustomization.yaml" / "index.html").is_file()
    assert (site / "_repo" / "logo.png").read_bytes().startswith(b"\x89PNG")
    readme = (site / "_repo" / "index.html").read_text()
    assert 'href="../how-to/install/#steps"' in readme
    assert 'href="examples/a.yaml/"' in readme


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        pytest.param(
            {"docs/how-to/install.md": "# Install\n\n[gone](../../examples/gone.yaml)\n"},
            "docs/how-to/install.md: the link '../../examples/gone.yaml' is broken: "
            "examples/gone.yaml does not exist in the repository",
            id="a-missing-repository-file",
        ),
        pytest.param(
            {"docs/how-to/install.md": "# Install\n\n[out](../../../elsewhere.md)\n"},
            "docs/how-to/install.md: the link '../../../elsewhere.md' is broken: "
            "it points outside the repository",
            id="a-file-outside-the-repository",
        ),
        pytest.param(
            {"README.md": "# Small\n\n[gone](docs/gone.md)\n"},
            "README.md: the link 'docs/gone.md' is broken: docs/gone.md does not exist",
            id="a-missing-page-linked-from-the-readme",
        ),
        pytest.param(
            {"docs/how-to/install.md": "# Install\n\n[gone](gone.md)\n"},
            "contains a link 'gone.md', but the target 'how-to/gone.md' is not found",
            id="a-missing-page",
        ),
        pytest.param(
            {"docs/how-to/install.md": "# Install\n\n[steps](../index.md#steps)\n"},
            "does not contain an anchor '#steps'",
            id="a-missing-anchor",
        ),
        pytest.param(
            {"docs/how-to/install.md": "# Install\n\n[home](/index.md)\n"},
            "contains an absolute link '/index.md'",
            id="an-absolute-link",
        ),
        pytest.param(
            {"docs/how-to/install.md": "# Install\n\n[how-to](../how-to)\n"},
            "contains an unrecognized relative link '../how-to'",
            id="an-unrecognized-link",
        ),
        pytest.param(
            {"docs/orphan.md": "# Orphan\n"},
            'not included in the "nav" configuration:\n  - orphan.md',
            id="a-page-not-in-the-nav",
        ),
    ],
)
def test_a_broken_site_fails_the_strict_build(
    tmp_path: Path, changes: dict[str, str], expected: str
) -> None:
    result = build(small_site(tmp_path / "repo", **changes), tmp_path / "site")
    assert result.returncode != 0, result.stdout
    assert expected in result.stdout


def test_the_hook_names_every_broken_link_at_once(tmp_path: Path) -> None:
    repo = write_repo(
        tmp_path / "repo",
        {
            "docs/index.md": "# Home\n\n[a](../a.yaml) [b](../b.yaml)\n",
            "docs/how-to/install.md": "# Install\n\n[c](../../c/)\n",
        },
    )
    result = build(write_config(repo, SMALL_NAV), tmp_path / "site")
    assert result.returncode != 0
    for line in (
        "docs/index.md: the link '../a.yaml' is broken: a.yaml does not exist",
        "docs/index.md: the link '../b.yaml' is broken: b.yaml does not exist",
        "docs/how-to/install.md: the link '../../c/' is broken: c does not exist",
    ):
        assert line in result.stdout, result.stdout
