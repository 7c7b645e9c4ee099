"""What the admission path costs the API server, per job, for each way of installing it.

One control plane, one webhook process per worker count, and the candidates below measured one
after the other in A B C … C B A order (half the jobs each way), so a drift over the run (etcd
growing, a neighbour's load) falls on every candidate alike. A candidate is an install choice:
whether ``v1beta1`` is served, whether the webhook configurations carry ``matchConditions``,
whether the validating webhook is registered, and how many gunicorn workers serve the webhook.

Each segment is a job's admission life, from 8 threads:

1. ``create``: POST every job (the job of ``controller_scale``, as users write it);
2. ``label``: a metadata-only merge PATCH per job (what ``kubectl label`` and tools that tag
   jobs send: an UPDATE that cannot change either webhook's verdict);
3. ``delete``: a foreground DELETE per job, waited on until every job is gone (the garbage
   collector removes the ``foregroundDeletion`` finalizer with one more metadata-only UPDATE).

Per job and phase: the API server's and etcd's CPU seconds (``/proc``), the webhook's (every
process of its group), the webhook calls the API server made, by kind (its own
``apiserver_admission_webhook_request_total`` and the CRD conversion histogram's count, so the
count does not depend on which gunicorn worker answers ``/metrics``), and after ``create`` the
bytes etcd stores per job (read from etcd itself). Conversions always go to the one-worker
webhook (so that no candidate changes the CRD's conversion URL). Each segment checks that it
measured the candidate it claims: the API server's webhook calls must be exactly the ones the
candidate's configuration makes.
"""

from __future__ import annotations

import base64
import collections
import concurrent.futures
import contextlib
import functools
import json
import re
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from bench.admission_overhead import defaulted_scale_job, scale_job
from bench.common import (
    CLOCK_TICKS,
    apiserver_metrics,
    component_cpu,
    jobs_main,
    ratio,
)
from controller.runtime.client import ApiError, KubeClient, mxjobs_path
from localkube.base.api import ensure_namespace
from localkube.base.processes import stop_process
from localkube.plane.controlplane import ControlPlane
from localkube.plane.install_choices import InstallChoices
from localkube.plane.operator import LocalOperator

THREADS: Final = 8
"""Client threads: as many as ``controller_scale`` submits its jobs from."""


@dataclass(frozen=True)
class Candidate:
    """One way of installing the admission path."""

    name: str
    v1beta1_served: bool = True
    """``spec.versions[v1beta1].served`` of the CRD (the conversion webhook stays configured)."""
    webhooks: bool = True
    """Whether any admission webhook is registered (False: the floor, no admission at all)."""
    sent_defaulted: bool = False
    """Whether the client sends each job already defaulted (``shared.defaults``): without
    webhooks, the API server then stores what it stores with them, which splits their cost into
    the larger stored job's and the calls'."""
    match_conditions: bool = True
    """Whether the webhooks keep the ``matchConditions`` of manifests/webhook (UPDATEs that
    leave ``spec`` unchanged are not sent to them)."""
    validating: bool = True
    """Whether the validating webhook judges CREATE too (``components/validate-on-create``);
    it judges UPDATEs either way."""
    workers: int = 1
    """gunicorn worker processes of the webhook serving this candidate."""


CANDIDATES: Final = (
    Candidate("today", match_conditions=False),
    Candidate("match-conditions", match_conditions=True),
    Candidate("mutate-only", match_conditions=False, validating=False),
    Candidate("two-workers", match_conditions=False, workers=2),
    Candidate("no-webhooks", webhooks=False),
    Candidate("no-webhooks-defaulted", webhooks=False, sent_defaulted=True),
    Candidate("no-v1beta1", v1beta1_served=False, match_conditions=False),
    Candidate("lean", v1beta1_served=False, match_conditions=True),
    Candidate("default", v1beta1_served=False, match_conditions=True, validating=False),
)
"""``today`` is the install as it was before ``matchConditions``; ``match-conditions`` the
install after them, while ``v1beta1`` was served and CREATE went to both webhooks; ``lean`` the
same without ``v1beta1``, and ``default`` the install now: ``v1beta1`` not served and one call
per CREATE. ``mutate-only`` sends CREATE to the mutating webhook alone, with ``v1beta1``
served. The three that stop serving ``v1beta1`` come last
so that the order A B … B A changes the CRD's served versions twice only: after such a change
the API server keeps the previous storage, with its ``v1beta1`` watch cache converting every
write, until its in-flight requests end (up to a minute), and a segment waits for that."""

