"""Distributed MXNet training with the ``dist_sync`` kvstore, for every role of an MXTrain job.

One script serves the Scheduler, the Servers and the Workers: MXNet reads the ``DMLC_*`` env the
operator injects (role, scheduler address and port, how many servers and workers) when it is
imported, and a scheduler or server process runs ps-lite's loop inside ``import mxnet`` and exits
0 when every worker has finished. Workers train a small MLP on synthetic data (no downloads),
each on its own shard, synchronously through the parameter server, print the loss and accuracy
of each epoch (twice: ``epoch 3/5 loss ... accuracy ...`` to read, ``epoch=3 accuracy=...
loss=...`` for Katib's metrics collector) and finally a SHA-256 of their parameters: with
``dist_sync`` every worker pulls the same weights after every step, so the digests of all
workers must be equal.

With ``--checkpoint-dir`` (a volume every worker mounts: a PersistentVolumeClaim), worker 0
saves the parameters after every epoch, and a worker that starts where a checkpoint exists
resumes after its epoch (``resumed from checkpoint epoch 3``). The operator restarts an MXTrain
job as a whole when a replica ends retryably (ps-lite cannot take a lone replacement back), so
every worker of the new attempt reads the same checkpoint and they go on together. Every
worker ends with ``final accuracy ...`` over its shard.

Worker 0 reports the job's progress to the operator (``status.trainerStatus``: the percentage
done, its estimate of the time left, the epoch's loss and accuracy) through the reporter of
``sdk/`` (``mxjob_progress``), which the example image installs; without the operator's
environment the reporter does nothing. A resumed worker reports from its checkpoint's epoch on.

``--fail-at-epoch`` makes worker ``--fail-rank`` end itself during that epoch, once (not in an
attempt that resumed past it), the way ``--fail-with`` says: ``sigkill`` (exit 137, as the OOM
killer or a lost node would end it) or ``oom`` (it allocates until its memory limit's OOM kill):
``make demo DEMO_ARGS=--kill-worker`` shows a job resumed and Succeeded after it.

Run it with ``python -m train_dist`` (the example image puts ``examples/scripts`` on PYTHONPATH).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import os
import signal
import socket
import sys
import time
from typing import Any

import numpy as np
from mxjob_progress import ProgressReporter
from mxjob_progress.gluon import GluonProgress


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="train_dist", description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=5, help="passes over the worker's shard")
    parser.add_argument("--samples", type=int, default=2048, help="synthetic samples in total")
    parser.add_argument("--features", type=int, default=20, help="input features per sample")
    parser.add_argument("--classes", type=int, default=4, help="number of classes")
    parser.add_argument("--hidden", type=int, default=32, help="hidden units of the MLP")
    parser.add_argument("--batch-size", type=int, default=32, help="per-worker batch size")
    parser.add_argument("--lr", type=float, default=0.1, help="SGD learning rate")
    parser.add_argument("--seed", type=int, default=42, help="seed of the synthetic data")
    parser.add_argument("--checkpoint-dir", default="", help="save and resume here (a volume)")
    parser.add_argument("--epoch-pause", type=float, default=0.0, help="seconds after an epoch")
    parser.add_argument("--fail-at-epoch", type=int, default=0, help="end a worker in it, once")
    parser.add_argument("--fail-rank", type=int, default=1, help="the worker that ends itself")
    parser.add_argument("--fail-with", choices=("sigkill", "oom"), default="sigkill")
    return parser.parse_args(argv)


CHECKPOINT_INDEX = "latest.json"


def latest_checkpoint(directory: str) -> tuple[int, str] | None:
    """The epoch and parameter file of the newest complete checkpoint, if any."""
    if not directory:
        return None
    try:
        with open(os.path.join(directory, CHECKPOINT_INDEX)) as index:
            found = json.load(index)
    except (OSError, ValueError):
        return None
    return int(found["epoch"]), os.path.join(directory, str(found["params"]))


def save_checkpoint(directory: str, net: Any, epoch: int) -> None:
    """The parameters of ``epoch``, then the index naming them: a reader never sees a half."""
    name = f"epoch-{epoch}.params"
    net.save_parameters(os.path.join(directory, name + ".tmp"))
    os.replace(os.path.join(directory, name + ".tmp"), os.path.join(directory, name))
    index = os.path.join(directory, CHECKPOINT_INDEX)
    with open(index + ".tmp", "w") as out:
        json.dump({"epoch": epoch, "params": name}, out)
        out.flush()
        os.fsync(out.fileno())
    os.replace(index + ".tmp", index)


def end_itself(how: str) -> None:
    """Die as a killed process does: SIGKILL, or an allocation past the memory limit."""
    print(f"ending this worker now ({how})", flush=True)
    if how == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    hoard = []
    while True:  # each chunk written, not only reserved, until the kernel's OOM kill
        hoard.append(bytearray(64 << 20))
        hoard[-1][::4096] = b"x" * len(hoard[-1][::4096])


def wait_for_name(host: str, timeout: float = 120) -> str:
    """Wait until the scheduler's Service name resolves (cluster DNS may lag behind the pod)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return socket.gethostbyname(host)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def synthetic_data(args: argparse.Namespace) -> tuple[Any, Any]:
    """A classification problem a small MLP can learn: labels from a fixed random linear teacher.

    Every worker builds the same data set from the same seed and keeps its own shard.
    """
    rng = np.random.default_rng(args.seed)
    features = rng.normal(size=(args.samples, args.features)).astype("float32")
    teacher = rng.normal(size=(args.features, args.classes)).astype("float32")
    labels = np.argmax(features @ teacher, axis=1).astype("float32")
    return features, labels


