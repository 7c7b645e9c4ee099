"""The rules of the user pages (README.md, and docs/ except docs/development/), as a pure check.

A user page states what is true now, with the command that reproduces each figure. It cites no
commit hash, no date and no run story: those age, and belong to the contributors' notes
(docs/development/lab-notes.md) or the benchmark findings (bench/findings.md).

- A commit hash is a word of 7 to 40 lowercase hex digits with at least one digit and one
  letter (``3f2a1b9``; not ``1234567``, a number, nor ``deadbeef``... a word with no digit).
  Inside a fenced code block such a word is a digest or an id in a command's output, so the
  check skips fenced blocks; a digest written ``sha256:<hex>`` (or ``sha512:``) passes anywhere.
- A date is ``YYYY-MM-DD`` (a year 19xx or 20xx, a month 01-12, a day 01-31), anywhere: a date
  in an example's output says when it ran just as much as one in a sentence.
- A run story is one of RUN_STORY_PHRASES (any case), anywhere.

tests/docs/test_docs_lint.py runs it on the pages and on samples.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

COMMIT_HASH = re.compile(r"(?<![0-9A-Za-z_])(?<!sha256:)(?<!sha512:)[0-9a-f]{7,40}(?![0-9A-Za-z_])")
DATE = re.compile(
    r"(?<![0-9])(?:19|20)[0-9]{2}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])(?![0-9])"
)
RUN_STORY_PHRASES = (
    "cold run",
    "verified here",
    "an hour later",
    "run story",
    "run stories",
    "this stop",
    "earlier run",
    "fresh machine's first",
    "this session",
    "previous run",
)
# Not "the last run": "this page again from the last run's JSON" says what a command reads.
RUN_STORY = re.compile(
    r"\b(?:" + "|".join(re.escape(phrase) for phrase in RUN_STORY_PHRASES) + r")",
    re.IGNORECASE,
)
FENCE = re.compile(r"^\s*(`{3,}|~{3,})")


@dataclass(frozen=True)
class Finding:
    line: int
    rule: str
    text: str

    def describe(self, path: str) -> str:
        return f"{path}:{self.line}: {self.rule}: {self.text!r}"


def is_commit_hash(word: str) -> bool:
    """Whether a hex word reads as a commit hash: it has a digit and a letter."""
    return any(c.isdigit() for c in word) and any(c.isalpha() for c in word)


def _lines(text: str) -> Iterator[tuple[int, str, bool]]:
    """``(line number, line, inside a fenced code block)``; the fence lines count as inside."""
    fence: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        match = FENCE.match(line)
        if fence is None and match:
            fence = match.group(1)
            yield number, line, True
        elif fence is not None:
            # A fence closes with the same character, at least as many, and nothing after.
            if match and match.group(1).startswith(fence) and line.strip() == match.group(1):
                fence = None
            yield number, line, True
        else:
            yield number, line, False


def check(text: str) -> list[Finding]:
    """Every commit hash, date and run-story phrase in the Markdown ``text``."""
    findings = []
    for number, line, fenced in _lines(text):
        if not fenced:
            findings += [
                Finding(number, "commit hash", word)
                for word in COMMIT_HASH.findall(line)
                if is_commit_hash(word)
            ]
        findings += [Finding(number, "date", date) for date in DATE.findall(line)]
        findings += [
            Finding(number, "run story", match.group(0)) for match in RUN_STORY.finditer(line)
        ]
    return findings


def user_pages(root: Path) -> list[Path]:
    """README.md and every page under docs/ but docs/development/ (the contributors' notes)."""
    docs = root / "docs"
    pages = [
        page for page in sorted(docs.rglob("*.md")) if (docs / "development") not in page.parents
    ]
    return [root / "README.md", *pages]