PHASES: Final = ("create", "label", "delete")


# -- what the API server says -----------------------------------------------------------------
_SAMPLE = re.compile(r"^(?P<name>[a-z_]+)\{(?P<labels>[^}]*)\} (?P<value>\S+)$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
WEBHOOK_KINDS: Final = {
    "mutate.mxjobs.kubeflow.org": "mutate",
    "validate.mxjobs.kubeflow.org": "validate",
}


def webhook_calls(plane: ControlPlane) -> collections.Counter[str]:
    """Calls the API server made to our webhooks so far: ``mutate``/``validate`` by operation
    (``mutate CREATE``, …) and ``convert`` (every conversion request, any direction)."""
    text = apiserver_metrics(plane)
    calls: collections.Counter[str] = collections.Counter()
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if match is None:
            continue
        labels = dict(_LABEL.findall(match["labels"]))
        value = int(float(match["value"]))
        if match["name"] == "apiserver_admission_webhook_request_total":
            kind = WEBHOOK_KINDS.get(labels.get("name", ""))
            if kind:
                calls[f"{kind} {labels.get('operation', '')}"] += value
        elif (
            match["name"] == "apiserver_crd_conversion_webhook_duration_seconds_count"
            and labels.get("crd_name") == "mxjobs.kubeflow.org"
        ):
            calls["convert"] += value
    return calls


def stored_bytes(plane: ControlPlane, namespace: str, prefix: str) -> tuple[int, int]:
    """(objects, bytes) etcd holds for MXJobs of ``namespace`` whose name starts with ``prefix``.

    Read from etcd's own gRPC gateway: the values are what the API server wrote (JSON for a
    custom resource, managed fields included).
    """
    state = plane.state()
    if state is None:
        raise RuntimeError("the control plane is not running")
    key = f"/registry/kubeflow.org/mxjobs/{namespace}/{prefix}".encode()
    end = key[:-1] + bytes([key[-1] + 1])
    body = json.dumps(
        {"key": base64.b64encode(key).decode(), "range_end": base64.b64encode(end).decode()}
    ).encode()
    request = urllib.request.Request(
        f"{state.etcd_url}/v3/kv/range", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        answer = json.loads(response.read())
    values = [base64.b64decode(kv["value"]) for kv in answer.get("kvs", [])]
    return len(values), sum(len(v) for v in values)


def group_cpu(pgid: int) -> float:
    """CPU seconds of every live process in process group ``pgid`` (gunicorn and its workers)."""
    total = 0.0
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = stat_file.read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid:
                total += (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    return total


# -- configuring a candidate ------------------------------------------------------------------
def webhook_documents(
    operator: LocalOperator, candidate: Candidate, *, port: int
) -> list[dict[str, Any]]:
    """The webhook configurations of ``candidate``: manifests/webhook as ``dev-up`` registers
    them (with ``components/validate-on-create`` where it says so), less their
    ``matchConditions`` where it says so."""
    choices = InstallChoices(validate_on_create=candidate.validating)
    documents = LocalOperator(operator.plane, choices=choices).webhook_configurations(
        webhook_port=port
    )
    for document in documents:
        for webhook in document["webhooks"]:
            if not webhook.get("matchConditions"):
                raise RuntimeError(f"{webhook['name']} has no matchConditions to measure")
            if not candidate.match_conditions:
                del webhook["matchConditions"]
    return documents


CRD_PATH: Final = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/mxjobs.kubeflow.org"
ADMISSION_API: Final = "/apis/admissionregistration.k8s.io/v1"


def configure(
    client: KubeClient, operator: LocalOperator, candidate: Candidate, *, port: int
) -> None:
    """Serve ``v1beta1`` or not as ``candidate`` says, and (re)create its webhook configurations.

    Through the API rather than kubectl (a second per call on a loaded machine, a dozen per
    run). The CRD is written only when its served versions change: any change replaces the API
    server's storage for it (see ``CANDIDATES``).
    """
    crd = client.request("GET", CRD_PATH)
    versions = [v for v in crd["spec"]["versions"] if not v["storage"]]
    if any(v["served"] != candidate.v1beta1_served for v in versions):
        for version in versions:
            version["served"] = candidate.v1beta1_served
        client.request("PUT", CRD_PATH, body=crd)
    for document in operator.webhook_configurations(webhook_port=port):
        collection = f"{ADMISSION_API}/{document['kind'].lower()}s"
        try:
            client.request("DELETE", f"{collection}/{document['metadata']['name']}")
        except ApiError as error:
            if error.status != 404:
                raise
    if candidate.webhooks:
        for document in webhook_documents(operator, candidate, port=port):
            client.request("POST", f"{ADMISSION_API}/{document['kind'].lower()}s", body=document)


def expected_calls(candidate: Candidate, jobs: int) -> dict[str, collections.Counter[str]]:
    """The mutate/validate calls each phase makes under ``candidate`` (conversions vary)."""
    if not candidate.webhooks:
        return {phase: collections.Counter() for phase in PHASES}
    kinds = ("mutate", "validate") if candidate.validating else ("mutate",)
    create = collections.Counter({f"{kind} CREATE": jobs for kind in kinds})
    # Each metadata-only UPDATE (the label PATCH; the finalizer removal of a foreground
    # deletion) is a call per webhook (both judge UPDATEs), unless matchConditions skip it.
    updates = (
        collections.Counter()
        if candidate.match_conditions
        else collections.Counter({f"{kind} UPDATE": jobs for kind in ("mutate", "validate")})
    )
    return {"create": create, "label": updates, "delete": updates}


def _admission_only(calls: Mapping[str, int]) -> collections.Counter[str]:
    return collections.Counter({k: v for k, v in calls.items() if k != "convert" and v})


def _wait_configured(
    plane: ControlPlane, client: KubeClient, namespace: str, candidate: Candidate
) -> None:
    """Probe until the API server acts as ``candidate`` says (its informers lag the writes)."""
    deadline = time.monotonic() + 180
    attempt = 0
    while True:
        name = f"probe-{candidate.name}-{attempt}"
        before = webhook_calls(plane)
        client.request("POST", mxjobs_path(namespace), body=scale_job(name))
        client.request(
            "PATCH",
            mxjobs_path(namespace, name),
            body={"metadata": {"labels": {"probe": "yes"}}},
            content_type="application/merge-patch+json",
        )
        served = v1beta1_served(client, namespace)
        client.request("DELETE", mxjobs_path(namespace, name))
        calls = webhook_calls(plane) - before
        seen = _admission_only(calls)
        wanted = expected_calls(candidate, 1)
        converted = calls["convert"] > 0
        if (
            seen == wanted["create"] + wanted["label"]
            and served == candidate.v1beta1_served
            and converted == candidate.v1beta1_served
        ):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"{candidate.name}: still {dict(calls)} per probe, v1beta1 served {served}"
            )
        attempt += 1
        time.sleep(0.5)


def v1beta1_served(client: KubeClient, namespace: str) -> bool:
    try:
        client.request("GET", f"/apis/kubeflow.org/v1beta1/namespaces/{namespace}/mxjobs")
    except ApiError as error:
        if error.status == 404:
            return False
        raise
    return True


# -- one segment ------------------------------------------------------------------------------
def _parallel(work: Callable[[str], object], names: Sequence[str], *, threads: int) -> float:
    started = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        list(pool.map(work, names))
    return time.perf_counter() - started


@contextlib.contextmanager
def _measured(
    plane: ControlPlane, webhook_pids: Sequence[int], into: dict[str, Any], jobs: int
) -> Iterator[None]:
    """Fill ``into`` with the per-job CPU and webhook calls of what runs inside."""
    cpu_0, calls_0 = component_cpu(plane), webhook_calls(plane)
    hook_0 = sum(group_cpu(pid) for pid in webhook_pids)
    yield
    cpu_1, calls_1 = component_cpu(plane), webhook_calls(plane)
    hook_1 = sum(group_cpu(pid) for pid in webhook_pids)
    into["calls"] = dict(sorted((calls_1 - calls_0).items()))
    into["calls_per_job"] = round(sum((calls_1 - calls_0).values()) / jobs, 3)
    for component in ("kube-apiserver", "etcd"):
        spent = cpu_1.get(component, 0.0) - cpu_0.get(component, 0.0)
        into[f"{component}_cpu_ms_per_job"] = round(spent / jobs * 1000, 3)
    into["webhook_cpu_ms_per_job"] = round((hook_1 - hook_0) / jobs * 1000, 3)


def _wait_gone(plane: ControlPlane, namespace: str, prefix: str, timeout: float) -> None:
    """Wait until etcd holds no job named ``<prefix>*`` (asked of etcd: polling the API server
    would add to the CPU being measured)."""
    deadline = time.monotonic() + timeout
    while True:
        left, _ = stored_bytes(plane, namespace, prefix)
        if not left:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{left} jobs still there after {timeout:.0f} s")
        time.sleep(0.1)


def segment(
    *,
    plane: ControlPlane,
    client: KubeClient,
    namespace: str,
    candidate: Candidate,
    webhook_pids: Sequence[int],
    prefix: str,
    jobs: int,
    threads: int,
) -> dict[str, Any]:
    """One candidate's create, label and delete of ``jobs`` jobs named ``<prefix><i>``."""
    names = [f"{prefix}{i}" for i in range(jobs)]
    build = (
        functools.partial(defaulted_scale_job, namespace=namespace)
        if candidate.sent_defaulted
        else scale_job
    )
    bodies = {name: build(name) for name in names}
    path = mxjobs_path(namespace)
    phases: dict[str, dict[str, Any]] = {phase: {} for phase in PHASES}

    def create(name: str) -> object:
        return client.request("POST", path, body=bodies[name])

    def label(name: str) -> object:
        return client.request(
            "PATCH",
            mxjobs_path(namespace, name),
            body={"metadata": {"labels": {"team": "bench"}}},
            content_type="application/merge-patch+json",
        )

    def delete(name: str) -> object:
        return client.request(
            "DELETE", mxjobs_path(namespace, name), body={"propagationPolicy": "Foreground"}
        )

    with _measured(plane, webhook_pids, phases["create"], jobs):
        phases["create"]["seconds"] = round(_parallel(create, names, threads=threads), 3)
    count, size = stored_bytes(plane, namespace, prefix)
    if count != jobs:
        raise RuntimeError(f"etcd holds {count} jobs named {prefix}*, expected {jobs}")
    with _measured(plane, webhook_pids, phases["label"], jobs):
        phases["label"]["seconds"] = round(_parallel(label, names, threads=threads), 3)
    with _measured(plane, webhook_pids, phases["delete"], jobs):
        started = time.perf_counter()
        _parallel(delete, names, threads=threads)
        _wait_gone(plane, namespace, prefix, timeout=120 + jobs)
        phases["delete"]["seconds"] = round(time.perf_counter() - started, 3)
    wanted = expected_calls(candidate, jobs)
    for phase in PHASES:
        seen = _admission_only(phases[phase]["calls"])
        if seen != wanted[phase]:
            raise RuntimeError(
                f"{candidate.name}, {phase}: the API server made {dict(seen)} webhook calls, "
                f"expected {dict(wanted[phase])}"
            )
    return {
        "candidate": candidate.name,
        "jobs": jobs,
        "stored_bytes_per_job": size // jobs,
        **phases,
    }


# -- the run ----------------------------------------------------------------------------------
def order(candidates: Sequence[Candidate]) -> list[Candidate]:
    """A, then A B C … C B A: every candidate once on the way out and once on the way back,
    after a warm-up segment of the first that is not counted (the first foreground deletions
    wait for the garbage collector to discover the new resource; the API server's caches fill)."""
    return [candidates[0], *candidates, *reversed(candidates)]


def summarize(segments: Sequence[Mapping[str, Any]], candidate: str) -> dict[str, Any]:
    """Per-job figures of ``candidate`` over its segments (weighted by their jobs)."""
    mine = [s for s in segments if s["candidate"] == candidate]
    jobs = sum(s["jobs"] for s in mine)
    summary: dict[str, Any] = {"jobs": jobs}
    summary["stored_bytes_per_job"] = round(
        sum(s["stored_bytes_per_job"] * s["jobs"] for s in mine) / jobs
    )
    for phase in PHASES:
        figures: dict[str, Any] = {"seconds": round(sum(s[phase]["seconds"] for s in mine), 3)}
        for key in (
            "kube-apiserver_cpu_ms_per_job",
            "etcd_cpu_ms_per_job",
            "webhook_cpu_ms_per_job",
        ):
            figures[key] = round(sum(s[phase][key] * s["jobs"] for s in mine) / jobs, 3)
        calls: collections.Counter[str] = collections.Counter()
        for s in mine:
            calls.update(s[phase]["calls"])
        figures["calls_per_job"] = {k: round(v / jobs, 3) for k, v in sorted(calls.items())}
        summary[phase] = figures
    life = ("kube-apiserver_cpu_ms_per_job", "etcd_cpu_ms_per_job", "webhook_cpu_ms_per_job")
    summary["life"] = {key: round(sum(summary[phase][key] for phase in PHASES), 3) for key in life}
    summary["life"]["calls_per_job"] = round(
        sum(sum(summary[phase]["calls_per_job"].values()) for phase in PHASES), 3
    )
    return summary


def _with_ratios(summaries: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each summary with its ratios to the first candidate's (``ratios_to_<first>``)."""
    first = next(iter(summaries))
    reference = summaries[first]

    def against(phase: str, key: str, summary: Mapping[str, Any]) -> float:
        return round(ratio(summary[phase][key], reference[phase][key]), 3)

    for summary in summaries.values():
        summary["ratios_to_" + first] = {
            "create_seconds": against("create", "seconds", summary),
            "create_kube-apiserver_cpu": against(
                "create", "kube-apiserver_cpu_ms_per_job", summary
            ),
            "life_kube-apiserver_cpu": against("life", "kube-apiserver_cpu_ms_per_job", summary),
        }
    return summaries


def run(
    *,
    plane: ControlPlane,
    jobs: int = 500,
    threads: int = THREADS,
    candidates: Sequence[Candidate] = CANDIDATES,
) -> dict[str, Any]:
    """Every candidate on ``plane`` (no webhook of ours registered yet), ``jobs`` jobs each."""
    client = KubeClient.from_kubeconfig(plane.kubeconfig, pool_size=threads + 2)
    # The first candidates serve v1beta1: installed so, the CRD changes served versions only
    # where the candidates do (``CANDIDATES``).
    operator = LocalOperator(plane, choices=InstallChoices(v1beta1=True))
    servers: dict[int, tuple[int, int]] = {}
    segments: list[dict[str, Any]] = []
    half = max(1, jobs // 2)
    try:
        for workers in sorted({1, *(c.workers for c in candidates)}):
            servers[workers] = operator.start_webhook(workers=workers)
        # Conversions always go to the one-worker webhook: changing the CRD's conversion URL
        # between candidates would replace its storage (and keep the old one converting).
        conversion_port = servers[1][1]
        operator.install_crd(webhook_port=conversion_port)
        namespace = f"admission-cost-{int(time.time())}"
        ensure_namespace(client, namespace)
        for number, candidate in enumerate(order(candidates)):
            configure(client, operator, candidate, port=servers[candidate.workers][1])
            _wait_configured(plane, client, namespace, candidate)
            measured = segment(
                plane=plane,
                client=client,
                namespace=namespace,
                candidate=candidate,
                webhook_pids=[pid for pid, _ in servers.values()],
                prefix=f"s{number}-",
                jobs=half,
                threads=threads,
            )
            if number:  # the first is a warm-up (see ``order``)
                segments.append(measured)
    finally:
        operator.unregister_webhooks()
        for pid, _ in servers.values():
            stop_process(pid)
    summaries = _with_ratios({c.name: summarize(segments, c.name) for c in candidates})
    return {
        "benchmark": "admission_cost",
        "jobs_per_candidate": 2 * half,
        "threads": threads,
        "candidates": {
            c.name: {
                "v1beta1_served": c.v1beta1_served,
                "webhooks": c.webhooks,
                "match_conditions": c.match_conditions,
                "validating": c.validating,
                "workers": c.workers,
                **summaries[c.name],
            }
            for c in candidates
        },
        "segments": segments,
    }


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    return jobs_main(
        argv,
        module="bench.admission_cost",
        description="What admission costs the API server, per job.",
        plane_name="admission-cost",
        run=run,
        default_threads=THREADS,
        jobs_help="jobs per candidate",
    )


if __name__ == "__main__":
    main()
