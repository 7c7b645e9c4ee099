"""The tests' one MXJob factory: every MXJob a test needs is made by :func:`mxjob`.

Tests need MXJobs in every shape: raw as a user writes them (the webhook's tests, the jobs the
end-to-end tests create), defaulted as the mutating webhook stores them (the controller's unit
tests), v1 or v1beta1, distributed or single-node, MXTrain or MXTune. One factory with keyword
options says what each test varies and leaves the rest the same everywhere, so a change to the
API is made here once. :func:`replica` and :func:`container` make the parts a test gives one
replica type of its own (another image, command, sidecar or annotation).

Every call returns fresh plain dicts (the shape the API server sends), so a test may change one
without affecting another. Named presets over it live beside the tests that use them
(``tests/controller/samples.py``, ``tests/shared/shared_samples.py``,
``tests/e2e/controller_fixtures.py``...).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from shared.defaults import apply_defaults

Obj = dict[str, Any]
Replicas = Mapping[str, int | Mapping[str, Any] | None]

V1 = "kubeflow.org/v1"
V1BETA1 = "kubeflow.org/v1beta1"
IMAGE = "mxjob/mxnet:cpu"
TRAIN: Mapping[str, int] = MappingProxyType({"Scheduler": 1, "Server": 1, "Worker": 2})
"""The distributed MXTrain job most tests use: a Scheduler, a Server and two Workers."""
TUNE: Mapping[str, int] = MappingProxyType({"TunerTracker": 1, "TunerServer": 2, "Tuner": 1})
"""An MXTune (TVM auto-tuning) job: a tracker, two RPC servers and a tuner."""


def container(
    name: str | None = "mxnet",
    *,
    image: str | None = IMAGE,
    command: Sequence[str] | None = None,
    args: Sequence[str] | None = None,
    env: Sequence[Mapping[str, Any]] | None = None,
    resources: Mapping[str, Any] | None = None,
    **fields: Any,
) -> Obj:
    """A container; ``name`` or ``image`` None leaves the field out (what the webhook names, or a
    container only a kubelet's bookkeeping reads). ``fields`` are any others, as the API spells
    them (``ports``, ``imagePullPolicy``, ``securityContext``...)."""
    found: Obj = {}
    if name is not None:
        found["name"] = name
    if image is not None:
        found["image"] = image
    if command is not None:
        found["command"] = list(command)
    if args is not None:
        found["args"] = list(args)
    if env is not None:
        found["env"] = copy.deepcopy(list(env))
    if resources is not None:
        found["resources"] = copy.deepcopy(dict(resources))
    found.update(copy.deepcopy(fields))
    return found


def replica(
    count: int | None = 1,
    *,
    containers: Sequence[Mapping[str, Any]] | None = None,
    restart_policy: str | None = None,
    restart_scope: str | None = None,
    label: str | None = None,
    annotations: Mapping[str, str] | None = None,
    grace_seconds: int | None = None,
) -> Obj:
    """One replica type's spec: ``count`` pods (None leaves ``replicas`` out: the webhook makes
    it 1) of ``containers`` (default: one ``mxnet`` container). ``label`` is v1beta1's
    TunerServer label, ``annotations`` the pod template's, ``grace_seconds`` its
    terminationGracePeriodSeconds."""
    found: Obj = {}
    if count is not None:
        found["replicas"] = count
    if restart_policy is not None:
        found["restartPolicy"] = restart_policy
    if restart_scope is not None:
        found["restartScope"] = restart_scope
    if label is not None:
        found["label"] = label
    template: Obj = {}
    if annotations is not None:
        template["metadata"] = {"annotations": dict(annotations)}
    chosen = [container()] if containers is None else containers
    pod_spec: Obj = {"containers": [copy.deepcopy(dict(c)) for c in chosen]}
    if grace_seconds is not None:
        pod_spec["terminationGracePeriodSeconds"] = grace_seconds
    template["spec"] = pod_spec
    found["template"] = template
    return found


def mxjob(
    name: str | None = "mnist",
    *,
    namespace: str | None = None,
    api_version: str = V1,
    mode: str | None = "MXTrain",
    replicas: Replicas | None = TRAIN,
    image: str = IMAGE,
    command: Sequence[str] | None = None,
    args: Sequence[str] | None = None,
    resources: Mapping[str, Any] | None = None,
    restart_policy: str | None = None,
    restart_scope: str | None = None,
    grace_seconds: int | None = None,
    run_policy: Mapping[str, Any] | None = None,
    success_policy: str | None = None,
    spec: Mapping[str, Any] | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    uid: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    status: Mapping[str, Any] | None = None,
    defaulted: bool = False,
) -> Obj:
    """An MXJob of ``replicas`` (type → count; default :data:`TRAIN`).

    A count becomes a replica of one ``mxnet`` container of ``image`` (``command``, ``args``,
    ``resources``) with ``restart_policy``, ``restart_scope`` and ``grace_seconds``; a mapping
    (from :func:`replica`, or anything a test wants to send) is taken as it is. ``restart_scope``
    ``Replica`` skips the Scheduler: ps-lite never readmits one, so the webhook refuses it there.
    ``mode`` or ``replicas`` None leaves ``jobMode`` or ``mxReplicaSpecs`` out (what
    training-operator's users may write); ``spec`` adds other spec fields as they are spelled
    (``managedBy``, v1beta1's run-policy fields). ``name`` None leaves the name out (a Katib
    trial template), ``metadata`` adds what the API server writes (generation, resourceVersion).
    ``defaulted``: as the mutating webhook stores it; ``status`` is set after that.
    """
    found: Obj = {"apiVersion": api_version, "kind": "MXJob"}
    meta = _metadata(name, namespace=namespace, uid=uid, labels=labels, annotations=annotations)
    meta.update(copy.deepcopy(dict(metadata or {})))
    if meta:
        found["metadata"] = meta
    body: Obj = {} if mode is None else {"jobMode": mode}
    if replicas is not None:
        body["mxReplicaSpecs"] = {
            rtype: _replica_of(
                rtype,
                value,
                containers=[
                    container(image=image, command=command, args=args, resources=resources)
                ],
                restart_policy=restart_policy,
                restart_scope=restart_scope,
                grace_seconds=grace_seconds,
            )
            for rtype, value in replicas.items()
        }
    if run_policy is not None:
        body["runPolicy"] = copy.deepcopy(dict(run_policy))
    if success_policy is not None:
        body["successPolicy"] = success_policy
    body.update(copy.deepcopy(dict(spec or {})))
    found["spec"] = body
    if defaulted:
        found = apply_defaults(found)
    if status is not None:
        found["status"] = copy.deepcopy(dict(status))
    return found


def _metadata(
    name: str | None,
    *,
    namespace: str | None,
    uid: str | None,
    labels: Mapping[str, str] | None,
    annotations: Mapping[str, str] | None,
) -> Obj:
    fields = {"name": name, "namespace": namespace, "uid": uid}
    meta: Obj = {key: value for key, value in fields.items() if value is not None}
    if labels is not None:
        meta["labels"] = dict(labels)
    if annotations is not None:
        meta["annotations"] = dict(annotations)
    return meta


def _replica_of(
    rtype: str,
    value: int | Mapping[str, Any] | None,
    *,
    containers: list[Obj],
    restart_policy: str | None,
    restart_scope: str | None,
    grace_seconds: int | None,
) -> Obj:
    if isinstance(value, Mapping):
        return copy.deepcopy(dict(value))
    if restart_scope == "Replica" and rtype == "Scheduler":
        restart_scope = None
    return replica(
        value,
        containers=containers,
        restart_policy=restart_policy,
        restart_scope=restart_scope,
        grace_seconds=grace_seconds,
    )
