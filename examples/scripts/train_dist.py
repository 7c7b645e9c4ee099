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

Run it with ``python -m train_dist`` (the example image puts ``examples/scripts`` on PYTHONPATH).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import os
import socket
import sys
import time
from typing import Any

import numpy as np


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
    return parser.parse_args(argv)


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
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": args.lr}, kvstore=kv)
    for epoch in range(1, args.epochs + 1):
        total, count, correct = 0.0, 0, 0
        for data, label in loader:
            with autograd.record():
                output = net(data)
                loss = loss_fn(output, label)
            loss.backward()
            trainer.step(data.shape[0])
            total += float(loss.sum().asscalar())
            count += data.shape[0]
            correct += int((output.argmax(axis=1) == label).sum().asscalar())
        print(
            f"epoch {epoch}/{args.epochs} loss {total / count:.4f} accuracy {correct / count:.3f}",
            flush=True,
        )
        print(katib_metrics(epoch, loss=total / count, accuracy=correct / count), flush=True)
    mx.nd.waitall()
    print(f"final parameters sha256 {parameter_digest(net.collect_params())}", flush=True)


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
    train(args)
    print("worker done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
