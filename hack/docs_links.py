"""The pure logic of the docs site's links to repository files (hack/docs_hooks.py uses it).

A page links a repository file outside docs/ by its relative path (as a code host reads it);
these functions resolve such a link against the page's path in the repository, say what the
target is, and name the site file under ``_repo/`` that shows it.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import unquote, urlsplit

# Where the site keeps the repository files the pages link: _repo/<path in the repository>.
REPO_PREFIX = "_repo"
# A text file larger than this is linked as a file to download, not shown in a page.
MAX_SHOWN_BYTES = 1_000_000
SKIPPED_IN_LISTINGS = ("__pycache__",)

Kind = Literal["docs", "markdown", "text", "directory", "asset"]

LANGUAGES = {
    ".yaml": "yaml",
    ".yml": "yaml",
    ".py": "python",
    ".sh": "bash",
    ".env": "bash",
    ".json": "json",
    ".toml": "toml",
    ".cfg": "ini",
    ".ini": "ini",
    ".go": "go",
    ".patch": "diff",
    ".diff": "diff",
    ".svg": "xml",
    ".xml": "xml",
    ".tpl": "text",
}
LANGUAGES_BY_NAME = {"Makefile": "make", "Dockerfile": "dockerfile"}


class LinkError(Exception):
    """A link to a repository file that the site cannot follow."""


@dataclass(frozen=True)
class Target:
    """What a link points to: a path relative to the repository's root ("" is the root)."""

    path: str
    kind: Kind


def split_link(url: str) -> tuple[str, str] | None:
    """``(path, rest)`` of a relative link to a file (``rest`` is ``?query#anchor``), or None
    for what the hook leaves alone: external links, absolute paths, a page's own anchors."""
    if url.startswith(("/", "\\")):
        return None
    parts = urlsplit(url)
    if parts.scheme or parts.netloc or not parts.path:
        return None
    rest = (f"?{parts.query}" if parts.query else "") + (
        f"#{parts.fragment}" if parts.fragment else ""
    )
    return unquote(parts.path), rest


def resolve_link(page: str, path: str) -> str:
    """The repository path that ``path``, linked from the page at repository path ``page``,
    points to ("" for the root). Raises LinkError if it leaves the repository."""
    target = posixpath.normpath(posixpath.join(posixpath.dirname(page), path))
    if target == ".." or target.startswith("../"):
        raise LinkError("it points outside the repository")
    return "" if target == "." else target


def in_docs(path: str, docs_prefix: str) -> bool:
    return path == docs_prefix or path.startswith(docs_prefix + "/")


def _is_text(file: Path) -> bool:
    if file.stat().st_size > MAX_SHOWN_BYTES:
        return False
    data = file.read_bytes()
    if b"\0" in data:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def classify(root: Path, docs_prefix: str, path: str, *, image: bool = False) -> Target:
    """What the repository path ``path`` is. Inside docs/ it is MkDocs' own (``docs``: MkDocs
    checks it); outside, it must exist, or LinkError says it does not."""
    if in_docs(path, docs_prefix):
        return Target(path, "docs")
    file = root / path
    if not file.exists():
        raise LinkError(f"{path or '.'} does not exist in the repository")
    if file.is_dir():
        return Target(path, "directory")
    if not image and file.suffix == ".md":
        return Target(path, "markdown")
    if not image and _is_text(file):
        return Target(path, "text")
    return Target(path, "asset")


def site_uri(root: Path, docs_prefix: str, target: Target) -> str:
    """The file of the site (its path under docs_dir, as MkDocs names it) that shows ``target``."""
    if target.kind == "docs":
        inside = posixpath.relpath(target.path, docs_prefix)
        inside = "" if inside == "." else inside
        return posixpath.join(inside, "index.md") if (root / target.path).is_dir() else inside
    if target.kind == "directory":
        readme = "README.md" if (root / target.path / "README.md").is_file() else "index.md"
        return posixpath.join(REPO_PREFIX, target.path, readme)
    if target.kind == "text":
        return posixpath.join(REPO_PREFIX, target.path + ".md")
    return posixpath.join(REPO_PREFIX, target.path)


def page_repo_path(src_uri: str, docs_prefix: str) -> str:
    """The repository path a site page stands for: docs/<uri> for the docs' own pages, the
    repository path itself for the pages under _repo/ (a listing: <directory>/index.md)."""
    if src_uri.startswith(REPO_PREFIX + "/"):
        return src_uri[len(REPO_PREFIX) + 1 :]
    return posixpath.join(docs_prefix, src_uri)


def relative_link(from_uri: str, to_uri: str, rest: str) -> str:
    """The link from the site file ``from_uri`` to the site file ``to_uri``."""
    return posixpath.relpath(to_uri, posixpath.dirname(from_uri) or ".") + rest


def fence(text: str) -> str:
    """A backtick fence longer than any run of backticks in ``text`` (at least three)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def language(path: str) -> str:
    name = posixpath.basename(path)
    for prefix, lang in LANGUAGES_BY_NAME.items():
        if name.startswith(prefix):
            return lang
    return LANGUAGES.get(posixpath.splitext(name)[1], "text")


# The pages of repository files are left out of the search: the docs' pages say what they mean.
FRONT_MATTER = "---\nsearch:\n  exclude: true\n---\n\n"


def text_page(path: str, text: str) -> str:
    """A page that shows the repository's text file ``path``."""
    marks = fence(text)
    body = text if text.endswith("\n") or not text else text + "\n"
    return (
        f"{FRONT_MATTER}# {path}\n\nThe repository's file `{path}`.\n\n"
        f"{marks}{language(path)}\n{body}{marks}\n"
    )


def directory_page(root: Path, path: str) -> str:
    """A page that lists the directory ``path`` of the repository: its files as links, its
    subdirectories by name (each is in the repository; the site has those that pages link)."""
    entries = sorted(
        (root / path).iterdir(), key=lambda entry: (not entry.is_dir(), entry.name.lower())
    )
    lines = []
    for entry in entries:
        if entry.name.startswith(".") or entry.name in SKIPPED_IN_LISTINGS:
            continue
        if entry.name.endswith(".egg-info"):
            continue
        if entry.is_dir():
            lines.append(f"- `{entry.name}/`")
        else:
            lines.append(f"- [`{entry.name}`]({entry.name})")
    title = f"{path}/" if path else "The repository"
    return (
        f"{FRONT_MATTER}# {title}\n\nA directory of the repository.\n\n" + "\n".join(lines) + "\n"
    )


def is_shown(src_uri: str) -> bool:
    """Whether a site file shows a repository file from outside docs/ (it is under _repo/)."""
    return src_uri.startswith(REPO_PREFIX + "/")


def leaves_docs(src_uri: str, url: str) -> bool:
    """Whether a relative link on the docs' page ``src_uri`` goes out of docs/ on its way (as
    ``../../docs/index.md`` from how-to/x.md does): MkDocs would not find its target."""
    split = split_link(url)
    if split is None:
        return False
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(src_uri), split[0]))
    return joined == ".." or joined.startswith("../")
