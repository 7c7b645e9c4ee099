"""The site's links to repository files outside docs/: the pure logic (hack/docs_links.py) and
the hook's finding and rewriting of them (hack/docs_hooks.py), on a small repository."""

from __future__ import annotations

from pathlib import Path

import markdown
import pytest
from mkdocs.exceptions import PluginError

from docs_hooks import RepoLinks, find_shown, links_in
from docs_links import (
    LinkError,
    Target,
    classify,
    directory_page,
    fence,
    language,
    page_repo_path,
    relative_link,
    resolve_link,
    site_uri,
    split_link,
    text_page,
)
from tests.helpers.docs_site import SMALL_REPO, write_repo


def _parser() -> markdown.Markdown:
    return markdown.Markdown(extensions=["toc", "tables", "pymdownx.superfences"])


def _pages(root: Path) -> list[tuple[str, str]]:
    docs = root / "docs"
    return [(p.relative_to(docs).as_posix(), p.read_text()) for p in sorted(docs.rglob("*.md"))]


def _docs_files(root: Path) -> set[str]:
    return {p.relative_to(root / "docs").as_posix() for p in (root / "docs").rglob("*.*")}


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("../../examples/a.yaml", ("../../examples/a.yaml", "")),
        ("../x.md#an-anchor", ("../x.md", "#an-anchor")),
        ("a%20b.yaml?raw=1#L3", ("a b.yaml", "?raw=1#L3")),
        ("https://example.com/x.md", None),
        ("mailto:someone@example.com", None),
        ("/absolute.md", None),
        ("#only-an-anchor", None),
    ],
)
def test_split_link(url: str, expected: tuple[str, str] | None) -> None:
    assert split_link(url) == expected


@pytest.mark.parametrize(
    ("page", "path", "expected"),
    [
        ("docs/how-to/x.md", "../../examples/v1/train/job.yaml", "examples/v1/train/job.yaml"),
        ("docs/index.md", "../CONTRIBUTING.md", "CONTRIBUTING.md"),
        ("docs/index.md", "../manifests/", "manifests"),
        ("docs/index.md", "..", ""),
        ("README.md", "docs/how-to/install.md", "docs/how-to/install.md"),
        ("examples/index.md", "a.yaml", "examples/a.yaml"),
    ],
)
def test_resolve_link(page: str, path: str, expected: str) -> None:
    assert resolve_link(page, path) == expected


@pytest.mark.parametrize("path", ["../../../elsewhere.md", "../../../../shared/third_party"])
def test_a_link_out_of_the_repository_is_an_error(path: str) -> None:
    with pytest.raises(LinkError, match="outside the repository"):
        resolve_link("docs/how-to/x.md", path)


def test_classify(tmp_path: Path) -> None:
    root = write_repo(tmp_path, SMALL_REPO)
    (root / "art.svg").write_text("<svg/>")
    assert classify(root, "docs", "docs/how-to/install.md") == Target(
        "docs/how-to/install.md", "docs"
    )
    assert classify(root, "docs", "docs/gone.md").kind == "docs"  # MkDocs checks it
    assert classify(root, "docs", "README.md").kind == "markdown"
    assert classify(root, "docs", "examples/a.yaml").kind == "text"
    assert classify(root, "docs", "examples").kind == "directory"
    assert classify(root, "docs", "").kind == "directory"
    assert classify(root, "docs", "logo.png").kind == "asset"
    assert classify(root, "docs", "art.svg").kind == "text"
    assert classify(root, "docs", "art.svg", image=True).kind == "asset"
    with pytest.raises(LinkError, match=r"examples/gone\.yaml does not exist"):
        classify(root, "docs", "examples/gone.yaml")


def test_site_uri(tmp_path: Path) -> None:
    root = write_repo(tmp_path, SMALL_REPO)
    assert site_uri(root, "docs", Target("docs/how-to/install.md", "docs")) == "how-to/install.md"
    assert site_uri(root, "docs", Target("docs/how-to", "docs")) == "how-to/index.md"
    assert site_uri(root, "docs", Target("README.md", "markdown")) == "_repo/README.md"
    assert site_uri(root, "docs", Target("examples/a.yaml", "text")) == "_repo/examples/a.yaml.md"
    assert site_uri(root, "docs", Target("examples", "directory")) == "_repo/examples/README.md"
    assert site_uri(root, "docs", Target("", "directory")) == "_repo/README.md"
    listing = site_uri(root, "docs", Target("manifests/base", "directory"))
    assert listing == "_repo/manifests/base/index.md"
    assert site_uri(root, "docs", Target("logo.png", "asset")) == "_repo/logo.png"


def test_page_repo_path_and_relative_link() -> None:
    assert page_repo_path("how-to/x.md", "docs") == "docs/how-to/x.md"
    assert page_repo_path("_repo/README.md", "docs") == "README.md"
    assert page_repo_path("_repo/manifests/base/index.md", "site/docs") == "manifests/base/index.md"
    assert (
        relative_link("how-to/x.md", "_repo/examples/a.yaml.md", "")
        == "../_repo/examples/a.yaml.md"
    )
    assert relative_link("index.md", "_repo/README.md", "#small") == "_repo/README.md#small"
    assert relative_link("_repo/README.md", "how-to/x.md", "#a") == "../how-to/x.md#a"


