"""MkDocs hook (mkdocs.yml, ``hooks:``): links from the docs to repository files outside docs/.

The pages are read on a code host too, so they link a repository file outside docs/ by its
relative path from the page (``../../examples/v1/train/mx_job_dist_cpu.yaml`` from
docs/how-to/x.md). MkDocs knows only docs/, so this hook, for every such link:

- resolves it against the page's real path in the repository, and fails the build (a
  ``PluginError`` naming the page and the link) when the target does not exist or lies outside
  the repository;
- adds the target to the site under ``_repo/``: a Markdown file as a page (its own links are
  resolved the same way, so README.md links into docs/ work on the site), any other text file
  as a page that shows it in a code block, a directory as its README.md or else as a page that
  lists its files, an image or a binary file as itself;
- rewrites the link to that page, which MkDocs then validates like any other link.

The targets are found before the pages are rendered (``on_files``: MkDocs builds its nav from
the files it has then), by parsing each page with the site's Markdown extensions; the links are
rewritten while each page renders, by a tree processor that runs before MkDocs' own.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from xml.etree.ElementTree import Element

import markdown
from markdown.extensions import Extension
from markdown.treeprocessors import Treeprocessor
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files, InclusionLevel
from mkdocs.structure.pages import Page
from mkdocs.utils.meta import get_data

# mkdocs puts hack/ on the path while it loads this hook; make venv puts it there for the tests.
from docs_links import (
    REPO_PREFIX,
    LinkError,
    Target,
    classify,
    directory_page,
    is_shown,
    leaves_docs,
    page_repo_path,
    relative_link,
    resolve_link,
    site_uri,
    split_link,
    text_page,
)


class _CollectLinks(Treeprocessor):
    def __init__(self, md: markdown.Markdown) -> None:
        super().__init__(md)
        self.links: list[tuple[str, bool]] = []

    def run(self, root: Element) -> None:
        for element in root.iter():
            if element.tag == "a" and (href := element.get("href")) is not None:
                self.links.append((href, False))
            elif element.tag == "img" and (src := element.get("src")) is not None:
                self.links.append((src, True))


class RepoLinks:
    """The repository files a site links, and the rewriting of the links to them."""

    def __init__(self, root: Path, docs_prefix: str) -> None:
        self.root = root
        self.docs_prefix = docs_prefix
        # Site file (src_uri) -> the repository file or directory it shows.
        self.shown: dict[str, Target] = {}

    def target_of(self, page_uri: str, url: str, *, image: bool) -> tuple[Target, str] | None:
        """The target of a link on a site page and the link's ``?query#anchor``, or None when
        the hook leaves the link alone. Raises LinkError naming the page and the link."""
        split = split_link(url)
        if split is None:
            return None
        path, rest = split
        page = page_repo_path(page_uri, self.docs_prefix)
        try:
            target = classify(self.root, self.docs_prefix, resolve_link(page, path), image=image)
        except LinkError as error:
            raise LinkError(f"{page}: the link '{url}' is broken: {error}") from None
        return target, rest

    def rewrite(self, page_uri: str, url: str, *, image: bool) -> str:
        """The link as the site needs it: unchanged between the docs' own pages (MkDocs checks
        those) unless it goes out of docs/ and back, else to the site file that shows the
        target. An anchor into a page that shows a file or a listing is dropped (a code host's
        line anchors mean nothing there)."""
        try:
            found = self.target_of(page_uri, url, image=image)
        except LinkError as error:
            raise PluginError(str(error)) from None
        if found is None:
            return url
        target, rest = found
        if target.kind == "docs" and not is_shown(page_uri) and not leaves_docs(page_uri, url):
            return url
        uri = site_uri(self.root, self.docs_prefix, target)
        if target.kind != "docs" and uri not in self.shown:
            page = page_repo_path(page_uri, self.docs_prefix)
            raise PluginError(f"{page}: the link '{url}' was not found before the build")
        keeps_anchor = target.kind in ("docs", "markdown") or uri.endswith("/README.md")
        return relative_link(page_uri, uri, rest if keeps_anchor else "")


def links_in(md: markdown.Markdown, text: str) -> list[tuple[str, bool]]:
    """Each link in the Markdown ``text`` as ``(url, is an image)``, as ``md`` parses it (so
    not what code blocks show)."""
    md.reset()
    collector = _CollectLinks(md)
    md.treeprocessors.register(collector, "mxjob_collect_links", 0)
    try:
        md.convert(text)
    finally:
        md.treeprocessors.deregister("mxjob_collect_links")
    return collector.links


def find_shown(
    repo: RepoLinks,
    pages: Sequence[tuple[str, str]],
    md: markdown.Markdown,
    docs_files: Collection[str],
) -> dict[str, Target]:
    """Every repository file or directory the pages link, and those that the Markdown files
    and listings shown in turn link, by the site file that shows each (fills repo.shown).

    ``pages`` is ``(src_uri, Markdown)`` of the docs' pages, ``docs_files`` the src_uris of all
    the docs' files. Raises LinkError naming every broken link: to a repository file that does
    not exist or is outside the repository, or, from a shown Markdown file (README.md), to a
    docs file that does not exist (MkDocs checks the links between the docs' own pages)."""
    queue: deque[tuple[str, str]] = deque(pages)
    broken: list[str] = []
    while queue:
        page_uri, text = queue.popleft()
        for url, image in links_in(md, text):
            try:
                found = repo.target_of(page_uri, url, image=image)
            except LinkError as error:
                broken.append(str(error))
                continue
            if found is None:
                continue
            target = found[0]
            uri = site_uri(repo.root, repo.docs_prefix, target)
            if target.kind == "docs":
                if is_shown(page_uri) and uri not in docs_files:
                    page = page_repo_path(page_uri, repo.docs_prefix)
                    broken.append(
                        f"{page}: the link '{url}' is broken: {target.path} does not exist"
                    )
                continue
            if uri in repo.shown:
                continue
            repo.shown[uri] = target
            if uri.endswith(".md") and target.kind in ("markdown", "directory"):
                queue.append((uri, _source(repo.root, uri, target)))
    if broken:
        raise LinkError("".join(f"\n  - {line}" for line in broken))
    return repo.shown


def _source(root: Path, uri: str, target: Target) -> str:
    """The Markdown of a shown page that can link further: a Markdown file, or a listing."""
    if target.kind == "directory" and uri.endswith("/index.md"):
        return get_data(directory_page(root, target.path))[0]
    path = uri[len(REPO_PREFIX) + 1 :]
    return get_data((root / path).read_text(encoding="utf-8"))[0]


def site_file(config: MkDocsConfig, root: Path, uri: str, target: Target) -> File:
    """The MkDocs file for a shown repository file (in the site, not in the nav)."""
    keep = InclusionLevel.NOT_IN_NAV
    if target.kind == "text":
        text = (root / target.path).read_text(encoding="utf-8")
        return File.generated(config, uri, content=text_page(target.path, text), inclusion=keep)
    if target.kind == "directory" and uri.endswith("/index.md"):
        listing = directory_page(root, target.path)
        return File.generated(config, uri, content=listing, inclusion=keep)
    source = root / uri[len(REPO_PREFIX) + 1 :]
    return File.generated(config, uri, abs_src_path=str(source), inclusion=keep)


class _RewriteLinks(Treeprocessor):
    def __init__(self, md: markdown.Markdown, state: _State) -> None:
        super().__init__(md)
        self.state = state

    def run(self, root: Element) -> None:
        page = self.state.page
        if page is None:
            return
        for element in root.iter():
            key = {"a": "href", "img": "src"}.get(element.tag)
            if key is None or (url := element.get(key)) is None:
                continue
            element.set(key, self.state.repo.rewrite(page, url, image=element.tag == "img"))


class _RewriteLinksExtension(Extension):
    def __init__(self, state: _State) -> None:
        super().__init__()
        self.state = state

    def extendMarkdown(self, md: markdown.Markdown) -> None:  # noqa: N802 (Markdown's API)
        # MkDocs' own link processor ("relpath") runs at priority 0: this one runs before it.
        md.treeprocessors.register(_RewriteLinks(md, self.state), "mxjob_repo_links", 0.5)


@dataclass
class _State:
    repo: RepoLinks
    page: str | None = None


_state: _State | None = None


def _current() -> _State:
    if _state is None:
        raise PluginError("docs_hooks: on_config did not run")
    return _state


def on_config(config: MkDocsConfig, /) -> MkDocsConfig:
    global _state  # noqa: PLW0603 (MkDocs hooks are module functions: the build's state)
    root = Path(config.config_file_path).resolve().parent
    docs = Path(config.docs_dir).resolve()
    if not docs.is_relative_to(root):
        raise PluginError(f"docs_hooks: docs_dir {docs} is not inside {root}")
    _state = _State(RepoLinks(root, docs.relative_to(root).as_posix()))
    config.markdown_extensions.append(_RewriteLinksExtension(_state))  # type: ignore[arg-type]
    return config


def _parser(config: MkDocsConfig) -> markdown.Markdown:
    extensions = [
        extension
        for extension in config.markdown_extensions
        if not isinstance(extension, _RewriteLinksExtension)
    ]
    return markdown.Markdown(extensions=extensions, extension_configs=config.mdx_configs)


def _pages(files: Files) -> Iterator[tuple[str, str]]:
    for file in files.documentation_pages():
        yield file.src_uri, get_data(file.content_string)[0]


def on_files(files: Files, /, *, config: MkDocsConfig) -> Files:
    state = _current()
    state.repo.shown.clear()
    docs_files = {file.src_uri for file in files}
    try:
        shown = find_shown(state.repo, list(_pages(files)), _parser(config), docs_files)
    except LinkError as error:
        raise PluginError(f"links that the site cannot follow:{error}") from None
    for uri, target in shown.items():
        files.append(site_file(config, state.repo.root, uri, target))
    return files


def on_page_markdown(text: str, /, *, page: Page, config: MkDocsConfig, files: Files) -> str | None:
    del config, files
    _current().page = page.file.src_uri
    return text


def on_page_content(html: str, /, *, page: Page, config: MkDocsConfig, files: Files) -> str | None:
    del page, config, files
    _current().page = None
    return html