def parameter_digest(params: Any) -> str:
    """SHA-256 over every parameter's bytes, in name order: equal digests, equal parameters."""
    digest = hashlib.sha256()
    for name in sorted(params.keys()):
        digest.update(name.encode())
        digest.update(params[name].data().asnumpy().tobytes())
    return digest.hexdigest()


def shard_accuracy(mx: Any, net: Any, features: Any, labels: Any) -> float:
    """The trained network's accuracy over the worker's whole shard."""
    predicted = net(mx.nd.array(features)).argmax(axis=1).asnumpy()
    return float((predicted == labels).mean())


def katib_metrics(epoch: int, *, loss: float, accuracy: float) -> str:
    r"""The epoch's metrics as ``name=value`` pairs, for Katib's StdOut metrics collector.

    Katib's default filter, ``([\w|-]+)\s*=\s*([+-]?\d*(\.\d+)?([Ee][+-]?\d+)?)``, takes every
    pair of a line that names one of an Experiment's metrics, so an Experiment can tune on
    ``loss`` (minimize) or ``accuracy`` (maximize) without a ``metricsFormat`` of its own
    (examples/katib/mxjob-cpu-train.yaml). The line starts with no RFC 3339 time, so Katib
    records its values with the zero time.
    """
    return f"epoch={epoch} accuracy={accuracy:.6f} loss={loss:.6f}"


def import_mxnet() -> Any:
    """Import MXNet only once the role is known and the scheduler's name resolves.

    The import is not inert: for a scheduler or a server it joins the ps-lite cluster and runs
    that role's loop until every worker is done. Bad arguments therefore fail (exit 2) before any
    process joins the cluster.
    """
    return importlib.import_module("mxnet")


def train(args: argparse.Namespace) -> None:
    mx = import_mxnet()
    autograd, gluon = mx.autograd, mx.gluon
    kv = mx.kv.create("dist_sync")
    rank, workers = kv.rank, kv.num_workers
    print(f"worker rank {rank} of {workers} (DMLC_WORKER_ID={os.environ.get('DMLC_WORKER_ID')})")
    features, labels = synthetic_data(args)
    shard = slice(rank, None, workers)
    dataset = gluon.data.ArrayDataset(features[shard], labels[shard])
    # Every worker must take the same number of steps, or dist_sync waits forever.
    loader = gluon.data.DataLoader(
        dataset, batch_size=args.batch_size, shuffle=True, last_batch="discard"
    )
    mx.random.seed(args.seed)
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(args.hidden, activation="relu"), gluon.nn.Dense(args.classes))
    net.initialize(mx.init.Xavier())
    net.hybridize()
    first = 1
    checkpoint = latest_checkpoint(args.checkpoint_dir)
    if checkpoint is not None:
        done, params = checkpoint
        net(mx.nd.array(features[:1]))  # the shapes, so the saved values can be set
        net.load_parameters(params)
        first = done + 1
        print(f"resumed from checkpoint epoch {done}", flush=True)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": args.lr}, kvstore=kv)
    # One worker speaks for the job: every worker of dist_sync is at the same step.
    progress = GluonProgress(
        ProgressReporter.from_env(enabled=rank == 0),
        epochs=args.epochs,
        batches_per_epoch=len(loader),
    )
    for epoch in range(first, args.epochs + 1):
        total, count, correct = 0.0, 0, 0
        for batch, (data, label) in enumerate(loader):
            if epoch == args.fail_at_epoch and rank == args.fail_rank and first == 1 and batch == 1:
                end_itself(args.fail_with)
            with autograd.record():
                output = net(data)
                loss = loss_fn(output, label)
            loss.backward()
            trainer.step(data.shape[0])
            total += float(loss.sum().asscalar())
            count += data.shape[0]
            correct += int((output.argmax(axis=1) == label).sum().asscalar())
            progress.batch(epoch - 1, batch, loss=loss.mean())
        progress.epoch_end(epoch - 1, loss=total / count, accuracy=correct / count)
        print(
            f"epoch {epoch}/{args.epochs} loss {total / count:.4f} accuracy {correct / count:.3f}",
            flush=True,
        )
        print(katib_metrics(epoch, loss=total / count, accuracy=correct / count), flush=True)
        if args.checkpoint_dir and rank == 0:
            save_checkpoint(args.checkpoint_dir, net, epoch)
        time.sleep(args.epoch_pause)
    mx.nd.waitall()
    print(f"final accuracy {shard_accuracy(mx, net, features[shard], labels[shard]):.4f}")
    print(f"final parameters sha256 {parameter_digest(net.collect_params())}", flush=True)
    progress.reporter.close()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    role = os.environ.get("DMLC_ROLE", "")
    root = os.environ.get("DMLC_PS_ROOT_URI", "")
    print(
        f"role {role or '(none)'}: scheduler {root}:{os.environ.get('DMLC_PS_ROOT_PORT')}, "
        f"{os.environ.get('DMLC_NUM_SERVER')} server(s), "
        f"{os.environ.get('DMLC_NUM_WORKER')} worker(s)",
        flush=True,
    )
    if role not in ("scheduler", "server", "worker"):
        print(
            "DMLC_ROLE must be scheduler, server or worker (set by the operator)", file=sys.stderr
        )
        return 1
    wait_for_name(root)
    if role in ("scheduler", "server"):
        import_mxnet()  # returns (or exits 0) once every worker has finished
        return 0
    # A worker runs as its container's PID 1, which the kernel spares SIGTERM's default action:
    # without a handler a drain or a preemption would wait out the grace period while the worker
    # trains on. It stops at once instead, as killed by SIGTERM (143); its checkpoint is kept.
    signal.signal(signal.SIGTERM, lambda *_: os._exit(143))
    train(args)
    print("worker done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
