"""examples/scripts/train_dist.py: its hyperparameters, and what a worker prints.

A worker prints each epoch twice: the line people and the end-to-end tests read
(``epoch 3/5 loss 0.2940 accuracy 0.936``) and the ``name=value`` line Katib's StdOut metrics
collector reads with its default filter (``epoch=3 accuracy=0.936035 loss=0.294014``). A worker
runs here on MXNet's ``local`` kvstore in place of ``dist_sync`` (no ps-lite cluster).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

import pytest

from tests.examples.example_files import KATIB_DEFAULT_FILTER, SCRIPTS, SDK, load_script

# The end-to-end tests' patterns (tests/e2e/test_fidelity_examples.py, test_real_node_training.py).
HUMAN_EPOCH = re.compile(r"^epoch (\d+)/(\d+) loss ([0-9.]+) accuracy ([0-9.]+)$")
DIGEST = re.compile(r"^final parameters sha256 ([0-9a-f]{64})$")


@pytest.fixture(scope="module")
def train_dist() -> ModuleType:
    return load_script("train_dist")


def katib_observations(lines: Iterable[str], metrics: list[str]) -> list[tuple[str, float]]:
    """What Katib's collector takes from ``lines`` (parseLogsInTextFormat, default filter).

    A line counts only if it contains a metric's name; each ``name=value`` pair of it whose name
    equals one of ``metrics`` is an observation.
    """
    found = []
    for line in lines:
        if not any(metric in line for metric in metrics):
            continue
        for match in re.finditer(KATIB_DEFAULT_FILTER, line):
            name, value = match.group(1).strip(), match.group(2).strip()
            if name in metrics:
                found.append((name, float(value)))
    return found


def test_the_defaults_are_those_the_examples_and_tests_rely_on(train_dist: ModuleType) -> None:
    args = train_dist.parse_args([])
    assert (args.epochs, args.samples, args.batch_size, args.lr) == (5, 2048, 32, 0.1)
    assert (args.features, args.classes, args.hidden, args.seed) == (20, 4, 32, 42)


def test_the_tuned_hyperparameters_come_from_the_command_line(train_dist: ModuleType) -> None:
    # As Katib's trial template writes them: each a separate, unquoted argument.
    args = train_dist.parse_args(["--epochs", "3", "--lr", "0.0371", "--batch-size", "48"])
    assert (args.epochs, args.lr, args.batch_size) == (3, 0.0371, 48)


def test_a_bad_hyperparameter_exits_2(train_dist: ModuleType) -> None:
    with pytest.raises(SystemExit) as exited:
        train_dist.parse_args(["--batch-size", "16.5"])
    assert exited.value.code == 2


def test_katib_reads_every_metric_of_the_line(train_dist: ModuleType) -> None:
    line = train_dist.katib_metrics(3, loss=0.2940136, accuracy=0.9360352)
    assert line == "epoch=3 accuracy=0.936035 loss=0.294014"
    assert katib_observations([line], ["loss", "accuracy"]) == [
        ("accuracy", 0.936035),
        ("loss", 0.294014),
    ]
    assert katib_observations([line], ["accuracy"]) == [("accuracy", 0.936035)]
    assert not HUMAN_EPOCH.match(line)  # the end-to-end tests' epoch count is unchanged


def test_katib_reads_no_metric_from_the_other_lines() -> None:
    lines = [
        "role worker: scheduler job-scheduler-0:9091, 1 server(s), 1 worker(s)",
        "worker rank 0 of 1 (DMLC_WORKER_ID=0)",
        "epoch 1/3 loss 0.9672 accuracy 0.639",
        "final parameters sha256 " + "0" * 64,
        "worker done",
    ]
    assert katib_observations(lines, ["loss", "accuracy", "epoch"]) == []


# A worker on MXNet's local kvstore, in a process of its own: MXNet's engine and OpenMP threads
# stay out of the test process (and its later forks).
LOCAL_WORKER = """
import sys
import mxnet
create = mxnet.kv.create
mxnet.kv.create = lambda name: create("local")
import train_dist
sys.exit(train_dist.main(sys.argv[1:]))
"""


def run_worker(argv: list[str]) -> subprocess.CompletedProcess[str]:
    """``train_dist`` as worker 0 of 1, on MXNet's local kvstore instead of ``dist_sync``."""
    pytest.importorskip("mxnet")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join((str(SCRIPTS), str(SDK))),
        "OMP_NUM_THREADS": "1",
        "DMLC_ROLE": "worker",
        "DMLC_PS_ROOT_URI": "localhost",
        "DMLC_PS_ROOT_PORT": "9091",
        "DMLC_NUM_SERVER": "1",
        "DMLC_NUM_WORKER": "1",
        "DMLC_WORKER_ID": "0",
    }
    return subprocess.run(
        [sys.executable, "-c", LOCAL_WORKER, *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_worker_prints_each_epoch_for_people_and_for_katib() -> None:
    worker = run_worker(["--epochs", "3", "--samples", "512", "--lr", "0.05", "--batch-size", "16"])
    lines = worker.stdout.splitlines()
    assert worker.returncode == 0, worker.stdout + worker.stderr
    assert lines[0] == "role worker: scheduler localhost:9091, 1 server(s), 1 worker(s)"
    assert lines[1] == "worker rank 0 of 1 (DMLC_WORKER_ID=0)"
    epochs = lines[2:-3]
    assert len(epochs) == 6, lines
    assert re.fullmatch(r"final accuracy 0\.\d{4}", lines[-3]), lines
    for epoch, (human, katib) in enumerate(zip(epochs[::2], epochs[1::2], strict=True), start=1):
        shown = HUMAN_EPOCH.match(human)
        assert shown, human
        assert (int(shown.group(1)), int(shown.group(2))) == (epoch, 3)
        observed = dict(katib_observations([katib], ["loss", "accuracy", "epoch"]))
        assert observed["epoch"] == epoch, katib
        # The same value printed to 4 (3) decimals and to 6: re-rounding the 6-decimal one can
        # differ in the last digit (0.8125503 prints 0.8126 and 0.812550, which rounds to 0.8125),
        # so they agree within half a unit of each.
        assert abs(observed["loss"] - float(shown.group(3))) <= 0.5e-4 + 0.5e-6, (human, katib)
        assert abs(observed["accuracy"] - float(shown.group(4))) <= 0.5e-3 + 0.5e-6, (human, katib)
    losses = [value for _, value in katib_observations(lines, ["loss"])]
    assert len(losses) == 3 and losses[-1] < losses[0], lines
    assert DIGEST.match(lines[-2]), lines
    assert lines[-1] == "worker done"


def test_a_worker_resumes_after_the_newest_checkpoint(tmp_path: Path) -> None:
    args = ["--samples", "512", "--batch-size", "16", "--checkpoint-dir", str(tmp_path)]
    first = run_worker(["--epochs", "2", *args])
    assert first.returncode == 0, first.stdout + first.stderr
    assert json.loads((tmp_path / "latest.json").read_text()) == {
        "epoch": 2, "params": "epoch-2.params"
    }  # fmt: skip
    assert not list(tmp_path.glob("*.tmp"))
    again = run_worker(["--epochs", "4", *args])
    assert again.returncode == 0, again.stdout + again.stderr
    assert "resumed from checkpoint epoch 2" in again.stdout
    shown = [int(m.group(1)) for m in re.finditer(r"^epoch (\d+)/4 ", again.stdout, re.M)]
    assert shown == [3, 4], again.stdout


def test_a_worker_told_to_fail_ends_itself_once_by_sigkill(tmp_path: Path) -> None:
    args = ["--samples", "512", "--batch-size", "16", "--checkpoint-dir", str(tmp_path)]
    failing = ["--epochs", "3", "--fail-at-epoch", "2", "--fail-rank", "0", *args]
    killed = run_worker(failing)
    assert killed.returncode == -9, killed.stdout + killed.stderr
    assert "ending this worker now (sigkill)" in killed.stdout
    resumed = run_worker(failing)  # resumed past epoch 1: epoch 2 runs through this time
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "resumed from checkpoint epoch 1" in resumed.stdout
