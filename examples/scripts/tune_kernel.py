"""The Tuner of an MXTune job: tune a small matrix multiplication with TVM's MetaSchedule.

How TVM users tune since TVM 0.20 (AutoTVM and the auto-scheduler are gone): ``tune_tir`` over
a TIR PrimFunc, candidates built by a local builder and timed by MetaSchedule's RPC runner on
every TunerServer, each session handed out by the tracker. The runner finds the tracker with no
code here: ``RPCConfig()`` reads ``TVM_TRACKER_HOST``, ``TVM_TRACKER_PORT`` and
``TVM_TRACKER_KEY``, which the operator injects beside ``MX_CONFIG``
(docs/how-to/tune-with-tvm.md). In TVM 0.27 MetaSchedule lives in ``tvm.s_tir.meta_schedule``.

Choices, and why:

- ``cost_model="random"``: MetaSchedule's default cost model is XGBoost, a package (and ~200 MB
  of wheels) the image would need only to rank candidates better; with a few dozen trials the
  ranking hardly matters, every candidate is still measured on a server;
- ``max_workers`` of the runner = the number of TunerServers: that many sessions are asked of
  the tracker at once, and the tracker hands a server to one session at a time, so each
  measurement batch spreads over every server;
- the tuning database is MetaSchedule's JSON database (``database_workload.json``,
  ``database_tuning_record.json``) in ``--work-dir``, a volume in the example: a tuner started
  again on the same volume goes on from the records already there;
- a measurement that fails (a server killed mid-session) is an error run for MetaSchedule, not
  a crash; opening a session is retried for ``--retry-seconds`` (a tracker being replaced), so
  a replaced replica costs at most the measurements in flight;
- the search's progress (trials measured of ``--trials``, the best latency so far) goes to the
  operator's ``status.trainerStatus`` through the reporter of ``sdk/`` (``mxjob_progress``, in
  the example image), fed by its MetaSchedule measure callback; it reports 100 % when the
  search ends early (every candidate of the space measured);
- which server measured which trial: TVM's tracker client connects to the address the tracker
  hands out and keeps no record of it, so :func:`create_session` notes it while connecting and
  :func:`upload_module` writes it beside the candidate, where :class:`TrialLog` reads it.

The functions the runner calls live in this importable module (not ``__main__``) so that
MetaSchedule's worker processes import them by name.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from mxjob_progress import ProgressReporter
from mxjob_progress.tvm import TuningProgress, measure_callback

NOTE = "measured-on"
"""The file, beside a built candidate, naming the server that measured it."""


def tvm_module(name: str) -> Any:
    """Import a TVM module when needed (the tracker and the servers never import TVM here)."""
    return importlib.import_module(name)


@dataclass(frozen=True)
class TuneSettings:
    """What the Tuner tunes, where, and how long it waits for parts being replaced."""

    size: int
    """The matmul is ``size`` x ``size`` by ``size`` x ``size``, float32."""
    trials: int
    """MetaSchedule's ``max_trials_global``: candidates measured on the servers."""
    trials_per_iter: int
    """Candidates built and measured per search round."""
    target: str
    """A TVM target in TVM 0.27's forms: a kind or tag (``nvidia/geforce-rtx-2080-ti``) or a
    JSON object (``{"kind": "llvm", "num-cores": 2}``, what the default describes)."""
    work_dir: Path
    """Where the JSON database and MetaSchedule's logs go (a volume in the example)."""
    servers: int
    """TunerServers in the job (MX_CONFIG ``cluster.tunerserver``): the runner's workers."""
    retry_seconds: float
    """How long opening a session is retried while the tracker or the servers are away."""
    session_timeout: int
    """Seconds a session may last, and may take to reach the tracker."""


# -- in MetaSchedule's runner workers -------------------------------------------------------------
def connect_noting_server(rpc_config: Any) -> Any:
    """``rpc_config.connect_server()``, MetaSchedule's own way in, with the address the tracker
    handed out kept on the session: TVM's ``connect`` is watched only while it runs."""
    client = tvm_module("tvm.rpc.client")
    handed: list[str] = []
    connect = client.connect

    def noting(url: str, port: int, *args: Any, **kwargs: Any) -> Any:
        handed.append(f"{url}:{port}")
        return connect(url, port, *args, **kwargs)

    client.connect = noting
    try:
        session = rpc_config.connect_server()
    finally:
        client.connect = connect
    session.mxjob_server = handed[-1]
    return session


