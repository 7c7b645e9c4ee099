"""Valid and invalid MXJobs streamed at the webhook while something changes under it.

``AdmissionTraffic`` creates, in a loop, one valid MXJob (suspended: admitted, never run) and one
that the webhook must refuse (two Workers in a job without a Scheduler), through ``kubectl
create`` as a user would, and counts every wrong answer: a valid job refused (the webhook could
not be reached or its certificate not verified; ``failurePolicy: Fail`` turns that into a
refusal) or an invalid one admitted. The real-node tests use it while the webhook rolls and while
cert-manager renews its certificate or CA.
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

    sent: dict[str, int] = field(default_factory=lambda: {"valid": 0, "invalid": 0})
    refused_valid: list[str] = field(default_factory=list)
    admitted_invalid: list[str] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)
    """Why the stream stopped before it was told to, or did not stop: a kubectl that hung past
    its timeout, or anything else that ended the thread; kept to be raised, not lost with it."""

    def assert_no_wrong_answer(self, *, at_least: int = 10) -> None:
        assert self.broken == [], self.broken
        assert self.sent["valid"] >= at_least and self.sent["invalid"] >= at_least, self.sent
        assert self.refused_valid == [], self.refused_valid[:3]
        assert self.admitted_invalid == [], self.admitted_invalid[:3]

    def __str__(self) -> str:
        wrong = len(self.refused_valid) + len(self.admitted_invalid)
        valid, invalid = self.sent["valid"], self.sent["invalid"]
        return f"{valid} valid and {invalid} invalid MXJobs, {wrong} wrong answers"


@contextmanager
def admission_traffic(
    kubectl: Kubectl, *, namespace: str, image: str, prefix: str
) -> Iterator[AdmissionTraffic]:
    """Stream jobs into ``namespace`` until the block ends; names start with ``prefix``."""
    traffic = AdmissionTraffic()
    stop = threading.Event()

    def stream() -> None:
        try:
            send_until_stopped()
        except Exception as error:  # kept for assert_no_wrong_answer, raised there
            traffic.broken.append(f"{type(error).__name__}: {error}")

    def send_until_stopped() -> None:
        index = 0
        while not stop.is_set():
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
        thread.join(timeout=2 * CREATE_TIMEOUT)
        if thread.is_alive():
            traffic.broken.append(f"the stream still ran {2 * CREATE_TIMEOUT:g} s after the stop")
