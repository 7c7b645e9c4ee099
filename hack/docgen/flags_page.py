"""docs/reference/flags.md: every setting of both processes, as flag and environment variable.

Each process reads one frozen settings dataclass from its argument parser and its environment
(controller/runtime/settings.py, webhook/settings.py). The page is made from those three things:
the parser gives the flags and their values, the dataclass's attribute docstrings the
descriptions, and a parse of an empty command line in an empty environment the defaults the
process really starts with (not the dataclass's, which the webhook's entry point overrides).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from controller.runtime import settings as controller_settings
from docgen.markdown import code, codes, header, link, page, rst_to_markdown, table
from docgen.sources import attribute_docs
from webhook import settings as webhook_settings

MODULE = "hack/docgen/flags_page.py"
NOTES = {
    ("mxjob-controller", "namespaces"): "Repeat the flag for more namespaces; the variable takes "
    "them separated by commas or spaces.",
}
"""What a setting's docstring does not say about how it is given."""


@dataclass(frozen=True)
class Process:
    """One process: its program name, settings class, parser, environment prefix, which
    settings its environment sets, and how it parses an empty command line."""

    program: str
    settings: type
    parser: argparse.ArgumentParser
    env_prefix: str
    env_settings: tuple[str, ...]
    parse: Callable[[], object]


def processes() -> list[Process]:
    return [
        Process(
            program="mxjob-controller",
            settings=controller_settings.ControllerSettings,
            parser=controller_settings._parser(),
            env_prefix=controller_settings.ENV_PREFIX,
            env_settings=tuple(controller_settings.ControllerSettings.__dataclass_fields__),
            parse=lambda: controller_settings.from_args([], environ={}),
        ),
        Process(
            program="mxjob-webhook",
            settings=webhook_settings.WebhookSettings,
            parser=webhook_settings._parser(),
            env_prefix=webhook_settings.ENV_PREFIX,
            env_settings=tuple(webhook_settings._CONVERTERS),
            parse=lambda: webhook_settings.from_env_and_args([], environ={}),
        ),
    ]


def flag_actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The parser's documented flags (not ``--help``, not the hidden deprecated ones)."""
    return [
        a
        for a in parser._actions
        if a.option_strings and a.help != argparse.SUPPRESS and a.dest != "help"
    ]


TYPE_NAMES: dict[object, str] = {int: "integer", float: "number", Path: "path", bool: "on or off"}


def values(action: argparse.Action | None, default: object) -> str:
    """What a setting takes: its choices, else its type (the default's when it has no flag)."""
    if action is None:
        return TYPE_NAMES.get(type(default), "string")
    if action.choices is not None:
        return codes(action.choices)
    if isinstance(action, argparse.BooleanOptionalAction):
        return TYPE_NAMES[bool]
    return TYPE_NAMES.get(action.type, "string")


def default_text(value: object) -> str:
    """A default as a reader types it: ``true``, ``15``, ``""``; "unset" for None."""
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return code("true" if value else "false")
    if isinstance(value, float):
        return code(f"{value:g}")
    if isinstance(value, tuple):
        return "none (all)" if not value else codes(value)
    return code(value)


def _effective(process: Process) -> tuple[Mapping[str, Any], set[str]]:
    """The defaults a process starts with, and the settings whose default varies per start."""
    first, second = process.parse(), process.parse()
    names = [f.name for f in fields(process.settings)]
    varies = {n for n in names if getattr(first, n) != getattr(second, n)}
    return {n: getattr(first, n) for n in names}, varies


def rows(process: Process) -> list[list[str]]:
    """One row per setting the process reads from a flag or its environment."""
    docs = attribute_docs(process.settings)
    by_dest: dict[str, list[argparse.Action]] = {}
    for action in flag_actions(process.parser):
        by_dest.setdefault(action.dest, []).append(action)
    defaults, varies = _effective(process)
    found = []
    names = [f.name for f in fields(process.settings)]
    for name in names:
        actions = by_dest.pop(name, [])
        in_env = name in process.env_settings
        if not actions and not in_env:
            continue
        flags = "<br>".join(codes(a.option_strings, joiner=" / ") for a in actions) or "—"
        env = code(process.env_prefix + name.upper()) if in_env else "—"
        kind = values(actions[0] if actions else None, defaults[name])
        default = "varies" if name in varies else default_text(defaults[name])
        text = " ".join(filter(None, (docs.get(name, ""), NOTES.get((process.program, name)))))
        found.append([flags, env, kind, default, text])
    if by_dest:
        raise ValueError(f"{process.program}: flags of no setting: {sorted(by_dest)}")
    return found


def deprecated() -> str:
    old_env = {
        controller_settings.ENV_PREFIX + name.upper(): controller_settings.ENV_PREFIX + old
        for name, old in controller_settings.DEPRECATED_ENV.items()
    }
    rows = [[code(old), code(new)] for old, new in controller_settings.DEPRECATED_FLAGS.items()]
    rows += [[code(old), code(new)] for new, old in old_env.items()]
    return page(
        "### Old names",
        "Still accepted by `mxjob-controller` (hidden from `--help`; the flag prints a warning):",
        table(["Old name", "Use"], rows),
    )


def section(process: Process) -> str:
    description = process.parser.description or ""
    head = ["Flag", "Environment variable", "Values", "Default", "Description"]
    return page(
        f"## {process.program}",
        rst_to_markdown(description),
        table(head, rows(process)),
    )


def render() -> str:
    found = processes()
    parts: Iterable[str] = [section(p) for p in found]
    return page(
        header(MODULE),
        "# Flags and environment variables",
        "Both processes read every setting from a flag or from an environment variable: a flag "
        "wins over its variable, which wins over the default. Booleans are given as `true` or "
        "`false` in a variable, as `--flag` or `--no-flag` on the command line. With Helm, "
        "flags go in `controller.extraArgs` and `webhook.extraArgs` "
        f"({link('Helm values', 'helm-values.md')}). "
        "A default marked varies is made anew by every process.",
        *parts,
        deprecated(),
    )
