"""The env the operator injects into the `mxnet` container of each replica template.

One template serves every index of a replica type, so nothing per-pod may be written into it
literally. The per-pod value (the replica index) reaches the container through the Downward
API: `MXJOB_REPLICA_INDEX` is read from the pod's `replica-index` label, and later entries
refer to it as `$(MXJOB_REPLICA_INDEX)`, which the kubelet expands. That is why it comes
first, and why every other literal is `$`-escaped: only our own reference may expand.

`expand_vars` and `resolve_env` reproduce the kubelet's expansion so that tests (and the test
kubelet) see the env exactly as a process in the pod would.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from shared.constants import (
    ENV_DMLC_NUM_SERVER,
    ENV_DMLC_NUM_WORKER,
    ENV_DMLC_PS_ROOT_PORT,
    ENV_DMLC_PS_ROOT_URI,
    ENV_DMLC_ROLE,
    ENV_DMLC_USE_KUBERNETES,
    ENV_DMLC_WORKER_ID,
    ENV_MX_CONFIG,
    ENV_TVM_TRACKER_HOST,
    ENV_TVM_TRACKER_KEY,
    ENV_TVM_TRACKER_PORT,
    LABEL_REPLICA_INDEX,
    REPLICA_INDEX_ENV,
    JobMode,
    ReplicaType,
)
from shared.naming import replica_name
from shared.spec import (
    as_mapping,
    canonical_replica_type,
    container_port,
    job_mode,
    job_name,
    mxnet_container,
    replica_specs,
    spec_replica_count,
    tuner_server_key,
)

REPLICA_INDEX_FIELD_PATH = f"metadata.labels['{LABEL_REPLICA_INDEX}']"
REPLICA_INDEX_REF = f"$({REPLICA_INDEX_ENV})"


def escape_vars(value: str) -> str:
    """Escape `$` so that the kubelet's `$(VAR)` expansion leaves `value` unchanged."""
    return value.replace("$", "$$")


def expand_vars(value: str, env: Mapping[str, str]) -> str:
    """Expand `$(VAR)` references the way the kubelet does for env values, command and args.

    `$$` is an escaped `$`; `$(NAME)` becomes `env[NAME]` when NAME is defined and stays
    as written otherwise; an unterminated `$(` and any other `$` are kept literally.
    """
    out: list[str] = []
    i = 0
    n = len(value)
    while i < n:
        char = value[i]
        if char != "$" or i + 1 >= n:
            out.append(char)
            i += 1
            continue
        following = value[i + 1]
        if following == "$":
            out.append("$")
            i += 2
        elif following == "(":
            close = value.find(")", i + 2)
            if close == -1:
                out.append("$(")
                i += 2
            else:
                name = value[i + 2 : close]
                out.append(env.get(name, f"$({name})"))
                i = close + 1
        else:
            out.append("$")
            i += 1
    return "".join(out)


def _field_value(field_path: str, pod_metadata: Mapping[str, Any]) -> str | None:
    """The Downward API value of a `fieldRef.fieldPath` over a pod's metadata."""
    for prefix, key in (("metadata.labels['", "labels"), ("metadata.annotations['", "annotations")):
        if field_path.startswith(prefix) and field_path.endswith("']"):
            found = as_mapping(pod_metadata.get(key)).get(field_path[len(prefix) : -2])
            return found if isinstance(found, str) else ""
    if field_path in ("metadata.name", "metadata.namespace", "metadata.uid"):
        found = pod_metadata.get(field_path.removeprefix("metadata."))
        return found if isinstance(found, str) else ""
    return None


def resolve_env(entries: Iterable[Any], *, pod_metadata: Mapping[str, Any]) -> dict[str, str]:
    """The env a container process sees: entries in order, each expanded over the earlier ones.

    Supports literal values and `valueFrom.fieldRef` over the pod's metadata (labels,
    annotations, name, namespace, uid); other sources (secrets, config maps, resources) are not
    something a unit test or the test kubelet can resolve, so those entries are skipped.
    """
    resolved: dict[str, str] = {}
    for entry in entries:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
            continue
        name: str = entry["name"]
        value_from = entry.get("valueFrom")
        if value_from is not None:
            field_path = as_mapping(as_mapping(value_from).get("fieldRef")).get("fieldPath")
            found = _field_value(field_path, pod_metadata) if isinstance(field_path, str) else None
            if found is not None:
                resolved[name] = found
            continue
        value = entry.get("value")
        resolved[name] = expand_vars(value, resolved) if isinstance(value, str) else ""
    return resolved


def _literal(name: str, value: str) -> dict[str, Any]:
    return {"name": name, "value": value}


