"""What an image is built from: its build context's files after the .dockerignore rules, and one
digest of them all, the cache key of the image (pure: no build tool needed)."""

from __future__ import annotations

import fnmatch
import hashlib
import os
from collections.abc import Sequence
from pathlib import Path


# -- inputs (pure) ---------------------------------------------------------------------------------
def ignore_patterns(text: str) -> list[str]:
    return [
        line.strip()
        for line in text.splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]


def _matches(pattern: str, relative: str) -> bool:
    """Does a .dockerignore ``pattern`` cover ``relative`` (a file) or one of its folders?"""
    pattern = pattern.strip("/")
    parts = relative.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    if pattern.startswith("**/"):
        tail = pattern[3:]
        return any(fnmatch.fnmatchcase(part, tail) for part in parts)
    return any(fnmatch.fnmatchcase(prefix, pattern) for prefix in prefixes)


def included(relative: str, patterns: Sequence[str]) -> bool:
    """The last pattern that matches decides; ``!`` lets a path back in."""
    keep = True
    for pattern in patterns:
        negated = pattern.startswith("!")
        if _matches(pattern.lstrip("!"), relative):
            keep = negated
    return keep


def context_files(context: Path, patterns: Sequence[str]) -> list[Path]:
    """The files of ``context`` the ignore patterns let in, sorted.

    A folder that is left out, and that no ``!`` pattern could let a path back in from, is not
    walked at all: ``.local`` (with the real node's containerd state) and ``.venv`` are large.
    """
    negations = [p.lstrip("!").strip("/") for p in patterns if p.startswith("!")]

    def prunable(relative: str) -> bool:
        if included(relative, patterns):
            return False
        return not any(n.startswith("**") or n.startswith(f"{relative}/") for n in negations)

    found = []
    for root, dirs, files in os.walk(context):
        base = Path(root)
        dirs[:] = [d for d in dirs if not prunable((base / d).relative_to(context).as_posix())]
        for name in files:
            path = base / name
            if path.is_file() and included(path.relative_to(context).as_posix(), patterns):
                found.append(path)
    return sorted(found)


def inputs_digest(
    *, dockerfile: Path, context: Path, patterns: Sequence[str], build_args: dict[str, str]
) -> str:
    """sha256 over everything a build reads: a change to any of it is a new image."""
    digest = hashlib.sha256()
    digest.update(dockerfile.read_bytes())
    for key in sorted(build_args):
        digest.update(f"\0arg {key}={build_args[key]}".encode())
    for path in context_files(context, patterns):
        digest.update(f"\0file {path.relative_to(context).as_posix()}\0".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()
