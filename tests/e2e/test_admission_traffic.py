"""The admission stream of the real-node tests (tests/e2e/admission_traffic.py): what it counts,
and that it sends its minimum of each kind however short its block, with a stand-in kubectl whose
answers the test chooses (what a real webhook answers is the real-node tests' own evidence)."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from tests.e2e.admission_traffic import admission_traffic


class StandInKubectl:
    """Answers ``kubectl create``: refuses a job with two Workers, admits the others, or admits
    everything when ``admit_all``; records each job's name."""

    def __init__(self, *, admit_all: bool = False) -> None:
        self.admit_all = admit_all
        self.names: list[str] = []  # the stream sends from one thread: no lock needed

    def __call__(self, *args: str, input_text: str, **_: Any) -> subprocess.CompletedProcess[str]:
        job = json.loads(input_text)
        self.names.append(job["metadata"]["name"])
        refused = job["spec"]["mxReplicaSpecs"]["Worker"]["replicas"] != 1 and not self.admit_all
        return subprocess.CompletedProcess(
            ["kubectl", *args], 1 if refused else 0, "", "denied" if refused else ""
        )


def test_an_empty_block_still_sends_the_minimum_of_each_kind_and_finds_no_wrong_answer() -> None:
    kubectl = StandInKubectl()
    with admission_traffic(kubectl, namespace="ns", image="img", prefix="t", at_least=4) as traffic:
        pass
    assert traffic.sent["valid"] >= 4 and traffic.sent["invalid"] >= 4
    traffic.assert_no_wrong_answer()
    assert kubectl.names[:2] == ["t-valid-1", "t-invalid-1"]


def test_an_admitted_invalid_job_is_a_wrong_answer_named_by_the_assertion() -> None:
    kubectl = StandInKubectl(admit_all=True)
    with admission_traffic(kubectl, namespace="ns", image="img", prefix="t", at_least=2) as traffic:
        pass
    assert traffic.admitted_invalid[:2] == ["t-invalid-1", "t-invalid-2"]
    with pytest.raises(AssertionError, match="t-invalid-1"):
        traffic.assert_no_wrong_answer()


def test_a_stream_that_breaks_is_reported_and_not_waited_for() -> None:
    def failing(*_: str, **__: Any) -> subprocess.CompletedProcess[str]:
        raise subprocess.TimeoutExpired("kubectl", 30)

    with admission_traffic(failing, namespace="ns", image="img", prefix="t") as traffic:
        pass
    assert traffic.broken and "TimeoutExpired" in traffic.broken[0]
    assert traffic.sent == {"valid": 0, "invalid": 0}
