"""Events: written in the background, repeats aggregated into a count."""

from __future__ import annotations

from controller.runtime.client import ApiError, error_for, events_path
from controller.runtime.events import (
    QUEUE_FULL,
    WRITE_FAILED,
    EventRecorder,
    namespace_terminating,
    summarize,
)
from controller.runtime.metrics import Metrics
from tests.controller.fakes import FakeApi
from tests.controller.samples import job


def recorded(api: FakeApi) -> list[dict[str, object]]:
    return [o for path, o in api.objects.items() if "/events/" in path]


def test_an_event_names_the_mxjob_and_the_controller() -> None:
    api = FakeApi()
    recorder = EventRecorder(api, host="node-1")
    recorder.start()
    recorder.record(job(), "Warning", "ExitedWithCode", "Worker 0 exited with code 137")
    recorder.stop()
    [event] = recorded(api)
    assert event["involvedObject"] == {
        "apiVersion": "kubeflow.org/v1",
        "kind": "MXJob",
        "name": "mnist",
        "namespace": "ns",
        "uid": "job-uid",
    }
    assert (event["type"], event["reason"], event["count"]) == ("Warning", "ExitedWithCode", 1)
    assert event["source"] == {"component": "mxjob-controller", "host": "node-1"}


def test_a_repeated_event_bumps_the_count_of_the_first() -> None:
    api = FakeApi()
    recorder = EventRecorder(api)
    recorder.start()
    for _ in range(3):
        recorder.record(job(), "Normal", "SuccessfulCreatePod", "Created pod: mnist-worker-0")
    recorder.record(job(), "Normal", "SuccessfulCreatePod", "Created pod: mnist-worker-1")
    recorder.stop()
    counts = sorted((e["message"], e["count"]) for e in recorded(api))
    assert counts == [("Created pod: mnist-worker-0", 3), ("Created pod: mnist-worker-1", 1)]
    assert [r.method for r in api.requests] == ["POST", "PATCH", "PATCH", "POST"]


def test_a_full_queue_drops_events_instead_of_blocking() -> None:
    recorder = EventRecorder(FakeApi(), queue_size=1)
    recorder.record(job(), "Normal", "A", "one")
    recorder.record(job(), "Normal", "B", "two")
    assert recorder.dropped == 1


def test_every_dropped_event_is_reported_with_its_reason() -> None:
    api = FakeApi()
    reasons: list[str] = []
    recorder = EventRecorder(api, queue_size=1, on_drop=reasons.append)
    recorder.record(job(), "Normal", "A", "one")
    recorder.record(job(), "Normal", "B", "two")  # the thread is not started: the queue is full
    api.fail_next[("POST", events_path("ns"))] = error_for(
        500, "InternalError", {"kind": "Status", "code": 500}
    )
    recorder.start()
    recorder.stop()
    assert reasons == [QUEUE_FULL, WRITE_FAILED]
    assert recorded(api) == []


def test_dropped_events_are_counted_by_reason_in_the_metrics() -> None:
    metrics = Metrics()
    recorder = EventRecorder(FakeApi(), queue_size=1, on_drop=metrics.event_dropped)
    for reason in ("A", "B", "C"):
        recorder.record(job(), "Normal", reason, "news")
    text = metrics.exposition().decode()
    assert 'mxjob_controller_events_dropped_total{reason="queue_full"} 2.0' in text
    assert 'mxjob_controller_events_dropped_total{reason="write_failed"} 0.0' in text


def test_summaries_list_names_and_cut_long_lists() -> None:
    assert summarize("Created", "pod", ["a"]) == "Created pod: a"
    names = [f"p{i}" for i in range(12)]
    assert summarize("Deleted", "service", names, limit=2) == "Deleted services: p0, p1 and 10 more"


def test_warnings_only_skips_normal_events() -> None:
    api = FakeApi()
    recorder = EventRecorder(api, warnings_only=True)
    recorder.start()
    recorder.record(job(), "Normal", "SuccessfulCreatePod", "Created pod: mnist-worker-0")
    recorder.record(job(), "Warning", "ExitedWithCode", "Worker 0 exited with code 137")
    recorder.stop()
    assert [e["reason"] for e in recorded(api)] == ["ExitedWithCode"]


def test_a_refusal_by_a_terminating_namespace_is_told_apart_from_other_403s() -> None:
    terminating = {
        "kind": "Status",
        "reason": "Forbidden",
        "message": 'events "x" is forbidden: unable to create new content in namespace ns '
        "because it is being terminated",
        "details": {
            "kind": "events",
            "causes": [
                {"reason": "NamespaceTerminating", "field": "metadata.namespace", "message": "."}
            ],
        },
        "code": 403,
    }
    assert namespace_terminating(ApiError(403, "Forbidden", terminating))
    rbac = {"kind": "Status", "reason": "Forbidden", "details": {"kind": "events"}, "code": 403}
    assert not namespace_terminating(ApiError(403, "Forbidden", rbac))
    assert not namespace_terminating(ApiError(500, "InternalError", terminating))