def create_session(rpc_config: Any, *, retry_seconds: float) -> Any:
    """A session on the server the tracker hands out, which the session remembers.

    Failures (no tracker yet, a tracker being replaced) are retried for ``retry_seconds``; a
    tracker request itself waits for a free server.
    """
    deadline = time.monotonic() + retry_seconds
    while True:
        try:
            return connect_noting_server(rpc_config)
        except (OSError, RuntimeError, ValueError):
            if time.monotonic() > deadline:
                raise
            time.sleep(1)


def upload_module(session: Any, local_path: str, remote_path: str) -> Any:
    """MetaSchedule's upload, after noting the session's server beside the candidate."""
    Path(local_path).with_name(NOTE).write_text(getattr(session, "mxjob_server", "?"))
    rpc_runner = tvm_module("tvm.s_tir.meta_schedule.runner.rpc_runner")
    return rpc_runner.default_upload_module(session, local_path, remote_path)


# -- in MetaSchedule's builder workers ------------------------------------------------------------
def build(mod: Any, target: Any, params: Any) -> Any:
    """MetaSchedule's ``default_build`` without importing ``tvm.s_tir.tensor_intrin`` on a CPU.

    That import registers every tensor-core intrinsic (17 s of CPU in TVM 0.27) and the
    LocalBuilder pays it in each fresh worker of every build round; a float32 matmul on a CPU
    is never tensorized, so a CPU build skips it (a GPU build keeps it).
    """
    if target.kind.name != "llvm":
        tvm_module("tvm.s_tir.tensor_intrin")
    transform = tvm_module("tvm.s_tir.transform")
    mod = transform.RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(mod)
    return tvm_module("tvm.driver").build(mod, target=target)


# -- in the Tuner ---------------------------------------------------------------------------------
@dataclass
class Trial:
    number: int
    server: str
    seconds: float | None
    """Mean seconds per run; None for a candidate that failed to build or to run."""
    error: str = ""


@dataclass
class Trials:
    """Every trial of this run, in the order MetaSchedule measured them."""

    seen: list[Trial] = field(default_factory=list)

    def add(self, builder_result: Any, runner_result: Any) -> Trial:
        artifact = builder_result.artifact_path
        note = Path(str(artifact)).with_name(NOTE) if artifact else None
        server = note.read_text() if note is not None and note.exists() else "none"
        error = builder_result.error_msg or runner_result.error_msg
        secs = None if error else [float(s) for s in runner_result.run_secs]
        seconds = sum(secs) / len(secs) if secs else None
        first_line = str(error).strip().splitlines()[-1] if error else ""
        trial = Trial(len(self.seen) + 1, server, seconds, first_line)
        self.seen.append(trial)
        return trial

    def measured(self) -> list[Trial]:
        return [t for t in self.seen if t.seconds is not None]


def trial_log(trials: Trials) -> Any:
    """A MetaSchedule measure callback printing each trial with its server (runs before the
    default callbacks, whose RemoveBuildArtifact deletes the note)."""
    ms = tvm_module("tvm.s_tir.meta_schedule")
    derived_object = tvm_module("tvm.ir.utils").derived_object
    base: Any = ms.measure_callback.PyMeasureCallback

    @derived_object
    class TrialLog(base):  # type: ignore[misc]
        def apply(
            self,
            task_scheduler: Any,
            task_id: int,
            measure_candidates: list[Any],
            builder_results: list[Any],
            runner_results: list[Any],
        ) -> None:
            for built, ran in zip(builder_results, runner_results, strict=True):
                trial = trials.add(built, ran)
                if trial.seconds is None:
                    outcome = f"error: {trial.error}"
                else:
                    outcome = f"{trial.seconds * 1e6:.1f} us per run"
                print(f"trial {trial.number} on server {trial.server}: {outcome}", flush=True)

    return TrialLog()


