"""The progress endpoint end to end: real tokens, a real TokenReview, real status writes.

A ``mxjob-controller`` process serves the endpoint on a loopback port; its jobs' pods are real
API objects (the test kubelet runs them), and each report carries a token the API server issued
for one of those pods with the TokenRequest API, exactly what the kubelet projects into a pod.
So who may report is decided by the API server's own answer (audience, bound pod, pod deleted)
and the informers' view of the job's pods, and what a report does is read back from the
MXJob's status, from a watch opened before the reports: every value ``status.trainerStatus``
took, the write count the coalescing allows, and the reconciler's own status writes never
taking a report back.
"""

from __future__ import annotations

import itertools
import logging
import math
import threading
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest

from controller.progress.settings import AUDIENCE, ProgressSettings
from localkube.base.api import Api
from localkube.base.ports import free_port
from localkube.kubelet.core import TestKubelet
from shared.apitime import parse_time
from shared.progress import status_path
from tests.e2e import progress_reports as reports
from tests.e2e.controller_fixtures import (
    ControllerProcess,
    StartController,
    create_job,
    mxjob,
    pods,
    status,
    wait_pods_running,
)
from tests.helpers.figures import Figures
from tests.helpers.waiting import wait_for

log = logging.getLogger(__name__)

INTERVAL = ProgressSettings().write_interval
"""The controller's coalescing interval: it has no flag, so the default is what runs."""
REPORTERS = 8
RATE = 100.0
"""Reports a second from all the job's pods together."""
FLOOD_SECONDS = 10.0
ACCEPTED = 202
FINAL = (100, [{"name": "final", "value": "yes"}])
"""The last report of the flood, as the status shows it."""


@dataclass(frozen=True)
class Serving:
    """The controller under test and its progress port; its counts are read from its
    ``/metrics``, which count what the tests cannot see from outside (answers by code, the
    writes and TokenReviews it sent)."""

    controller: ControllerProcess
    port: int
    namespace: str

    def endpoint(self, api: Api, job: str) -> reports.Endpoint:
        """The endpoint as ``job``'s pods reach it (their CA, the Service's name)."""
        return reports.endpoint(
            api, self.namespace, job, port=self.port, operator_namespace=self.namespace
        )

    def count(self, name: str, **labels: str) -> int:
        return int(self.controller.metric(name, **labels))

    def answered(self, code: int) -> int:
        """Requests answered ``code`` so far."""
        return self.count("mxjob_controller_progress_reports_total", code=str(code))


@pytest.fixture
def serving(start_controller: StartController, namespace: str) -> Serving:
    """A controller with the endpoint on a loopback port of its own; its self-signed
    certificate names the progress Service of the test's namespace."""
    port = free_port()
    controller = start_controller(
        "--progress-reports",
        f"--progress-bind-address=127.0.0.1:{port}",
        f"--certificate-namespace={namespace}",
    )
    return Serving(controller, port, namespace)


