"""Which container instance a log request reads, and how a stored log grows and ends."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from localkube.kubelet.crilog import STDOUT, LogOptions, LogRequestError, parse
from localkube.kubelet.logserver import LogStore, choose_log
from tests.helpers import mxjobs, pods


def _pod(*, waiting: str | None = None) -> dict[str, Any]:
    """A pod with an init container, its ``mxnet`` container ``waiting`` for that reason."""
    status: dict[str, Any] = {}
    if waiting:
        status = {
            "containerStatuses": [{"name": "mxnet", "state": {"waiting": {"reason": waiting}}}]
        }
    return pods.pod(
        "p",
        namespace="ns",
        uid="u1",
        init_containers=[mxjobs.container("init", image=None)],
        containers=[mxjobs.container(image=None)],
        status=status,
    )


def test_the_latest_instance_is_read_and_previous_reads_the_one_before(tmp_path: Path) -> None:
    store = LogStore(tmp_path)
    first = store.instance(namespace="ns", pod="p", uid="u1", container="mxnet", restart=0)
    second = store.instance(namespace="ns", pod="p", uid="u1", container="mxnet", restart=1)
    assert choose_log(_pod(), "mxnet", LogOptions(), store) is second
    assert choose_log(_pod(), "mxnet", LogOptions(previous=True), store) is first
    assert first.path == tmp_path / "ns_p_u1" / "mxnet" / "0.log"


def test_a_recreated_pod_of_the_same_name_does_not_see_the_old_pods_log(tmp_path: Path) -> None:
    store = LogStore(tmp_path)
    store.instance(namespace="ns", pod="p", uid="old", container="mxnet", restart=0)
    with pytest.raises(LogRequestError) as refused:
        choose_log(_pod(waiting="ContainerCreating"), "mxnet", LogOptions(), store)
    assert (refused.value.status, refused.value.message) == (
        400,
        'container "mxnet" in pod "p" is waiting to start: ContainerCreating',
    )


@pytest.mark.parametrize(
    ("container", "options", "status", "message"),
    [
        ("sidecar", LogOptions(), 404, 'container "sidecar" not found in pod "p"'),
        (
            "init",
            LogOptions(),
            400,
            'container "init" in pod "p" is waiting to start - no logs yet',
        ),
        (
            "mxnet",
            LogOptions(previous=True),
            400,
            'previous terminated container "mxnet" in pod "p" not found',
        ),
    ],
)
def test_requests_without_a_log_get_the_kubelets_refusal(
    tmp_path: Path, container: str, options: LogOptions, status: int, message: str
) -> None:
    store = LogStore(tmp_path)
    store.instance(namespace="ns", pod="p", uid="u1", container="mxnet", restart=0)
    with pytest.raises(LogRequestError) as refused:
        choose_log(_pod(), container, options, store)
    assert (refused.value.status, refused.value.message) == (status, message)


def test_a_waiting_reader_wakes_on_output_and_on_the_end(tmp_path: Path) -> None:
    store = LogStore(tmp_path)
    log = store.instance(namespace="ns", pod="p", uid="u1", container="mxnet", restart=0)
    threading.Timer(0.2, lambda: log.append(b"hello\nwor", stream=STDOUT)).start()
    started = time.monotonic()
    log.wait(0, timeout=5)
    assert 0.1 < time.monotonic() - started < 2
    size, ended = log.snapshot()
    lines = log.read_lines(0, size)
    assert [e.message for e in map(parse, lines) if e] == [b"hello\n", b"wor"]
    assert not ended
    threading.Timer(0.1, lambda: store.end_pod("u1")).start()
    log.wait(size, timeout=5)
    assert log.snapshot() == (size, True)
    log.append(b"late\n", stream=STDOUT)  # a child still writing after the end is kept
    assert log.read_lines(size, log.snapshot()[0])[0].endswith(b" stdout F late\n")
