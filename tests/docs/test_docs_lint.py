"""The user pages (README.md, docs/ except docs/development/) state what is true now: no commit
hash, no date, no run story (tests/helpers/docs_lint.py says each rule), and the performance
page stays short."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.docs_lint import Finding, check, is_commit_hash, user_pages

ROOT = Path(__file__).resolve().parents[2]
PERFORMANCE = ROOT / "docs" / "explanation" / "performance.md"
PERFORMANCE_LINES = 150


def test_the_user_pages_cite_no_hash_no_date_and_no_run_story() -> None:
    findings = [
        finding.describe(str(page.relative_to(ROOT)))
        for page in user_pages(ROOT)
        for finding in check(page.read_text(encoding="utf-8"))
    ]
    assert not findings, (
        "move these to docs/development/lab-notes.md or bench/findings.md, or say what is "
        "true now:\n" + "\n".join(findings)
    )


def test_the_performance_page_is_short() -> None:
    lines = len(PERFORMANCE.read_text(encoding="utf-8").splitlines())
    assert lines < PERFORMANCE_LINES, (
        f"docs/explanation/performance.md: {lines} lines, not under {PERFORMANCE_LINES}: "
        "move findings to bench/findings.md"
    )


def test_user_pages_are_the_readme_and_docs_but_the_contributors_notes(tmp_path: Path) -> None:
    for name in ("README.md", "docs/index.md", "docs/how-to/a.md", "docs/development/notes.md"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    pages = [p.relative_to(tmp_path).as_posix() for p in user_pages(tmp_path)]
    assert pages == ["README.md", "docs/how-to/a.md", "docs/index.md"]


@pytest.mark.parametrize(
    "word", ["3f2a1b9", "64aa7e4", "a7cc5c2", "0123456789abcdef0123456789abcdef01234567"]
)
def test_a_hex_word_with_digits_and_letters_is_a_commit_hash(word: str) -> None:
    assert is_commit_hash(word)


@pytest.mark.parametrize("word", ["1234567", "deadbeef", "facade"])
def test_a_number_or_a_word_is_no_commit_hash(word: str) -> None:
    assert not is_commit_hash(word)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Fixed in 3f2a1b9.\n", [Finding(1, "commit hash", "3f2a1b9")]),
        ("ok\nsee `64aa7e4`\n", [Finding(2, "commit hash", "64aa7e4")]),
        ("(a7cc5c2)", [Finding(1, "commit hash", "a7cc5c2")]),
        ("the pod web-7d9f8c6b5-x2k4z", [Finding(1, "commit hash", "7d9f8c6b5")]),
        (
            "commit/0123456789abcdef0123456789abcdef01234567",
            [Finding(1, "commit hash", "0123456789abcdef0123456789abcdef01234567")],
        ),
        ("measured on 2026-11-29", [Finding(1, "date", "2026-11-29")]),
        ("```\nStarted 2026-05-09T07:29:33Z\n```\n", [Finding(2, "date", "2026-05-09")]),
        ("A sixth cold run took 3465 s", [Finding(1, "run story", "cold run")]),
        ("Verified here on a 2-core machine", [Finding(1, "run story", "Verified here")]),
        ("An hour later it passed", [Finding(1, "run story", "An hour later")]),
        ("as in this stop", [Finding(1, "run story", "this stop")]),
        ("faster than the earlier runs", [Finding(1, "run story", "earlier run")]),
        ("the fresh machine's first make test", [Finding(1, "run story", "fresh machine's first")]),
        ("as the previous runs did", [Finding(1, "run story", "previous run")]),
        ("```sh\n# before this session\n```\n", [Finding(2, "run story", "this session")]),
    ],
)
def test_check_finds(text: str, expected: list[Finding]) -> None:
    assert check(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        # a hash-like word in a fenced block: a digest or an id in a command's output
        "```\nimage@sha256:3f2a1b9c\nmxjob-worker-0 abc1234\n```\n",
        "~~~~\n3f2a1b9\n```\nstill inside\n~~~~\n",
        "   ```yaml\n   uid: 3f2a1b9c\n   ```\n",
        # digests, numbers, words, versions and addresses
        "pinned by `sha256:3f2a1b9c`, and `sha512:0a1b2c3d4e`",
        "a digest of 64: " + "3f2a1b9c" * 8,
        "1234567 jobs; deadbeef; 0xdeadbeef1; v1beta1; e2e; 3f2a1b",
        "v1.28.15, 10.0.0.0/8, 127.0.0.1:8443, 2026-13-01, 12026-11-29",
        "run the job; a cold start; verify it here; the run's story",
        "this page again from the last run's JSON",
    ],
)
def test_check_passes(text: str) -> None:
    assert check(text) == []


def test_a_finding_names_the_file_line_and_text() -> None:
    finding = check("\n\nsee 3f2a1b9\n")[0]
    assert finding.describe("README.md") == "README.md:3: commit hash: '3f2a1b9'"