def replica_index_env() -> dict[str, Any]:
    """`MXJOB_REPLICA_INDEX` from the pod's replica-index label (Downward API)."""
    return {
        "name": REPLICA_INDEX_ENV,
        "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": REPLICA_INDEX_FIELD_PATH}},
    }


def _compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


@dataclass(frozen=True)
class ReplicaLayout:
    """One replica type as the injected env sees it."""

    replica_type: ReplicaType
    count: int
    port: int
    server_key: str | None
    """The TVM tuner-server key annotated on the template, if any."""


@dataclass(frozen=True)
class JobLayout:
    """Everything the injected env depends on, read from a job in one pass.

    The env of every replica type is a function of this alone. Reading it once per job, instead
    of walking the spec again for each port, count and name, is what keeps defaulting and the
    owned-env check cheap on the admission path; being hashable, it also keys the cache of the
    one expensive value, MX_CONFIG (the controller and validation ask for the same one again).
    """

    name: str
    mode: JobMode | None
    replicas: tuple[ReplicaLayout, ...]
    """In canonical replica-type order."""

    def count(self, replica_type: ReplicaType) -> int:
        return next((r.count for r in self.replicas if r.replica_type is replica_type), 0)

    def port(self, replica_type: ReplicaType) -> int:
        """The port of a replica type of the layout (its callers check ``count`` first)."""
        for replica in self.replicas:
            if replica.replica_type is replica_type:
                return replica.port
        raise LookupError(f"the job has no {replica_type} replicas")


def job_layout(job: Mapping[str, Any]) -> JobLayout:
    """The `JobLayout` of a defaulted job: its counts and ports as defaulting wrote them.

    Raises shared.spec.NotDefaultedError when a replica's count or port is not set or not
    valid (a job validation refuses)."""
    return JobLayout(
        name=job_name(job),
        mode=job_mode(job),
        replicas=tuple(
            ReplicaLayout(
                replica_type=ReplicaType(rtype),
                count=spec_replica_count(rspec),
                port=container_port(mxnet_container(as_mapping(rspec).get("template"))),
                server_key=tuner_server_key(as_mapping(rspec.get("template"))),
            )
            for rtype, rspec in replica_specs(job).items()
        ),
    )


@functools.lru_cache(maxsize=256)
def _layout_cluster(layout: JobLayout) -> str:
    """The escaped `"cluster":...,"labels":...` part of MX_CONFIG, the same for every type."""
    cluster: dict[str, list[dict[str, Any]]] = {}
    labels: dict[str, str] = {}
    for replica in layout.replicas:
        lower = replica.replica_type.lower()
        cluster[lower] = [
            {"url": replica_name(layout.name, replica.replica_type, i), "port": replica.port}
            for i in range(replica.count)
        ]
        labels[lower] = replica.server_key or ""
    return escape_vars(f'"cluster":{_compact(cluster)},"labels":{_compact(labels)}')


def _layout_mx_config(layout: JobLayout, type_name: str) -> str:
    task_type = escape_vars(_compact(type_name.lower()))
    return (
        f'{{{_layout_cluster(layout)},"task":{{"type":{task_type},"index":{REPLICA_INDEX_REF}}}}}'
    )


def replica_env(job: Mapping[str, Any], replica_type: str) -> list[dict[str, Any]]:
    """The env entries injected, in this order, into the mxnet container of `replica_type` of a
    defaulted job (shared/defaults.py injects them; :func:`job_layout` says what it reads).

    MXJOB_REPLICA_INDEX first (everything else may refer to it); then, in MXTrain, the DMLC_*
    variables ps-lite reads, in MXTune the TVM_TRACKER_* variables TVM's RPC clients read
    (`_tracker_env`); then MX_CONFIG in both modes. The single-node MXTrain form gets
    the same DMLC_* set, describing a cluster without scheduler or servers (an empty root
    address, port 0), which a local kvstore ignores and a `dist_*` one refuses at once. A job
    with no valid mode gets only the index and MX_CONFIG.
    """
    return layout_env(job_layout(job), replica_type)


def _ps_root(layout: JobLayout) -> tuple[str, str]:
    """`DMLC_PS_ROOT_URI` and `DMLC_PS_ROOT_PORT`: the Scheduler's address, if there is one.

    A single-node job has no Scheduler, so no Service of that name will ever exist: an address
    pointing there would make a `dist_*` kvstore wait forever for a peer. The empty address and
    port 0 (what training-operator gives such a job too) make ps-lite fail at once instead.
    """
    if layout.count(ReplicaType.SCHEDULER) == 0:
        return "", "0"
    return (
        replica_name(layout.name, ReplicaType.SCHEDULER, 0),
        str(layout.port(ReplicaType.SCHEDULER)),
    )


