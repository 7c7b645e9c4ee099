"""The real-node demo's pure decisions: images the node has, requests that fit, pods' output."""

from __future__ import annotations

import copy
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from controller.integrations.gang import quantity
from localkube.kubelet.crilog import encode
from localkube.scenarios.jobwatch import DEFAULT_JOB, load_job
from localkube.scenarios.node_demo import (
    HEADROOM,
    ContainerLogFollower,
    fit_requests,
    free_capacity,
    missing_images,
    normalized_image,
    requested,
)
from tests.helpers import mxjobs

CPU = Fraction(1, 1000)  # one millicore
MI = Fraction(2**20)


@pytest.mark.parametrize(
    ("written", "named"),
    [
        ("mxjob/mxnet-examples:1.9.1-cpu", "docker.io/mxjob/mxnet-examples:1.9.1-cpu"),
        ("python", "docker.io/library/python:latest"),
        ("python:3.11", "docker.io/library/python:3.11"),
        ("docker.io/mxjob/x:1", "docker.io/mxjob/x:1"),
        ("localhost/mxjob-operator/pause:v1", "localhost/mxjob-operator/pause:v1"),
        ("registry:5000/team/img", "registry:5000/team/img:latest"),
        ("ghcr.io/o/i@sha256:ab", "ghcr.io/o/i@sha256:ab"),
    ],
)
def test_image_references_are_named_as_containerd_names_them(written: str, named: str) -> None:
    assert normalized_image(written) == named


def test_the_cpu_example_needs_only_the_examples_image() -> None:
    job = load_job(DEFAULT_JOB)
    assert missing_images(job, available=["docker.io/mxjob/mxnet-examples:1.9.1-cpu"]) == []
    assert missing_images(job, available=["docker.io/mxjob/mxnet-examples:1.9.0-cpu"]) == [
        "mxjob/mxnet-examples:1.9.1-cpu"
    ]


def test_the_cpu_example_asks_for_two_and_a_half_cpus_and_three_gibibytes() -> None:
    job = load_job(DEFAULT_JOB)
    assert requested(job, "cpu") == 2500 * CPU
    assert requested(job, "memory") == 3 * 1024 * MI
    assert requested(job, "nvidia.com/gpu") == 0


def test_a_job_that_fits_is_left_as_written() -> None:
    job = load_job(DEFAULT_JOB)
    fit = fit_requests(job, free={"cpu": Fraction(16), "memory": 64 * 1024 * MI})
    assert fit.job == job
    assert fit.describe() == "as written"


def test_a_job_too_big_is_scaled_into_the_headroom_keeping_its_proportions() -> None:
    job = load_job(DEFAULT_JOB)
    original = copy.deepcopy(job)
    fit = fit_requests(job, free={"cpu": Fraction(2), "memory": 64 * 1024 * MI})
    assert job == original  # the input is not changed
    assert requested(fit.job, "cpu") <= 2 * HEADROOM
    assert requested(fit.job, "memory") == requested(job, "memory")
    scaled = {name: quantity.parse(cpus(fit.job, name)).value for name in ("Worker", "Server")}
    assert scaled == {"Worker": 720 * CPU, "Server": 180 * CPU}  # 1.8 of the 2 CPUs, as 4:1
    assert fit.factors["cpu"] == Fraction(18, 25)
    assert fit.describe() == "cpu x0.72"


def replica(cpu: str, *, limit: str | None = None, replicas: int = 1) -> dict[str, Any]:
    """``replicas`` pods asking for ``cpu`` (at most ``limit``)."""
    resources: dict[str, Any] = {"requests": {"cpu": cpu}}
    if limit:
        resources["limits"] = {"cpu": limit}
    return mxjobs.replica(replicas, containers=[mxjobs.container(image="i", resources=resources)])


def cpus(job: dict[str, Any], name: str, kind: str = "requests") -> str:
    return str(
        job["spec"]["mxReplicaSpecs"][name]["template"]["spec"]["containers"][0]["resources"][kind][
            "cpu"
        ]
    )


def test_limits_shrink_with_requests_and_nothing_goes_below_ten_millicores() -> None:
    replicas = {"Worker": replica("4", limit="8", replicas=2), "Scheduler": replica("10m")}
    job = mxjobs.mxjob(mode=None, replicas=replicas)
    fit = fit_requests(job, free={"cpu": Fraction(1)})
    assert cpus(fit.job, "Worker") == "449m"  # 0.9 of 1 CPU, over the 8.01 asked
    assert cpus(fit.job, "Worker", "limits") == "898m"
    # The floor is the one thing that may go past the headroom: 2 x 449m + 10m.
    assert requested(fit.job, "cpu") == 908 * CPU
    assert cpus(fit.job, "Scheduler") == "10m"


def test_free_capacity_is_allocatable_less_what_running_pods_request() -> None:
    node = {"status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "60"}}}

    def pod(cpu: str, phase: str) -> dict[str, Any]:
        requests = {"cpu": cpu, "memory": "256Mi"}
        return {"spec": {"containers": [{"resources": {"requests": requests}}]},
                "status": {"phase": phase}}  # fmt: skip

    free = free_capacity(node, [pod("500m", "Running"), pod("250m", "Pending"),
                                pod("1", "Succeeded")])  # fmt: skip
    assert free == {"cpu": Fraction(5, 4), "memory": 3584 * MI}
    assert free_capacity(node, [pod("3", "Running")])["cpu"] == 0


def write_cri(path: Path, text: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("ab") as handle:
        handle.write(encode(text, stream="stdout", timestamp="2026-01-01T00:00:00.000000000Z"))


def test_the_follower_yields_each_new_line_once_by_replica(tmp_path: Path) -> None:
    worker = tmp_path / "train_job-worker-0_uid1" / "mxnet" / "0.log"
    other_job = tmp_path / "train_job-b-worker-0_uid2" / "mxnet" / "0.log"
    sidecar = tmp_path / "train_job-server-0_uid3" / "sidecar" / "0.log"
    write_cri(worker, b"epoch 1\nepo")
    write_cri(other_job, b"not ours\n")
    write_cri(sidecar, b"not mxnet\n")
    follower = ContainerLogFollower(tmp_path, "train", "job")
    assert list(follower.new_lines()) == [("worker-0", "epoch 1")]
    assert list(follower.new_lines()) == []
    write_cri(worker, b"ch 2\n")  # the rest of a line cut short
    write_cri(tmp_path / "train_job-scheduler-0_uid4" / "mxnet" / "0.log", b"up\n")
    assert list(follower.new_lines()) == [("scheduler-0", "up"), ("worker-0", "epoch 2")]
