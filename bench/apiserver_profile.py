"""Where kube-apiserver's CPU goes while a measurement runs: a pprof CPU profile, summarised.

The creation comparison (``bench.creation_compare``) finds the API server spending more CPU per
job for this operator than for training-operator with the same requests; its wall time alone
cannot say on what. kube-apiserver serves Go's profiler at ``/debug/pprof`` (``--profiling``, on by
default) to a user allowed that non-resource URL, as the plane's admin is. ``profiled`` records a
CPU profile over the first seconds of what it wraps; ``areas`` reads every sampled stack of one
with ``go tool pprof -traces`` and gives the CPU-seconds spent under each named part of the
request path, so two candidates can be set side by side (an area counts what its functions call
too, so areas may overlap).
"""

from __future__ import annotations

import contextlib
import http.client
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

from localkube.plane.controlplane import ControlPlane

AREAS: Final[Mapping[str, str]] = {
    "client certificate checks": r"request/x509\.\(\*Authenticator\)\.AuthenticateRequest$",
    "admission webhooks": r"admission/plugin/webhook/.*\.Dispatch$",
    "conversion webhook": r"apiserver/conversion\.\(\*webhookConverter\)\.Convert$",
    "custom resource create": r"\(\*crdHandler\)\.serveResource\.CreateResource",
    "custom resource status write": r"\(\*crdHandler\)\.serveStatus\.UpdateResource",
    "schema validation": r"validation/validate\.\(\*SchemaValidator\)\.Validate$",
    "pruning": r"schema/pruning\.PruneWithOptions$",
    "managed fields": r"managedfields/internal\.\(\*FieldManager\)\.Update",
    "storage (etcd3)": r"storage/etcd3\.\(\*store\)\.(Create|GuaranteedUpdate)$",
    "watch: decoding from etcd": r"storage/etcd3\.\(\*watchChan\)\.serialProcessEvents$",
    "watch: encoding events": r"storage/cacher\.\(\*cachingObject\)\.CacheEncode$",
    "watch: delivery": r"storage/cacher\.\(\*cacheWatcher\)\.processInterval$",
    "garbage collection": r"^runtime\.gcBgMarkWorker$",
    "TLS": r"^crypto/tls\.\(\*Conn\)\.(Read|Write)$",
}
"""Named parts of the API server's path, as regular expressions over pprof's function names."""

_UNITS: Final[Mapping[str, float]] = {
    "": 1.0, "ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "mins": 60.0, "hrs": 3600.0,
}  # fmt: skip
"""pprof's scaled time units (a bare ``0`` has none)."""
_AMOUNT: Final = r"[\d.]+(?:ns|us|ms|s|mins|hrs)?"
_SEPARATOR: Final = "-----------+"
_TRACE_HEAD: Final = re.compile(rf"^\s*(?P<value>{_AMOUNT})   (?P<name>\S.*?)(?: \(inline\))?$")
_TRACE_FRAME: Final = re.compile(r"^ {13}(?P<name>\S.*?)(?: \(inline\))?$")


@dataclass(frozen=True)
class Sample:
    """CPU-seconds spent in one call stack (innermost function first)."""

    seconds: float
    stack: tuple[str, ...]


LEAD_IN: Final = 0.2
"""Seconds between the profile's request being sent and the block starting: the API server's
handler chain (authentication, authorization) runs before the profile's window opens."""


@contextlib.contextmanager
def profiled(plane: ControlPlane, *, seconds: int, path: Path) -> Iterator[None]:
    """Record kube-apiserver's CPU profile over the first ``seconds`` of the block into ``path``.

    The profile is fetched in a thread (the endpoint answers when its time is up), so the block
    runs as it would without it; leaving waits for the profile to arrive. The block starts once
    the request has been sent (and :data:`LEAD_IN` after): a short block (a smoke run's few
    jobs) started any sooner, or after a fixed wait that a loaded machine outlasts, is over
    before the profile's window opens, leaving a profile without a sample.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    state = plane.state()
    if state is None:
        raise RuntimeError(f"no API server of the plane in {plane.dir} to profile")
    server = urlsplit(state.server)
    sent = threading.Event()
    failure: list[str] = []

    def fetch() -> None:
        connection = http.client.HTTPSConnection(
            server.hostname or "127.0.0.1", server.port, context=plane.ssl_context(),
            timeout=seconds + 60,
        )  # fmt: skip
        try:
            connection.request("GET", f"/debug/pprof/profile?seconds={seconds}")
            sent.set()
            response = connection.getresponse()
            body = response.read()
        except OSError as error:
            failure.append(str(error))
            return
        finally:
            sent.set()
            connection.close()
        if response.status != 200:
            failure.append(f"HTTP {response.status}: {body.decode(errors='replace').strip()}")
            return
        path.write_bytes(body)

    thread = threading.Thread(target=fetch, name="apiserver-profile", daemon=True)
    thread.start()
    sent.wait(60)
    time.sleep(LEAD_IN)
    try:
        yield
    finally:
        thread.join(seconds + 90)
    if failure:
        raise RuntimeError(f"kube-apiserver's profile could not be fetched: {failure[0]}")


def go_tool() -> str:
    """The ``go`` on the PATH, the one the builds use (``hack/lib/build.sh``): it reads profiles."""
    found = shutil.which("go")
    if found is None:
        raise FileNotFoundError("go is needed to read a profile (go tool pprof); none on the PATH")
    return found


def _seconds(amount: str) -> float:
    number = re.match(r"[\d.]+", amount)
    if number is None:
        raise ValueError(f"not an amount of time in pprof's units: {amount!r}")
    return float(number[0]) * _UNITS[amount[number.end() :]]


def read_traces(text: str) -> list[Sample]:
    """Every sampled stack with its CPU-seconds, from ``go tool pprof -traces``."""
    samples: list[Sample] = []
    seconds: float | None = None
    stack: list[str] = []
    for line in [*text.splitlines(), _SEPARATOR]:
        if line.startswith(_SEPARATOR):
            if seconds is not None:
                samples.append(Sample(seconds, tuple(stack)))
            seconds, stack = None, []
        elif head := _TRACE_HEAD.match(line):
            seconds, stack = _seconds(head["value"]), [head["name"]]
        elif (frame := _TRACE_FRAME.match(line)) and seconds is not None:
            stack.append(frame["name"])
    return samples


def area_seconds(
    samples: Sequence[Sample], *, areas: Mapping[str, str] = AREAS
) -> dict[str, float]:
    """CPU-seconds under each area: every sample with a function of the area on its stack,
    counted once however many of its functions match (nested calls, sibling dispatchers)."""
    found: dict[str, float] = {}
    for area, pattern in areas.items():
        matcher = re.compile(pattern)
        found[area] = round(
            sum(s.seconds for s in samples if any(matcher.search(f) for f in s.stack)), 3
        )
    return found


def areas(path: Path) -> dict[str, float]:
    """The profile at ``path`` by area, with ``total`` (all sampled CPU-seconds)."""
    done = subprocess.run([go_tool(), "tool", "pprof", "-traces", str(path)],
                          capture_output=True, text=True, check=True, timeout=300)  # fmt: skip
    samples = read_traces(done.stdout)
    if not samples:
        raise ValueError(f"{path}: go tool pprof -traces printed no sample")
    return {"total": round(sum(s.seconds for s in samples), 3), **area_seconds(samples)}
