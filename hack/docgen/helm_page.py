"""docs/reference/helm-values.md: every value of the chart, from its schema and its defaults.

``charts/mxjob-operator/values.schema.json`` is what Helm checks a release's values against, so
it knows every key, its type and what it allows; ``values.yaml`` holds the defaults and, in its
comments, the longer story of a value. The page takes the description from the schema and, where
the schema has none, the comment written right above the key in values.yaml.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from docgen.crd import ROOT
from docgen.markdown import code, codes, header, page, prose, table

MODULE = "hack/docgen/helm_page.py"
CHART = ROOT / "charts" / "mxjob-operator"
SCHEMA = CHART / "values.schema.json"
VALUES = CHART / "values.yaml"
LONGEST_DEFAULT = 60
"""Longer defaults (whole objects) are left to values.yaml."""


def value_comments(path: Path = VALUES) -> dict[str, str]:
    """Dotted key → the prose of the comment right above it in values.yaml.

    A blank line ends a comment that belongs to no key. The prose stops at the first example
    (a line indented within the comment, a command or a table) and drops a sentence that
    introduces it, which would dangle without it.
    """
    found: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    comment: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            comment.append(stripped[1:])
            continue
        if not stripped or stripped.startswith("-") or ":" not in stripped:
            comment = []
            continue
        indent = len(line) - len(line.lstrip())
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, stripped.split(":", 1)[0].strip().strip("\"'")))
        if comment:
            found[".".join(k for _, k in stack)] = _comment_prose(comment)
        comment = []
    return found


def _comment_prose(lines: list[str]) -> str:
    kept: list[str] = []
    for line in lines:
        if line.startswith("   "):
            break
        kept.append(line.strip())
    text = " ".join(kept)
    if text.endswith(":"):
        cut = text.rfind(". ")
        text = text[: cut + 1] if cut >= 0 else ""
    return text


def _types(schema: Mapping[str, Any]) -> list[str]:
    kind = schema.get("type")
    if isinstance(kind, list):
        return [str(k) for k in kind]
    if kind:
        return [str(kind)]
    found: list[str] = []
    for option in schema.get("oneOf") or schema.get("anyOf") or []:
        found += [t for t in _types(option) if t not in found]
    return found


def type_name(schema: Mapping[str, Any]) -> str:
    names = _types(schema)
    if names == ["array"] and isinstance(schema.get("items"), Mapping):
        return f"array of {type_name(schema['items'])}"
    if names == ["object"] and isinstance(schema.get("additionalProperties"), Mapping):
        return f"map of {type_name(schema['additionalProperties'])}"
    return " or ".join(names) or "any"


def allowed(schema: Mapping[str, Any]) -> str:
    found: list[str] = []
    if "enum" in schema:
        found.append(codes(schema["enum"]))
    if "const" in schema:
        found.append(code(schema["const"]))
    if "pattern" in schema:
        found.append(f"matches {code(schema['pattern'])}")
    for key, text in (("minimum", "≥ {}"), ("maximum", "≤ {}"), ("minItems", "≥ {} items")):
        if key in schema:
            found.append(text.format(schema[key]))
    if schema.get("minLength") == 1:
        found.append("not empty")
    if "minProperties" in schema:
        found.append(f"≥ {schema['minProperties']} keys")
    for option in schema.get("oneOf") or schema.get("anyOf") or []:
        text = allowed(option)
        if text:
            found.append(text)
    return "; ".join(found)


def default_text(defaults: Mapping[str, Any], path: str) -> str:
    value: Any = defaults
    for key in path.split("."):
        if not isinstance(value, Mapping) or key not in value:
            return ""
        value = value[key]
    text = json.dumps(value, separators=(", ", ": "))
    return code(text) if len(text) <= LONGEST_DEFAULT else "see values.yaml"


def walk(schema: Mapping[str, Any], path: str = "") -> Iterator[tuple[str, Mapping[str, Any]]]:
    for key, sub in (schema.get("properties") or {}).items():
        where = f"{path}.{key}" if path else key
        yield where, sub
        yield from walk(sub, where)


def render() -> str:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    defaults = yaml.safe_load(VALUES.read_text(encoding="utf-8"))
    comments = value_comments()
    rows = []
    for path, sub in walk(schema):
        has_children = bool(sub.get("properties"))
        text = prose(str(sub.get("description") or comments.get(path, "")))
        default = "" if has_children else default_text(defaults, path)
        rows.append([code(path), type_name(sub), default, allowed(sub), text])
    return page(
        header(MODULE),
        "# Helm values",
        "The values of the chart `charts/mxjob-operator`, from its schema "
        "(charts/mxjob-operator/values.schema.json) with the defaults of its values.yaml. "
        "Helm refuses a value of the wrong type and an unknown key, naming it. Every default "
        "renders what the kustomize install `manifests/overlays/in-cluster` renders.",
        "Set them with `--set key=value` or `-f my-values.yaml`; the flags the processes take "
        "(through `controller.extraArgs` and `webhook.extraArgs`) are in "
        "[Flags and environment variables](flags.md).",
        table(["Value", "Type", "Default", "Allowed", "Description"], rows),
    )
