"""Valid and invalid MXJobs streamed at the webhook while something changes under it.

``AdmissionTraffic`` creates, in a loop, one valid MXJob (suspended: admitted, never run) and one
that the webhook must refuse (two Workers in a job without a Scheduler), through ``kubectl
create`` as a user would, and counts every wrong answer: a valid job refused (the webhook could
not be reached or its certificate not verified; ``failurePolicy: Fail`` turns that into a
refusal) or an invalid one admitted. The real-node tests use it while the webhook rolls and while
cert-manager renews its certificate or CA.

The stream goes on after its block until it has sent ``at_least`` jobs of each kind: a change that
ends quickly on a busy machine (a renewal served in a few seconds while every core is taken) must
not fail the test for traffic the block was too short to send, and the jobs sent after the change
check that the webhook still answers right once it is done.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from tests.helpers.mxjobs import mxjob

Kubectl = Callable[..., Any]
CREATE_TIMEOUT = 30.0
"""Seconds one ``kubectl create`` may take: the API server's webhook timeout is 10 s."""


def single_worker_job(name: str, image: str, command: list[str]) -> dict[str, Any]:
    """A single-node MXJob (one Worker) running ``command`` in ``image``, asking for little."""
    return mxjob(
        name,
        mode=None,
        replicas={"Worker": 1},
        image=image,
        command=command,
        resources={"requests": {"cpu": "10m", "memory": "32Mi"}},
    )


@dataclass
class AdmissionTraffic:
    """What the stream sent and every wrong answer it got."""

    at_least: int = 10
    """Jobs of each kind the stream sends before it stops, however short its block."""
    sent: dict[str, int] = field(default_factory=lambda: {"valid": 0, "invalid": 0})
    refused_valid: list[str] = field(default_factory=list)
    admitted_invalid: list[str] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)
    """Why the stream stopped before it was told to, or did not stop: a kubectl that hung past
    its timeout, or anything else that ended the thread; kept to be raised, not lost with it."""

    def enough_sent(self) -> bool:
        return min(self.sent.values()) >= self.at_least

    def assert_no_wrong_answer(self) -> None:
        assert self.broken == [], self.broken
        assert self.enough_sent(), (self.sent, f"at least {self.at_least} of each")
        assert self.refused_valid == [], self.refused_valid[:3]
        assert self.admitted_invalid == [], self.admitted_invalid[:3]

    def __str__(self) -> str:
        wrong = len(self.refused_valid) + len(self.admitted_invalid)
        valid, invalid = self.sent["valid"], self.sent["invalid"]
        return f"{valid} valid and {invalid} invalid MXJobs, {wrong} wrong answers"


@contextmanager
def admission_traffic(
    kubectl: Kubectl, *, namespace: str, image: str, prefix: str, at_least: int = 10
) -> Iterator[AdmissionTraffic]:
    """Stream jobs into ``namespace`` until the block ends and ``at_least`` of each kind were
    sent; names start with ``prefix``."""
    traffic = AdmissionTraffic(at_least=at_least)
    stop = threading.Event()

    def stream() -> None:
        try:
            send_until_stopped()
        except Exception as error:  # kept for assert_no_wrong_answer, raised there
            traffic.broken.append(f"{type(error).__name__}: {error}")

    def send_until_stopped() -> None:
        index = 0
        while not (stop.is_set() and traffic.enough_sent()):
            index += 1
            valid = single_worker_job(f"{prefix}-valid-{index}", image, ["true"])
            valid["spec"]["runPolicy"] = {"suspend": True}
            invalid = single_worker_job(f"{prefix}-invalid-{index}", image, ["true"])
            invalid["spec"]["mxReplicaSpecs"]["Worker"]["replicas"] = 2  # single-node: 1 only
            for kind, job in (("valid", valid), ("invalid", invalid)):
                result = kubectl(
                    "create", "-n", namespace, "-f", "-", input_text=json.dumps(job),
                    check=False, timeout=CREATE_TIMEOUT,
                )  # fmt: skip
                traffic.sent[kind] += 1
                if kind == "valid" and result.returncode != 0:
                    traffic.refused_valid.append(result.stderr.strip())
                if kind == "invalid" and result.returncode == 0:
                    traffic.admitted_invalid.append(job["metadata"]["name"])

    thread = threading.Thread(target=stream, daemon=True)
    thread.start()
    try:
        yield traffic
    finally:
        stop.set()
        # Each pair still to send may take two creates' timeouts, then one more in flight.
        to_send = max(0, traffic.at_least - min(traffic.sent.values()))
        limit = 2 * CREATE_TIMEOUT * (to_send + 1)
        thread.join(timeout=limit)
        if thread.is_alive():
            traffic.broken.append(f"the stream still ran {limit:g} s after the stop")