def _tracker_env(layout: JobLayout, rtype: ReplicaType | None) -> list[dict[str, Any]]:
    """The tracker's address (and, for its clients, the servers' key) as TVM reads them.

    MetaSchedule's `RPCConfig()` with no arguments reads TVM_TRACKER_HOST, TVM_TRACKER_PORT
    and TVM_TRACKER_KEY, so a Tuner needs all three; a TunerServer registers with that tracker
    under that key (`--tracker=$(TVM_TRACKER_HOST):$(TVM_TRACKER_PORT)
    --key=$(TVM_TRACKER_KEY)` in its args). The TunerTracker gets its own address, which it may
    bind and which `python -m tvm.exec.query_rpc_tracker` reads, but no key: a tracker serves
    every key. The values are MX_CONFIG's: the tracker's Service name and port, and the
    TunerServer template's key ("" when none is annotated, as `labels.tunerserver`). Without a
    TunerTracker (a job validation rejects) the address is empty and the port 0.
    """
    if rtype not in (ReplicaType.TUNER_TRACKER, ReplicaType.TUNER_SERVER, ReplicaType.TUNER):
        return []
    host, port = "", "0"
    if layout.count(ReplicaType.TUNER_TRACKER) > 0:
        host = replica_name(layout.name, ReplicaType.TUNER_TRACKER, 0)
        port = str(layout.port(ReplicaType.TUNER_TRACKER))
    env = [
        _literal(ENV_TVM_TRACKER_HOST, escape_vars(host)),
        _literal(ENV_TVM_TRACKER_PORT, port),
    ]
    if rtype is not ReplicaType.TUNER_TRACKER:
        server_key = next(
            (r.server_key for r in layout.replicas if r.replica_type is ReplicaType.TUNER_SERVER),
            None,
        )
        env.append(_literal(ENV_TVM_TRACKER_KEY, escape_vars(server_key or "")))
    return env


def layout_env(layout: JobLayout, replica_type: str) -> list[dict[str, Any]]:
    """`replica_env` from a layout already read; fresh dicts, so callers may keep them."""
    rtype = canonical_replica_type(replica_type)
    type_name = rtype.value if rtype is not None else replica_type
    env = [replica_index_env()]
    if layout.mode is JobMode.MXTRAIN:
        root_uri, root_port = _ps_root(layout)
        env += [
            _literal(ENV_DMLC_ROLE, escape_vars(type_name.lower())),
            _literal(ENV_DMLC_PS_ROOT_URI, escape_vars(root_uri)),
            _literal(ENV_DMLC_PS_ROOT_PORT, root_port),
            _literal(ENV_DMLC_NUM_SERVER, str(layout.count(ReplicaType.SERVER))),
            _literal(ENV_DMLC_NUM_WORKER, str(layout.count(ReplicaType.WORKER))),
            _literal(ENV_DMLC_USE_KUBERNETES, "1"),
        ]
        if rtype is ReplicaType.WORKER:
            env.append(_literal(ENV_DMLC_WORKER_ID, REPLICA_INDEX_REF))
    elif layout.mode is JobMode.MXTUNE:
        env += _tracker_env(layout, rtype)
    env.append(_literal(ENV_MX_CONFIG, _layout_mx_config(layout, type_name)))
    return env


def expected_owned_env(layout: JobLayout, replica_type: str) -> dict[str, dict[str, Any]]:
    """The injected env of a replica type keyed by name (for comparing with what is there)."""
    return {entry["name"]: entry for entry in layout_env(layout, replica_type)}


def normalize_env_entry(entry: Mapping[str, Any]) -> dict[str, Any]:
    """An env entry as the API server stores it on a pod, for equality comparisons.

    The server defaults `fieldRef.apiVersion` to "v1" and drops an empty `value`; a user
    copying our entry either way has written the same thing.
    """
    normalized = dict(entry)
    if normalized.get("value") == "":
        del normalized["value"]
    value_from = normalized.get("valueFrom")
    if isinstance(value_from, Mapping) and isinstance(value_from.get("fieldRef"), Mapping):
        field_ref = dict(value_from["fieldRef"])
        field_ref.setdefault("apiVersion", "v1")
        normalized["valueFrom"] = {**value_from, "fieldRef": field_ref}
    return normalized


def owned_entries(env: Sequence[Any], names: Iterable[str]) -> list[tuple[int, dict[str, Any]]]:
    """(position, entry) of the env entries whose name is one of `names`."""
    wanted = frozenset(names)
    return [
        (i, entry)
        for i, entry in enumerate(env)
        if isinstance(entry, dict)
        and isinstance(entry.get("name"), str)
        and entry["name"] in wanted
    ]