def matmul(size: int) -> Any:
    """C = A @ B as a TIR PrimFunc: the workload MetaSchedule tunes."""
    te = tvm_module("tvm.te")
    a = te.placeholder((size, size), name="A", dtype="float32")
    b = te.placeholder((size, size), name="B", dtype="float32")
    k = te.reduce_axis((0, size), name="k")
    c = te.compute((size, size), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    return te.create_prim_func([a, b, c]).with_attr("global_symbol", "main")


def untuned(func: Any, target: Any) -> Any:
    """The kernel before tuning: the PrimFunc as written on a CPU; on a GPU, which needs its
    loops bound to threads to build at all, TVM's generic default GPU schedule (dlight's
    Fallback), the starting point a user has without tuning."""
    tvm = tvm_module("tvm")
    module = tvm.IRModule({"main": func})
    if target.kind.name == "cuda":
        dlight = tvm_module("tvm.s_tir.dlight")
        with target:
            module = dlight.ApplyDefaultSchedule(dlight.gpu.Fallback())(module)
    return module


def timed_and_checked(session: Any, module: Any, target: Any, size: int, work_dir: Path) -> float:
    """Build ``module``, run it on the server of ``session``, check it against NumPy; the mean
    seconds per run."""
    tvm = tvm_module("tvm")
    library = work_dir / f"kernel-{time.monotonic_ns()}.so"
    tvm.compile(module, target=target).export_library(str(library))
    session.upload(str(library))
    kernel = session.load_module(library.name)
    library.unlink()
    device = session.device("cpu" if target.kind.name == "llvm" else target.kind.name, 0)
    rng = np.random.default_rng(0)
    a_np = rng.random((size, size), dtype="float32")
    b_np = rng.random((size, size), dtype="float32")
    a, b = tvm.runtime.tensor(a_np, device), tvm.runtime.tensor(b_np, device)
    c = tvm.runtime.tensor(np.zeros((size, size), dtype="float32"), device)
    kernel(a, b, c)
    np.testing.assert_allclose(c.numpy(), a_np @ b_np, rtol=1e-4)
    timer = kernel.time_evaluator(kernel.entry_name, device, number=10, repeat=3)
    return float(timer(a, b, c).mean)


def wait_for_servers(rpc_config: Any, settings: TuneSettings) -> list[str]:
    """Wait until the tracker has every TunerServer free under the key; their addresses."""
    deadline = time.monotonic() + settings.retry_seconds
    while True:
        try:
            summary: dict[str, Any] = rpc_config.connect_tracker().summary()
        except (OSError, RuntimeError, ValueError):
            summary = {}
        key = rpc_config.tracker_key
        free = int(summary.get("queue_info", {}).get(key, {}).get("free", 0))
        if free >= settings.servers:
            return sorted(
                ":".join(map(str, item["addr"]))
                for item in summary.get("server_info", [])
                if item.get("key") == f"server:{key}"
            )
        if time.monotonic() > deadline:
            raise SystemExit(f"only {free} of {settings.servers} servers under key {key!r}")
        time.sleep(0.5)


def make_runner(settings: TuneSettings) -> Any:
    """MetaSchedule's RPC runner: the tracker from the env, one worker per server."""
    ms = tvm_module("tvm.s_tir.meta_schedule")
    create: Callable[[Any], Any] = functools.partial(
        create_session, retry_seconds=settings.retry_seconds
    )
    return ms.runner.RPCRunner(
        rpc_config=ms.runner.RPCConfig(session_timeout_sec=settings.session_timeout),
        evaluator_config=ms.runner.EvaluatorConfig(number=3, repeat=1, min_repeat_ms=20),
        f_create_session=create,
        f_upload_module=upload_module,
        max_workers=settings.servers,
    )


def search(settings: TuneSettings, runner: Any, func: Any, target: Any) -> tuple[Any, Trials]:
    """MetaSchedule's search over ``func``: the database and the trials it measured."""
    ms = tvm_module("tvm.s_tir.meta_schedule")
    trials = Trials()
    progress = TuningProgress(ProgressReporter.from_env(), total_trials=settings.trials)
    started = time.monotonic()
    database = ms.tune_tir(
        mod=func,
        target=target,
        work_dir=str(settings.work_dir),
        max_trials_global=settings.trials,
        num_trials_per_iter=settings.trials_per_iter,
        builder=ms.builder.LocalBuilder(f_build=build, timeout_sec=120),
        runner=runner,
        cost_model="random",
        measure_callbacks=[
            trial_log(trials),
            measure_callback(progress),
            *ms.MeasureCallback.create("default"),
        ],
        seed=0,
    )
    progress.finish()
    progress.reporter.close()
    measured = trials.measured()
    servers = sorted({t.server for t in measured})
    per_server = {server: sum(t.server == server for t in measured) for server in servers}
    print(
        f"{len(trials.seen)} trials in {time.monotonic() - started:.1f} s: {len(measured)} "
        f"measured ({per_server}), {len(trials.seen) - len(measured)} errors",
        flush=True,
    )
    return database, trials


def tune(settings: TuneSettings) -> int:
    """Tune, then time the best kernel and the untuned one on a server; 0 when the best is
    correct (a wrong one raises)."""
    tvm = tvm_module("tvm")
    runner = make_runner(settings)
    rpc_config = runner.rpc_config  # RPCConfig() completed from TVM_TRACKER_*
    addresses = wait_for_servers(rpc_config, settings)
    print(
        f"tracker {rpc_config.tracker_host}:{rpc_config.tracker_port}: {len(addresses)} servers "
        f"under key {rpc_config.tracker_key!r}: {addresses}",
        flush=True,
    )
    settings.work_dir.mkdir(parents=True, exist_ok=True)
    target = tvm.target.Target(parse_target(settings.target))
    print(f"tuning for target {target}", flush=True)
    func = matmul(settings.size)
    database, trials = search(settings, runner, func, target)
    best = database.query_schedule(tvm.IRModule({"main": func}), target, workload_name="main")
    if best is None:
        print("no candidate ran: no tuned kernel", flush=True)
        return 1
    records = len(database.get_all_tuning_records())
    print(f"database in {settings.work_dir}: {records} tuning records", flush=True)
    session = create_session(rpc_config, retry_seconds=settings.retry_seconds)
    with tempfile.TemporaryDirectory(prefix="tune-") as scratch:
        best_s = timed_and_checked(session, best.mod, target, settings.size, Path(scratch))
        base_s = timed_and_checked(
            session, untuned(func, target), target, settings.size, Path(scratch)
        )
    fastest = min(trials.measured(), key=lambda t: t.seconds or 0.0)
    print(
        f"best kernel checked against NumPy on server {session.mxjob_server}: "
        f"{best_s * 1e6:.1f} us per run (trial {fastest.number} on server {fastest.server}); "
        f"untuned {base_s * 1e6:.1f} us per run; speed-up {base_s / best_s:.1f}x",
        flush=True,
    )
    return 0


def parse_target(text: str) -> str | dict[str, Any]:
    """A ``--target`` value as ``tvm.target.Target`` takes it: TVM 0.27 refused the old
    ``"llvm -num-cores 2"`` strings for a JSON object."""
    if text.lstrip().startswith("{"):
        parsed: dict[str, Any] = json.loads(text)
        return parsed
    return text


def default_target() -> str:
    """``$TUNE_TARGET``, else this host's CPU: MetaSchedule needs an llvm target's
    ``num-cores`` to parallelise, and the servers of the example run where the tuner does."""
    return os.environ.get("TUNE_TARGET") or json.dumps(
        {"kind": "llvm", "num-cores": os.cpu_count() or 1}
    )


def default_work_dir() -> Path:
    """``$TUNE_WORK_DIR`` when it names a directory (the example mounts a volume there), else a
    fresh temporary one (the database then ends with the pod)."""
    wanted = os.environ.get("TUNE_WORK_DIR")
    if wanted and Path(wanted).is_dir():
        return Path(wanted)
    return Path(tempfile.mkdtemp(prefix="tune-db-"))