def test_a_file_shows_in_a_fence_longer_than_its_backticks() -> None:
    assert fence("no backticks") == "```"
    assert fence("a ```` run of four") == "`````"
    page = text_page("examples/run.sh", "echo ````\n")
    assert "`````bash\necho ````\n`````\n" in page
    assert page.startswith("---\nsearch:\n  exclude: true\n---\n")
    assert "# examples/run.sh" in page
    assert language("Dockerfile.webhook") == "dockerfile"
    assert language("Makefile") == "make"
    assert language("x.yml") == "yaml"
    assert language("LICENSE") == "text"


def test_a_listing_links_the_files_and_names_the_directories(tmp_path: Path) -> None:
    root = write_repo(tmp_path, {"d/b.yaml": "", "d/sub/c.yaml": "", "d/.hidden": ""})
    (root / "d" / "__pycache__").mkdir()
    page = directory_page(root, "d")
    assert page.endswith(
        "# d/\n\nA directory of the repository.\n\n- `sub/`\n- [`b.yaml`](b.yaml)\n"
    )


def test_links_in_skips_code_blocks() -> None:
    text = "[a](a.md) ![i](i.png)\n\n```\n[b](b.md)\n```\n\n    [c](c.md)\n\n`[d](d.md)`\n"
    assert links_in(_parser(), text) == [("a.md", False), ("i.png", True)]


def test_find_shown_follows_the_links_of_shown_pages(tmp_path: Path) -> None:
    root = write_repo(tmp_path, SMALL_REPO)
    repo = RepoLinks(root, "docs")
    shown = find_shown(repo, _pages(root), _parser(), _docs_files(root))
    assert shown == {
        "_repo/README.md": Target("README.md", "markdown"),
        "_repo/examples/a.yaml.md": Target("examples/a.yaml", "text"),
        "_repo/examples/README.md": Target("examples", "directory"),
        "_repo/manifests/base/index.md": Target("manifests/base", "directory"),
        "_repo/logo.png": Target("logo.png", "asset"),
        # linked by the listing of manifests/base
        "_repo/manifests/base/kustomization.yaml.md": Target(
            "manifests/base/kustomization.yaml", "text"
        ),
    }


def test_find_shown_names_every_broken_link(tmp_path: Path) -> None:
    root = write_repo(
        tmp_path,
        {
            **SMALL_REPO,
            "README.md": "# Small\n\n[gone](docs/gone.md) [here](docs/index.md)\n",
            "docs/how-to/install.md": "# I\n\n[a](../../a.yaml) [out](../../../x.md)\n",
        },
    )
    repo = RepoLinks(root, "docs")
    with pytest.raises(LinkError) as raised:
        find_shown(repo, _pages(root), _parser(), _docs_files(root))
    assert str(raised.value).splitlines()[1:] == [
        "  - docs/how-to/install.md: the link '../../a.yaml' is broken: "
        "a.yaml does not exist in the repository",
        "  - docs/how-to/install.md: the link '../../../x.md' is broken: "
        "it points outside the repository",
        "  - README.md: the link 'docs/gone.md' is broken: docs/gone.md does not exist",
    ]


@pytest.mark.parametrize(
    ("page", "url", "expected"),
    [
        ("index.md", "../examples/a.yaml#L1", "_repo/examples/a.yaml.md"),
        ("how-to/install.md", "../../examples/a.yaml", "../_repo/examples/a.yaml.md"),
        ("index.md", "../README.md#small", "_repo/README.md#small"),
        ("index.md", "../examples/", "_repo/examples/README.md"),
        ("index.md", "../manifests/base#x", "_repo/manifests/base/index.md"),
        ("index.md", "how-to/install.md#steps", "how-to/install.md#steps"),
        ("how-to/install.md", "../../docs/index.md#home", "../index.md#home"),
        ("index.md", "https://example.com/a", "https://example.com/a"),
        ("index.md", "#home", "#home"),
        ("_repo/README.md", "docs/how-to/install.md#steps", "../how-to/install.md#steps"),
        ("_repo/README.md", "examples/a.yaml", "examples/a.yaml.md"),
    ],
)
def test_rewrite(tmp_path: Path, page: str, url: str, expected: str) -> None:
    root = write_repo(tmp_path, SMALL_REPO)
    repo = RepoLinks(root, "docs")
    find_shown(repo, _pages(root), _parser(), _docs_files(root))
    assert repo.rewrite(page, url, image=False) == expected
    if url == "../examples/a.yaml#L1":
        assert repo.rewrite(page, "../logo.png", image=True) == "_repo/logo.png"


def test_rewrite_refuses_a_link_found_only_while_rendering(tmp_path: Path) -> None:
    root = write_repo(tmp_path, SMALL_REPO)
    repo = RepoLinks(root, "docs")  # nothing found: find_shown did not run
    with pytest.raises(PluginError, match=r"docs/index.md: the link '../examples/a.yaml' was not"):
        repo.rewrite("index.md", "../examples/a.yaml", image=False)
    with pytest.raises(PluginError, match=r"docs/index.md: the link '../gone' is broken"):
        repo.rewrite("index.md", "../gone", image=False)
