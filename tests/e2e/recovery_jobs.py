"""The resumable train example as the recovery tests run it on the real node: real MXNet 1.9.1
in the examples image, a checkpoint volume, a disruption, and what the job shows after.

Each test makes a PersistentVolume on a directory of the session's state (a ``hostPath``, the
real kubelet mounts it) bound to the claim the example names, runs
``examples/v1/train/mx_job_dist_cpu_resume.yaml`` fitted to the node, disrupts it once worker 0
has saved a checkpoint, and follows it to its end. :func:`resumed` reads what the workers of
the last attempt printed: the checkpoint epoch they resumed from, their final accuracy and the
digest of their parameters (equal on every worker of a ``dist_sync`` job).
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import yaml

from bench.recovery_figures import Value
from localkube.scenarios.jobwatch import EXAMPLES, load_job
from localkube.scenarios.node_demo import node_fit
from tests.e2e.failing_jobs import mxjob
from tests.e2e.real_node_fixtures import InstalledCluster
from tests.helpers.figures import Figures
from tests.helpers.pod_creations import PodCreations
from tests.helpers.waiting import wait_for

RESUME_JOB = EXAMPLES / "v1" / "train" / "mx_job_dist_cpu_resume.yaml"
CLAIM_FILE = EXAMPLES / "volumes" / "checkpoints-pvc.yaml"
CLAIM = "dist-train-cpu-checkpoints"
STORAGE_CLASS = "mxjob-tests-local"
EPOCHS = 6
MIN_ACCURACY = 0.9
"""The workers' final accuracy over their shards: 0.98 in six epochs measured, without a
restart and with one; a job that lost its training to a restart would end far lower."""


OOM_IN_EPOCH_3 = "worker 1 OOM-killed in epoch 3 (1 GiB limit)"
DRAINED = "`kubectl drain` of worker 1 after checkpoint 2"
"""The cases training-operator v1.8.1 runs too (tests/e2e/bench_training_operator_failures.py),
named alike so that docs/explanation/recovery.md puts both in one row."""


def status_of(installed: InstalledCluster, namespace: str, name: str) -> dict[str, Any]:
    return dict(mxjob(installed.api, namespace, name).get("status", {}))


@dataclass(frozen=True)
class Checkpoints:
    """The claim's volume: a directory of the session that the real kubelet mounts."""

    directory: Path
    volume: str

    def epoch(self) -> int:
        """The epoch of the newest checkpoint worker 0 saved (0: none yet)."""
        try:
            return int(json.loads((self.directory / "latest.json").read_text())["epoch"])
        except (OSError, ValueError, KeyError):
            return 0