def _running(api: Api, namespace: str, job: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Create ``job`` and wait until all its pods run (the test kubelet starts them)."""
    name = job["metadata"]["name"]
    create_job(api, namespace, job)
    replicas = job["spec"]["mxReplicaSpecs"]
    wanted = {
        f"{name}-{rtype.lower()}-{index}"
        for rtype, spec in replicas.items()
        for index in range(spec["replicas"])
    }
    return wait_pods_running(api, namespace, name, wanted)


def _written(api: Api, namespace: str, name: str, body: tuple[Any, Any]) -> dict[str, Any]:
    """Wait until the job's status shows the report ``body`` (see ``reports.reported``)."""
    return wait_for(
        f"MXJob {name} status.trainerStatus {body}",
        lambda: status(api, namespace, name),
        lambda found: reports.reported(found) == body,
        timeout=INTERVAL + 10,
    )


# -- who may report -----------------------------------------------------------------------------
def _deleted_pod_token(api: Api, namespace: str, pod: Mapping[str, Any]) -> str:
    """A token of ``pod`` (audience right), the pod then deleted until its object is gone or
    replaced: the token's bound object no longer exists."""
    token = reports.pod_token(api, pod, audiences=[AUDIENCE])
    name, uid = pod["metadata"]["name"], pod["metadata"]["uid"]
    api.request("DELETE", f"/api/v1/namespaces/{namespace}/pods/{name}")
    job = pod["metadata"]["labels"]["training.kubeflow.org/job-name"]
    wait_for(
        f"pod {name} (uid {uid}) gone",
        lambda: pods(api, namespace, job=job),
        lambda found: name not in found or found[name]["metadata"]["uid"] != uid,
        timeout=30,
    )
    return token


def _refused(
    api: Api, serving: Serving, mine: str, main: dict[str, Any], other: dict[str, Any]
) -> tuple[dict[str, reports.Answer], dict[str, Any]]:
    """Cases b to g, each answered before anything is kept for writing; and main's status
    right after the report of another job's pod."""
    namespace = serving.namespace
    endpoint = serving.endpoint(api, "main")
    path = status_path(namespace=namespace, name="main")
    good = reports.report(90, loss="0.01")
    default_audience = reports.pod_token(api, main["main-worker-1"], audiences=None)
    foreign = reports.pod_token(api, other["other-worker-0"], audiences=[AUDIENCE])
    answers = {
        "b no token": endpoint.post(path, good, token=None),
        "c apiserver audience": endpoint.post(path, good, token=default_audience),
        "d another job's pod": endpoint.post(path, good, token=foreign),
    }
    after_foreign = status(api, namespace, "main")
    gone = _deleted_pod_token(api, namespace, other["other-scheduler-0"])
    other_path = status_path(namespace=namespace, name="other")
    answers["e deleted pod"] = endpoint.post(other_path, good, token=gone)
    unknown = b'{"trainerStatus": {"progressPercent": 5}}'
    answers["f unknown field"] = endpoint.post(path, unknown, token=mine)
    answers["f out of range"] = endpoint.post(path, reports.report(101), token=mine)
    large = reports.report(5, blob="x" * (64 * 1024))
    answers["g over 64 KiB"] = endpoint.post(path, large, token=mine)
    for case, answer in answers.items():
        log.info("%s: %d %s", case, answer.status, answer.message or answer.body)
    return answers, after_foreign


def test_a_pod_of_the_job_reports_and_every_other_sender_is_refused(
    api: Api, namespace: str, serving: Serving, kubelet: TestKubelet
) -> None:
    main = _running(api, namespace, mxjob("main"))
    other = _running(api, namespace, mxjob("other", workers=1))
    watch = reports.JobWatch(api, namespace, "main")
    mine = reports.pod_token(api, main["main-worker-0"], audiences=[AUDIENCE])
    path = status_path(namespace=namespace, name="main")
    endpoint = serving.endpoint(api, "main")
    before = time.time()
    first = endpoint.post(path, reports.report(37, loss="0.25", epoch="3"), token=mine)
    log.info("a pod of the job: %d %s", first.status, first.message)
    assert first.status == ACCEPTED, first
    metrics = [{"name": "loss", "value": "0.25"}, {"name": "epoch", "value": "3"}]
    shown = _written(api, namespace, "main", (37, metrics))
    stamped = parse_time(shown["trainerStatus"]["lastUpdatedTime"])
    assert stamped is not None
    assert before - 1 <= stamped.timestamp() <= time.time() + 1, shown

    answers, after_foreign = _refused(api, serving, mine, main, other)
    assert answers["b no token"].status == 401, answers
    assert "no bearer token" in answers["b no token"].message
    assert answers["c apiserver audience"].status == 401, answers
    assert AUDIENCE in answers["c apiserver audience"].message
    assert answers["d another job's pod"].status == 403, answers
    assert "not a pod of mxjob main" in answers["d another job's pod"].message
    assert after_foreign["trainerStatus"] == shown["trainerStatus"], after_foreign
    assert answers["e deleted pod"].status == 401, answers
    assert "not authenticated" in answers["e deleted pod"].message
    assert answers["f unknown field"].status == 400, answers
    assert answers["f unknown field"].message.startswith("trainerStatus.progressPercent:")
    assert answers["f out of range"].status == 400, answers
    assert answers["f out of range"].message.startswith("trainerStatus.progressPercentage:")
    assert answers["g over 64 KiB"].status == 413, answers
    assert str(64 * 1024) in answers["g over 64 KiB"].message
    # Nothing refused was kept for writing (the 202s count what was), and the watch shows the
    # only values ever written: the first report, and one more sent to end the case.
    assert serving.answered(ACCEPTED) == 1
    last = endpoint.post(path, reports.report(38), token=mine)
    assert last.status == ACCEPTED, last
    _written(api, namespace, "main", (38, None))
    history = reports.trainer_history(watch.stop())
    written = [reports.reported({"trainerStatus": value}) for value in history]
    assert written == [(37, metrics), (38, None)], history
    assert serving.answered(ACCEPTED) == 2
    refusals = {code: serving.answered(code) for code in (400, 401, 403, 413)}
    assert refusals == {400: 2, 401: 3, 403: 1, 413: 1}, refusals
    assert "trainerStatus" not in status(api, namespace, "other")


# -- how often the API server is written ---------------------------------------------------------
def _flood(
    endpoint: reports.Endpoint, path: str, tokens: Mapping[str, str]
) -> tuple[list[int], float]:
    """Every pod reports at ``RATE / REPORTERS`` a second for ``FLOOD_SECONDS``, all together;
    the status codes answered and the moment the first report was sent."""
    each = int(RATE * FLOOD_SECONDS) // len(tokens)
    period = len(tokens) / RATE
    start = time.monotonic() + 0.2
    wall_start = time.time() + 0.2

    def reporter(item: tuple[str, str]) -> list[int]:
        pod, token = item
        codes = []
        for sent in range(each):
            delay = start + sent * period - time.monotonic()
            if delay > 0:
                time.sleep(delay)  # pacing the sender, not waiting for a result
            body = reports.report(sent * 100 // each, pod=pod, report=str(sent))
            codes.append(endpoint.post(path, body, token=token).status)
        return codes

    with ThreadPoolExecutor(max_workers=len(tokens)) as pool:
        answered = [code for codes in pool.map(reporter, tokens.items()) for code in codes]
    return answered, wall_start


API_WRITES = "mxjob_controller_api_writes_total"
COUNTED: Mapping[str, tuple[str, dict[str, str]]] = {
    "patches": (API_WRITES, {"verb": "patch", "resource": "mxjobs/status"}),
    "reviews": (API_WRITES, {"verb": "create", "resource": "tokenreviews"}),
    "writes": ("mxjob_controller_progress_writes_total", {}),
    "coalesced": ("mxjob_controller_progress_reports_coalesced_total", {}),
}
"""The controller's counts the flood is judged by: the API writes of the status it sent (all
of them the endpoint's: the reconciler replaces the status, it never patches it), the
TokenReviews, and the endpoint's own counts of writes and of reports replaced unwritten."""


def test_eight_pods_reporting_100_a_second_cost_one_status_write_per_interval(
    api: Api, namespace: str, serving: Serving, kubelet: TestKubelet, figures: Figures
) -> None:
    running = _running(api, namespace, mxjob("rate", workers=6))
    assert len(running) == REPORTERS
    tokens = {n: reports.pod_token(api, p, audiences=[AUDIENCE]) for n, p in running.items()}
    endpoint = serving.endpoint(api, "rate")
    path = status_path(namespace=namespace, name="rate")
    before = {key: serving.count(name, **labels) for key, (name, labels) in COUNTED.items()}
    watch = reports.JobWatch(api, namespace, "rate")
    answered, started = _flood(endpoint, path, tokens)
    flood_seconds = time.time() - started
    last = reports.report(100, final="yes")
    assert endpoint.post(path, last, token=tokens["rate-worker-0"]).status == ACCEPTED
    _written(api, namespace, "rate", FINAL)
    window = time.time() - started
    history = reports.trainer_history(watch.stop())
    after = {key: serving.count(name, **labels) for key, (name, labels) in COUNTED.items()}
    spent = {key: after[key] - before[key] for key in COUNTED}
    sent = len(answered) + 1
    bound = math.ceil(window / INTERVAL) + 1
    figures.record(
        table="progress", case=f"{REPORTERS} pods, {RATE:g} reports/s for {FLOOD_SECONDS:g} s",
        reports_sent=sent, reports_per_s=round(len(answered) / flood_seconds, 1),
        status_writes=spent["patches"], writes_per_report=round(spent["patches"] / sent, 4),
        token_reviews=spent["reviews"], last_written_after_s=round(window, 1),
        write_bound=bound,
    )  # fmt: skip
    log.info("rate: %d reports (%.1f s of flood), %.1f s to the last written: %s, bound %d",
             sent, flood_seconds, window, spent, bound)  # fmt: skip
    assert answered == [ACCEPTED] * len(answered), sorted(set(answered))
    assert len(answered) / flood_seconds >= RATE / 2, "the flood did not reach half its rate"
    assert 1 <= spent["patches"] <= bound, (spent, window)
    assert spent["writes"] == spent["patches"] == len(history), (spent, history)
    assert spent["reviews"] == REPORTERS, spent  # one per token: the rest from the cache
    assert spent["coalesced"] == sent - spent["writes"], spent  # each report written or replaced
    assert reports.reported({"trainerStatus": history[-1]}) == FINAL


# -- the reconciler's writes beside the reports --------------------------------------------------
def _in_place(found: Mapping[str, Any]) -> int:
    """In-place restarts the reconciler has counted in ``found`` (a status)."""
    record = found.get("inPlaceRestarts") or {}
    return sum(int(slot.get("restarts", 0)) for slot in record.values())


def _reporting(
    endpoint: reports.Endpoint, path: str, token: str, count: int
) -> tuple[threading.Thread, list[int]]:
    """One pod reporting 1 … ``count`` percent, ten a second, each after the last was answered:
    so the reports reach the controller in order, and the percentage only ever grows."""
    answered: list[int] = []

    def run() -> None:
        start = time.monotonic()
        for percent in range(1, count + 1):
            delay = start + percent * 0.1 - time.monotonic()
            if delay > 0:
                time.sleep(delay)  # pacing the sender
            answered.append(endpoint.post(path, reports.report(percent), token=token).status)

    thread = threading.Thread(target=run, name="reporter", daemon=True)
    thread.start()
    return thread, answered


def _restart_while(
    api: Api, kubelet: TestKubelet, namespace: str, reporter: threading.Thread
) -> int:
    """Restart the job's other pods in place, one after another, each once the reconciler has
    written the count of the last to the status, for as long as ``reporter`` reports: a stream
    of the reconciler's status writes for the report writes to land among. How many."""
    slots = ("race-scheduler-0", "race-server-0", "race-worker-1")
    number = 0
    while reporter.is_alive():
        number += 1
        kubelet.restart_in_place(namespace, slots[number % len(slots)], exit_code=1)

        def counted(found: dict[str, Any], number: int = number) -> bool:
            return _in_place(found) >= number

        wait_for(
            f"{number} in-place restarts in the status",
            lambda: status(api, namespace, "race"),
            counted,
            timeout=30,
            interval=0.02,
        )
    return number


def test_the_reconcilers_status_writes_never_take_a_report_back(
    api: Api, namespace: str, serving: Serving, kubelet: TestKubelet, figures: Figures
) -> None:
    job = mxjob("race", restart_policy="OnFailure", run_policy={"backoffLimit": 100_000})
    running = _running(api, namespace, job)
    token = reports.pod_token(api, running["race-worker-0"], audiences=[AUDIENCE])
    endpoint = serving.endpoint(api, "race")
    updates = (API_WRITES, {"verb": "update", "resource": "mxjobs/status"})
    conflicts = ("controller_runtime_reconcile_total", {"result": "error"})
    before = [serving.count(name, **labels) for name, labels in (updates, conflicts)]
    watch = reports.JobWatch(api, namespace, "race")
    path = status_path(namespace=namespace, name="race")
    reporter, answered = _reporting(endpoint, path, token, count=80)
    restarts = _restart_while(api, kubelet, namespace, reporter)
    assert answered == [ACCEPTED] * 80, answered
    _written(api, namespace, "race", (80, None))
    statuses = watch.stop()
    first = next(i for i, found in enumerate(statuses) if "trainerStatus" in found)
    percents = [reports.reported(found)[0] for found in statuses[first:]]
    counts = [_in_place(found) for found in statuses]
    after = [serving.count(name, **labels) for name, labels in (updates, conflicts)]
    reconciled = _reconciler_writes(statuses)
    figures.record(
        table="progress", case="reports beside the reconciler's status writes",
        in_place_restarts=restarts, reconciler_writes=reconciled,
        report_writes=len(reports.trainer_history(statuses)),
        status_updates_sent=after[0] - before[0], reconcile_errors=after[1] - before[1],
    )  # fmt: skip
    log.info("race: %d restarts, %d reconciler writes with a report present, %d updates "
             "sent, %d reconcile errors, percents %s", restarts, reconciled, after[0] - before[0],
             after[1] - before[1], sorted(set(percents)))  # fmt: skip
    assert None not in percents, percents
    assert percents == sorted(percents), percents
    assert counts == sorted(counts), counts  # and the reports never took a restart back
    assert reconciled >= 10, (reconciled, restarts)
    assert len(reports.trainer_history(statuses)) >= 2, statuses


def _reconciler_writes(statuses: list[dict[str, Any]]) -> int:
    """Versions that changed something other than ``trainerStatus`` while a report was there."""

    def rest(found: Mapping[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in found.items() if k not in ("trainerStatus", "lastReconcileTime")}

    return sum(
        1
        for earlier, later in itertools.pairwise(statuses)
        if "trainerStatus" in earlier and rest(earlier) != rest(later)
    )
