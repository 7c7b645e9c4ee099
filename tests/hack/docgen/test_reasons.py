"""docgen.reasons follows a reason from the call that writes it back to its values: through
parameters (positional, keyword, of methods), local assignments, loops and conditional
expressions, and says which come from data."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from docgen.reasons import Dynamic, Sink, Source

EVENT = Sink("EventSpec", {"type": (0, "type"), "reason": (1, "reason")})
SAMPLE = """
from enum import StrEnum

LATE = "Late"


class Reason(StrEnum):
    DONE = "Done"


def EventSpec(type, reason, message): ...


def finish(sync, ctype, reason, message):
    kind = "Normal" if ctype is Reason.DONE else "Warning"
    return EventSpec(kind, reason, message)


def succeed():
    return finish(None, Reason.DONE, Reason.DONE, "done")


def fail():
    return finish(None, ctype="Failed", reason=LATE, message="late")


def each():
    for reason in ("A", "B"):
        EventSpec("Normal", reason, "m")


def either(flag):
    chosen = "C" if flag else "D"
    EventSpec("Normal", chosen, "m")


def from_data(problem):
    EventSpec("Warning", problem.reason, "m")


class Keeper:
    def _event(self, event_type, reason):
        EventSpec(event_type, reason, "")

    def renew(self):
        self._event("Warning", "Replaced")
"""


@pytest.fixture
def source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Source:
    package = tmp_path / "reasons_sample"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "story.py").write_text(textwrap.dedent(SAMPLE))
    monkeypatch.syspath_prepend(str(tmp_path))
    return Source("reasons_sample", tmp_path)


def test_each_call_resolves_to_its_values_with_type_and_reason_kept_together(
    source: Source,
) -> None:
    found = [(c["type"], c["reason"]) for _, c in source.calls(EVENT)]
    assert sorted(found, key=str) == sorted(
        [
            ("Normal", "Done"),  # finish() from succeed(): the conditional picks Normal
            ("Warning", "Late"),  # finish() from fail(), by keyword
            ("Normal", "A"),
            ("Normal", "B"),
            ("Normal", "C"),
            ("Normal", "D"),
            ("Warning", Dynamic("reasons_sample.story", "problem.reason")),
            ("Warning", "Replaced"),  # a method's parameter, through self._event(...)
        ],
        key=str,
    )


def test_an_argument_left_out_takes_the_sinks_default(source: Source) -> None:
    sink = Sink("EventSpec", {"reason": (1, "reason"), "note": (None, "note")}, {"note": "x"})
    assert {c["note"] for _, c in source.calls(sink)} == {"x"}