@contextmanager
def checkpoint_claim(
    installed: InstalledCluster, namespace: str, *, claim_name: str = CLAIM
) -> Iterator[Checkpoints]:
    """The example's claim (or one named ``claim_name``) in ``namespace``, bound to a new
    volume; the claim and the volume go after."""
    volume = f"{namespace}-{claim_name}"
    directory = installed.node.settings.state_dir.parent / "volumes" / volume
    directory.mkdir(parents=True, exist_ok=True)
    os.chmod(directory, 0o777)  # the examples image runs as a user of its own
    installed.plane.kubectl("apply", "-f", "-", input_text=json.dumps({
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": volume},
        "spec": {"capacity": {"storage": "64Mi"}, "accessModes": ["ReadWriteOnce"],
                 "storageClassName": STORAGE_CLASS, "persistentVolumeReclaimPolicy": "Retain",
                 "hostPath": {"path": str(directory), "type": "Directory"},
                 "claimRef": {"namespace": namespace, "name": claim_name}}}))  # fmt: skip
    example = load_claim()
    claim = {**example, "metadata": {"name": claim_name},
             "spec": {**example["spec"], "storageClassName": STORAGE_CLASS,
                      "volumeName": volume}}  # fmt: skip
    installed.plane.kubectl("apply", "-n", namespace, "-f", "-", input_text=json.dumps(claim))
    wait_for(
        "the checkpoint claim bound",
        lambda: installed.api.request(
            "GET", f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/{claim_name}"),
        lambda found: found.get("status", {}).get("phase") == "Bound", timeout=60,
    )  # fmt: skip
    try:
        yield Checkpoints(directory, volume)
    finally:
        installed.plane.kubectl("delete", "pvc", "-n", namespace, claim_name,
                                "--ignore-not-found", "--wait=false")  # fmt: skip
        installed.plane.kubectl("delete", "pv", volume, "--ignore-not-found", "--wait=false")


def load_claim() -> dict[str, Any]:
    """The example's claim (examples/volumes/checkpoints-pvc.yaml)."""
    found: dict[str, Any] = yaml.safe_load(
        (EXAMPLES / "volumes" / "checkpoints-pvc.yaml").read_text()
    )
    return found


def resumable_job(
    installed: InstalledCluster,
    name: str,
    *,
    fail_at: int = 0,
    fail_with: str = "sigkill",
    epoch_pause: float = 2.0,
    claim_name: str = CLAIM,
    share: Fraction = Fraction(1),
) -> dict[str, Any]:
    """The example, named ``name``, fitted to ``share`` of the node; ``fail_at``: a worker ends
    itself in that epoch, once (train_dist's ``--fail-at-epoch``)."""
    job = load_job(RESUME_JOB)
    job["metadata"]["name"] = name
    worker = job["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    args = worker["args"]
    args[args.index("--epochs") + 1] = str(EPOCHS)
    args[args.index("--epoch-pause") + 1] = str(epoch_pause)
    if fail_at:
        args += ["--fail-at-epoch", str(fail_at), "--fail-with", fail_with]
    volumes = job["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["volumes"]
    volumes[0]["persistentVolumeClaim"]["claimName"] = claim_name
    fitted: dict[str, Any] = node_fit(installed.cluster, job, share=share).job
    return fitted


@dataclass
class Run:
    """A job followed from its creation to its end."""

    name: str
    namespace: str
    final: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    made: list[str] = field(default_factory=list)
    """The name of every pod made, once per creation."""
    logs: dict[str, str] = field(default_factory=dict)
    """Each worker pod's log (the last attempt's)."""


def run_disrupted(
    installed: InstalledCluster,
    namespace: str,
    job: dict[str, Any],
    checkpoints: Checkpoints,
    disrupt: Callable[[], None],
    *,
    after_epoch: int = 2,
    timeout: float = 300,
) -> Run:
    """Create ``job``; once worker 0 saved checkpoint ``after_epoch``, ``disrupt()``; follow the
    job to its end. With ``after_epoch`` 0 the job is left to disrupt itself."""
    name = job["metadata"]["name"]
    run = Run(name, namespace)
    creations = PodCreations(installed.api, namespace)
    started = time.monotonic()
    try:
        installed.plane.kubectl("create", "-n", namespace, "-f", "-", input_text=json.dumps(job))
        if after_epoch:
            wait_for(f"checkpoint {after_epoch}", checkpoints.epoch,
                     lambda epoch: epoch >= after_epoch, timeout=180)  # fmt: skip
            disrupt()
        run.final = wait_for(
            f"MXJob {name} to finish", lambda: status_of(installed, namespace, name),
            lambda status: status.get("state") in ("Succeeded", "Failed"), timeout=timeout,
        )  # fmt: skip
        run.seconds = time.monotonic() - started
    finally:
        creations.stop()
    run.made = sorted(pod for pod, _ in creations.seen)
    for index in range(2):
        pod = f"{name}-worker-{index}"
        done = installed.plane.kubectl("logs", "-n", namespace, pod, check=False)
        run.logs[pod] = str(done.stdout)
    return run


@dataclass(frozen=True)
class Resumed:
    """What the workers of the last attempt printed."""

    from_epoch: int
    accuracy: float
    digests: frozenset[str]


def cause(run: Run) -> dict[str, Any]:
    """The restart history's one entry: the end that restarted the job."""
    restarts = run.final.get("restarts", [])
    assert len(restarts) == 1, f"one restart expected, the job ended so: {run.final}"
    found: dict[str, Any] = restarts[0]
    return found


def resumed(run: Run) -> Resumed:
    """The resumed epoch (equal on every worker), the lowest final accuracy, the digests."""
    epochs, accuracies, digests = set(), [], set()
    for pod, log in run.logs.items():
        found = re.search(r"resumed from checkpoint epoch (\d+)", log)
        assert found, f"{pod} did not resume from a checkpoint:\n{log[-2000:]}"
        epochs.add(int(found.group(1)))
        accuracy = re.search(r"final accuracy ([0-9.]+)", log)
        digest = re.search(r"final parameters sha256 ([0-9a-f]+)", log)
        assert accuracy and digest, f"{pod} did not finish:\n{log[-2000:]}"
        accuracies.append(float(accuracy.group(1)))
        digests.add(digest.group(1))
    assert len(epochs) == 1, f"the workers resumed from different epochs: {epochs}"
    return Resumed(epochs.pop(), min(accuracies), frozenset(digests))


def assert_restarted_once_and_resumed(
    run: Run, *, replica: str, disruption: str | None = None, exit_codes: tuple[int, ...] = ()
) -> Resumed:
    """One whole-job restart caused by ``replica`` (``Worker-1``), the job Succeeded, every pod
    made twice (one per attempt), and the workers resumed and trained to the end."""
    final = run.final
    assert final.get("state") == "Succeeded", [c.get("message") for c in final["conditions"]]
    assert final.get("restartCount") == 1 and final.get("attempt") == 1, final
    entry = cause(run)
    assert f"{entry['replicaType']}-{entry['index']}" == replica, entry
    assert entry["scope"] == "Job" and entry["attempt"] == 1, entry
    if disruption is not None:
        assert entry.get("disruption") == disruption, entry
        assert final.get("disruptionRestarts") == 1 and not entry["countedAgainstBackoff"]
    if exit_codes:
        assert entry.get("exitCode") in exit_codes, entry
    slots = ["scheduler-0", "server-0", "worker-0", "worker-1"]
    assert run.made == sorted(f"{run.name}-{slot}" for slot in slots for _ in range(2)), run.made
    result = resumed(run)
    assert result.from_epoch >= 1 and result.accuracy >= MIN_ACCURACY, result
    assert len(result.digests) == 1, result
    return result


def container_processes(pod: str) -> list[int]:
    """The processes of the pod's ``mxnet`` container on this host: those whose env has
    ``HOSTNAME=<pod>`` (containerd sets it in every container of the pod) and an env the
    operator injects (``DMLC_ROLE`` or ``MX_CONFIG``: not the pod's sandbox)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            env = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"HOSTNAME={pod}".encode() in env and any(
            item.startswith((b"DMLC_ROLE=", b"MX_CONFIG=")) for item in env
        ):
            found.append(int(entry.name))
    return found


def kill_container(pod: str) -> list[int]:
    """SIGKILL every process of the pod's ``mxnet`` container, as the OOM killer ends a
    container's group: its exit code is 137. The pids killed."""
    pids = wait_for(f"the processes of {pod}", lambda: container_processes(pod), bool, timeout=30)
    for pid in pids:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return pids


def record_resumed(figures: Figures, case: str, run: Run, result: Resumed, **more: Value) -> None:
    """The figures of a whole-job restart that resumed: a row of docs/explanation/recovery.md's
    resume table (``make bench-recovery``)."""
    entry = cause(run)
    ended = entry.get("disruption") or f"{entry.get('exitCode')} {entry.get('reason', '')}"
    figures.keep(table="resume", case=case, values={
        **more, "succeeded_after_s": round(run.seconds, 1),
        "restarts": run.final.get("restartCount", 0), "cause": ended.strip(),
        "counted": bool(entry.get("countedAgainstBackoff")), "pods_made": len(run.made),
        "resumed_from_epoch": result.from_epoch, "final_accuracy": round(result.accuracy, 4),
    })  # fmt: skip
