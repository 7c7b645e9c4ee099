"""The demo's resumable job: the claim given as a directory, and a worker told to end once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from localkube.scenarios.checkpoints import (
    claims_of,
    example_claim,
    on_host_directory,
    with_killed_worker,
)
from localkube.scenarios.jobwatch import EXAMPLES, load_job

RESUME = EXAMPLES / "v1" / "train" / "mx_job_dist_cpu_resume.yaml"


def worker(job: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = job["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]
    return found


def test_the_resumable_example_mounts_the_claim_examples_volumes_defines() -> None:
    job = load_job(RESUME)
    assert claims_of(job) == {"dist-train-cpu-checkpoints"}
    assert example_claim("dist-train-cpu-checkpoints")["spec"]["accessModes"] == ["ReadWriteOnce"]
    with pytest.raises(ValueError, match="does not define"):
        example_claim("missing")


def test_on_the_host_the_mount_path_argument_becomes_the_directory(tmp_path: Path) -> None:
    job = load_job(RESUME)
    moved = on_host_directory(job, tmp_path)
    spec = worker(moved)
    args = spec["containers"][0]["args"]
    assert args[args.index("--checkpoint-dir") + 1] == str(tmp_path)
    assert spec["volumes"] == [] and spec["containers"][0]["volumeMounts"] == []
    assert claims_of(moved) == set() and claims_of(job)  # a copy: the job is unchanged


def test_a_killed_worker_is_asked_of_train_dist_only() -> None:
    job = with_killed_worker(load_job(RESUME))
    args = worker(job)["containers"][0]["args"]
    assert args[-4:] == ["--fail-at-epoch", "3", "--fail-with", "sigkill"]
    tune = load_job(EXAMPLES / "v1" / "tune" / "mx_job_tune_cpu.yaml")
    with pytest.raises(ValueError, match="train_dist"):
        with_killed_worker(tune)
