"""The TVM tune example on the real node, in containers, with a TunerServer, the TunerTracker or
the Tuner SIGKILLed mid-tuning.

TVM's tracker takes a new server under its key, and servers register again with a new tracker
(docs/explanation/recovery.md, "What a retry restarts"), so an MXTune replica is replaced alone
(``restartScope: Replica``): the killed pod is made again and nothing else is touched. The
tuner runs MetaSchedule (examples/scripts/tune_kernel.py), which asks the tracker for a session
per measurement: a measurement whose server is killed under it is an error run, not a crash, and
a session asked while the tracker is away is asked again; a new tuner starts its trials over,
on servers the old one's sessions gave back. Each job must Succeed with every trial run, at most
the measurements in flight failed, trials measured on two servers or more, the best kernel
checked against NumPy on a server, one restart counted, and only the killed replica made twice.
"""

from __future__ import annotations

import json
import re
import time
from fractions import Fraction
from functools import partial
from typing import Any

import pytest

from localkube.base.api import read_pod_log
from localkube.scenarios.jobwatch import EXAMPLES, load_job
from localkube.scenarios.node_demo import node_fit
from tests.e2e.real_node_fixtures import InstalledCluster, namespace_for, remove_namespace
from tests.e2e.recovery_jobs import kill_container, status_of
from tests.e2e.side_by_side import run_cases, share_of
from tests.helpers.figures import Figures
from tests.helpers.pod_creations import PodCreations
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.timeout(900)

TUNE_JOB = EXAMPLES / "v1" / "tune" / "mx_job_tune_cpu.yaml"
TRIALS, PER_ITER = 8, 4
SESSION_TIMEOUT = 30
"""Seconds an RPC session may last, and may wait on the tracker: a runner worker whose tracker
dies under it waits this long before it asks the new one (docs/explanation/recovery.md). A session
measures one candidate in well under a second."""
TRIAL = re.compile(r"^trial (\d+) on server (\S+): (?:([0-9.]+) us per run|error: .*)$", re.M)
BEST = re.compile(r"^best kernel checked against NumPy on server \S+: ([0-9.]+) us per run.*"
                  r"speed-up ([0-9.]+)x$", re.M)  # fmt: skip
IN_FLIGHT = 2
KILLED = {"tunerserver-1": "TunerServer 1", "tunertracker-0": "the TunerTracker",
          "tuner-0": "the Tuner"}  # fmt: skip
"""Measurements at once: the runner has a worker per TunerServer."""


def tune_job(installed: InstalledCluster, name: str, *, share: Fraction) -> dict[str, Any]:
    """The example, named ``name``, with 8 trials in rounds of 4 (a kill after the first round
    lands mid-tuning) and sessions of :data:`SESSION_TIMEOUT`, fitted to ``share`` of the
    node."""
    job = load_job(TUNE_JOB)
    job["metadata"]["name"] = name
    tuner = job["spec"]["mxReplicaSpecs"]["Tuner"]["template"]["spec"]["containers"][0]
    tuner["args"] = [
        "--size", "128", "--trials", str(TRIALS), "--trials-per-iter", str(PER_ITER),
        "--session-timeout", str(SESSION_TIMEOUT),
    ]  # fmt: skip
    fitted: dict[str, Any] = node_fit(installed.cluster, job, share=share).job
    return fitted


def tuner_log(installed: InstalledCluster, namespace: str, name: str) -> str:
    return read_pod_log(installed.api, namespace, f"{name}-tuner-0")


def pod_states(installed: InstalledCluster, namespace: str) -> dict[str, Any]:
    """Each pod's phase and container states: what a wait that timed out names."""
    pods = installed.api.request("GET", f"/api/v1/namespaces/{namespace}/pods")["items"]
    return {
        p["metadata"]["name"]: (p["status"].get("phase"), [
            c.get("state") for c in p["status"].get("containerStatuses", [])],
            installed.plane.kubectl("logs", "-n", namespace, p["metadata"]["name"],
                                    "--tail=8", check=False).stdout)
        for p in pods
    }  # fmt: skip


def tune_through_a_kill(
    installed: InstalledCluster, figures: Figures, job: dict[str, Any], replica: str
) -> None:
    """Run ``job``, SIGKILL ``replica``'s container after the first trial, check the outcome,
    and record its figures."""
    name = job["metadata"]["name"]
    namespace = namespace_for(installed, f"recover-{name}")
    creations = PodCreations(installed.api, namespace)
    started = time.monotonic()
    try:
        installed.plane.kubectl("create", "-n", namespace, "-f", "-", input_text=json.dumps(job))
        try:  # the log once a second, read in this process: TVM needs both cores
            wait_for(
                "the first trial", lambda: tuner_log(installed, namespace, name),
                lambda log: TRIAL.search(log) is not None, timeout=240, interval=1,
            )  # fmt: skip
        except AssertionError as error:
            error.add_note(f"the job's pods: {pod_states(installed, namespace)}")
            raise
        killed_after = time.monotonic() - started
        assert kill_container(f"{name}-{replica}")
        final = wait_for(
            f"MXJob {name} to finish", lambda: status_of(installed, namespace, name),
            lambda status: status.get("state") in ("Succeeded", "Failed"), timeout=300,
        )  # fmt: skip
        seconds = time.monotonic() - started
    finally:
        creations.stop()
    log = tuner_log(installed, namespace, name)
    assert final["state"] == "Succeeded", (final, log[-3000:])
    assert final["restartCount"] == 1 and "attempt" not in final, final
    [entry] = final["restarts"]
    assert (entry["scope"], entry["pod"], entry["exitCode"]) == (
        "Replica", f"{name}-{replica}", 137
    ), entry  # fmt: skip
    made = sorted(pod for pod, _ in creations.seen)
    slots = ["tuner-0", "tunerserver-0", "tunerserver-1", "tunertracker-0", replica]
    assert made == sorted(f"{name}-{slot}" for slot in slots), made
    trials = TRIAL.findall(log)
    assert [int(number) for number, _, _ in trials] == list(range(1, TRIALS + 1)), log
    measured = [(server, us) for _, server, us in trials if us]
    errors = len(trials) - len(measured)
    assert errors <= IN_FLIGHT, log  # only what a killed server was measuring
    assert len({server for server, _ in measured}) >= 2, log
    best = BEST.search(log)
    assert best, log
    remove_namespace(installed, namespace)
    figures.record(
        table="resume", case=f"the tune example, {KILLED[replica]}'s container SIGKILLed after the "
        "first trial", killed_after_s=round(killed_after, 1),
        succeeded_after_s=round(seconds, 1), restarts=1, cause="137", pods_made=len(made),
        made_twice=replica, trials=len(trials), measured=len(measured),
        servers=len({server for server, _ in measured}), error_runs=errors,
        best_kernel_us=float(best.group(1)), speedup=float(best.group(2)),
    )  # fmt: skip


@pytest.mark.usefixtures("tvm_examples")
def test_each_killed_tune_replica_is_replaced_alone_and_each_tuning_succeeds(
    real_cluster: InstalledCluster, figures: Figures
) -> None:
    """A job per replica in :data:`KILLED`, side by side (tests/e2e/side_by_side.py)."""
    share = share_of(figures, cases=len(KILLED))
    jobs = {  # fitted before any of them is created
        replica: tune_job(real_cluster, f"tune-{replica.split('-', maxsplit=1)[0]}", share=share)
        for replica in KILLED
    }
    run_cases(figures, [
        (replica, partial(tune_through_a_kill, real_cluster, figures, job, replica))
        for replica, job in jobs.items()
    ])  # fmt: skip
