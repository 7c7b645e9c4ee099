"""Generators for fuzzing the webhook: MXJobs, the reviews that carry them, and raw bodies.

The generators aim where bugs hide rather than at uniform noise: most MXJobs are valid or one
edit away from valid (so defaulting, conversion and the cross-field rules run deep), the edits put
any JSON value at any path (so no rule may assume a type the schema has not checked yet), and raw
bodies are mostly *almost* reviews (a valid review with bytes flipped, cut or spliced, or an
envelope field replaced), since pure noise never gets past the JSON decoder.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import strategies as st

from shared import constants, conversion
from tests.webhook.reviews_samples import admission_review, conversion_review
from webhook.reviews import Operation

Job = dict[str, Any]

# Keys the rules look at, so random objects often hit a rule instead of being ignored.
VOCABULARY = (
    "apiVersion",
    "kind",
    "metadata",
    "name",
    "namespace",
    "generateName",
    "annotations",
    "labels",
    "spec",
    "status",
    "jobMode",
    "mxReplicaSpecs",
    "runPolicy",
    "successPolicy",
    "replicas",
    "restartPolicy",
    "template",
    "containers",
    "image",
    "env",
    "value",
    "valueFrom",
    "ports",
    "containerPort",
    "label",
    *constants.RUN_POLICY_FIELDS,
    *(t.value for t in constants.ReplicaType),
    *constants.OWNED_ENV_NAMES,
    constants.TUNER_SERVER_KEY_ANNOTATION,
    constants.CONVERSION_DATA_ANNOTATION,
    constants.PORT_NAME,
)

_texts = st.one_of(
    st.sampled_from(VOCABULARY),
    st.sampled_from(["", " ", "-", "MXTrain", "MXTune", "ExitCode", "All", "9091", "1e309"]),
    st.text(max_size=12),
)
_numbers = st.one_of(
    st.integers(-3, 70),
    st.integers(),  # far beyond int64 too: JSON allows it, Kubernetes does not
    st.floats(allow_nan=False, allow_infinity=False),
)
json_scalars = st.one_of(st.none(), st.booleans(), _numbers, _texts)
json_values: st.SearchStrategy[Any] = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_texts, inner, max_size=4),
    max_leaves=12,
)

_TRAIN_TYPES = ("Scheduler", "Server", "Worker")
_TUNE_TYPES = ("TunerTracker", "TunerServer", "Tuner")
_POLICIES = (None, "Never", "ExitCode", "OnFailure", "Always")


@st.composite
def containers(draw: st.DrawFn, *, sole: bool) -> list[Job]:
    """The containers of one template: an ``mxnet`` one (unnamed when alone), maybe sidecars."""
    main: Job = {"image": draw(st.sampled_from(["mxjob/mxnet:cpu", "img", "r.io/a/b@sha256:0"]))}
    if not sole or draw(st.integers(0, 3)):
        main["name"] = constants.CONTAINER_NAME
    if draw(st.booleans()):
        main["command"] = draw(st.lists(st.text(max_size=8), min_size=1, max_size=3))
    if draw(st.integers(0, 2)) == 0:
        port: Job = {"containerPort": draw(st.integers(1, 65535))}
        if draw(st.booleans()):
            port["name"] = constants.PORT_NAME
        main["ports"] = [port]
    if draw(st.integers(0, 2)) == 0:
        names = st.sampled_from(["LR", "EPOCHS", "DMLC_INTERFACE", "PS_VERBOSE"])
        main["env"] = [
            {"name": n, "value": draw(st.text(max_size=6))}
            for n in draw(st.lists(names, unique=True, max_size=3))
        ]
    if draw(st.integers(0, 3)) == 0:
        main["resources"] = {"limits": {"cpu": "1", "nvidia.com/gpu": "1"}}
    result = [main]
    if not sole:
        for index in range(draw(st.integers(1, 2))):
            result.insert(draw(st.integers(0, len(result))), {"name": f"side{index}", "image": "s"})
    return result


@st.composite
def mxjobs(draw: st.DrawFn) -> Job:
    """A v1 MXJob as users write it: valid by the contract, in every spelling it accepts."""
    mode = draw(st.sampled_from(["MXTrain", "MXTune"]))
    if mode == "MXTrain":
        if draw(st.integers(0, 4)) == 0:
            counts = {"Worker": 1}  # single-node
        else:
            counts = {
                "Scheduler": 1,
                "Server": draw(st.integers(0, 3)),
                "Worker": draw(st.integers(0, 4)),
            }
            for optional in ("Server", "Worker"):
                if counts[optional] == 0 and draw(st.booleans()):
                    del counts[optional]
    else:
        counts = {"TunerTracker": 1, "TunerServer": draw(st.integers(1, 3)), "Tuner": 1}
    replica_specs: Job = {}
    for canonical, count in counts.items():
        key = draw(st.sampled_from([canonical, canonical, canonical.lower(), canonical.upper()]))
        template: Job = {"spec": {"containers": draw(containers(sole=draw(st.booleans())))}}
        if draw(st.integers(0, 2)) == 0:
            template["metadata"] = {"labels": {"team": "a"}, "annotations": {"note": "x"}}
        if canonical == "TunerServer" and draw(st.booleans()):
            key_value = draw(st.sampled_from(["gpu", "2080ti", "cpu-local"]))
            annotations = template.setdefault("metadata", {}).setdefault("annotations", {})
            annotations[constants.TUNER_SERVER_KEY_ANNOTATION] = key_value
        rspec: Job = {"template": template}
        if count != 1 or draw(st.booleans()):
            rspec["replicas"] = count
        policy = draw(st.sampled_from(_POLICIES))
        if policy is not None:
            rspec["restartPolicy"] = policy
        replica_specs[key] = rspec
    spec: Job = {"jobMode": mode, "mxReplicaSpecs": replica_specs}
    run_policy_values: dict[str, st.SearchStrategy[Any]] = {
        "cleanPodPolicy": st.sampled_from(["All", "Running", "None"]),
        "backoffLimit": st.integers(0, 10),
        "activeDeadlineSeconds": st.integers(1, 3600),
        "ttlSecondsAfterFinished": st.integers(0, 600),
        "suspend": st.booleans(),
        "managedBy": st.sampled_from(["kubeflow.org/mxjob-operator", "example.com/other"]),
        "schedulingPolicy": st.just({"minAvailable": 2, "queue": "q"}),
    }
    for field, values in run_policy_values.items():
        if draw(st.integers(0, 2)) == 0:
            # The standalone mxnet-operator wrote run-policy fields straight under spec.
            flat = field in constants.V1BETA1_RUN_POLICY_FIELDS and draw(st.booleans())
            where = spec if flat else spec.setdefault("runPolicy", {})
            where[field] = draw(values)
    if mode == "MXTrain" and draw(st.integers(0, 3)) == 0:
        spec["successPolicy"] = draw(st.sampled_from(["", "AllWorkers"]))
    metadata: Job = {
        "name": draw(st.sampled_from(["j", "mxnet-job", "a" * 40, "train-7"])),
        "namespace": "ns",
    }
    if draw(st.integers(0, 3)) == 0:
        metadata["labels"] = {"app": "mx"}
    job: Job = {
        "apiVersion": constants.API_VERSION_V1,
        "kind": constants.KIND,
        "metadata": metadata,
        "spec": spec,
    }
    if draw(st.integers(0, 4)) == 0:
        job["status"] = {"state": "Running", "replicaStatuses": {"Worker": {"active": 1}}}
    return job


def _containers_of(job: Job) -> list[list[Any]]:
    replicas = job.get("spec", {}).get("mxReplicaSpecs", {})
    found = []
    for rspec in replicas.values() if isinstance(replicas, dict) else ():
        try:
            found.append(rspec["template"]["spec"]["containers"])
        except (KeyError, TypeError):
            continue
    return found


@st.composite
def broken(draw: st.DrawFn, job: Job) -> Job:
    """``job`` with one rule of the contract broken the way users break it."""
    job = copy.deepcopy(job)
    spec = job["spec"]
    replicas = spec["mxReplicaSpecs"]
    key = draw(st.sampled_from(sorted(replicas)))
    main = replicas[key]["template"]["spec"]["containers"]
    choice = draw(st.integers(0, 10))
    if choice == 0:
        job["metadata"]["name"] = draw(st.sampled_from(["Bad_Name", "a" * 70, "9job", ""]))
    elif choice == 1:
        del job["metadata"]["name"]
        job["metadata"]["generateName"] = "j-"
    elif choice == 2:
        other = "Tuner" if spec["jobMode"] == "MXTrain" else "Server"
        replicas[draw(st.sampled_from([other, "Chief", "scheduler"]))] = copy.deepcopy(
            replicas[key]
        )
    elif choice == 3:
        for container in main:
            container.pop("image", None)
    elif choice == 4:
        for container in main:
            container["name"] = "main"
    elif choice == 5:
        owned = draw(st.sampled_from(sorted(constants.OWNED_ENV_NAMES)))
        main[-1].setdefault("env", []).append({"name": owned, "value": "1"})
    elif choice == 6:
        replicas[key]["restartPolicy"] = draw(st.sampled_from(["Sometimes", "", "never"]))
    elif choice == 7:
        field = draw(st.sampled_from(["backoffLimit", "activeDeadlineSeconds", "ttlSeconds"]))
        spec.setdefault("runPolicy", {})[field] = -1
    elif choice == 8:
        spec["jobMode"] = draw(st.sampled_from(["MXServe", "mxtrain", ""]))
    elif choice == 9:
        replicas[key]["replicas"] = draw(st.sampled_from(["2", -1, 2**63, 1.5]))
    else:
        del spec["mxReplicaSpecs"][key]
    return job


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into a JSON document, the root excluded."""
    paths: list[tuple[Any, ...]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            paths.append((*prefix, key))
            paths.extend(_paths(item, (*prefix, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            paths.append((*prefix, index))
            paths.extend(_paths(item, (*prefix, index)))
    return paths


@st.composite
def perturbed(draw: st.DrawFn, document: Job, *, max_edits: int = 3) -> Job:
    """``document`` with up to ``max_edits`` random edits: any value put at any path, keys
    removed or added. This is how a rule that trusts a type it has not checked is found."""
    document = copy.deepcopy(document)
    for _ in range(draw(st.integers(1, max_edits))):
        paths = _paths(document)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent: Any = document
        for part in path[:-1]:
            parent = parent[part]
        last = path[-1]
        action = draw(st.integers(0, 3))
        if action == 0 and isinstance(parent, dict):
            del parent[last]
        elif action == 1 and isinstance(parent[last], dict):
            parent[last][draw(_texts)] = draw(json_values)
        elif action == 2 and isinstance(parent[last], list):
            parent[last].append(draw(json_values))
        else:
            parent[last] = draw(json_values)
    return document


@st.composite
def any_mxjobs(draw: st.DrawFn) -> Job:
    """MXJobs in v1 or v1beta1: valid, with one rule broken, or randomly edited (or both)."""
    job = draw(mxjobs())
    kind = draw(st.integers(0, 5))
    if kind in (1, 2):
        job = draw(broken(job))
    if draw(st.integers(0, 3)) == 0:
        job = conversion.convert(job, constants.V1BETA1)
    if kind in (2, 3):
        job = draw(perturbed(job))
    return job


def _as(job: Job, api_version: str) -> Job:
    job["apiVersion"] = api_version
    job["kind"] = constants.KIND
    return job


@st.composite
def v1_objects(draw: st.DrawFn) -> Job:
    """v1 MXJobs with any content: valid, broken, or randomly edited anywhere but the type."""
    job = draw(mxjobs())
    if draw(st.booleans()):
        job = draw(broken(job))
    if draw(st.booleans()):
        job = draw(perturbed(job))
    return _as(job, constants.API_VERSION_V1)


@st.composite
def v1beta1_objects(draw: st.DrawFn) -> Job:
    """v1beta1 MXJobs as they reach the webhook: read from storage (converted from any v1, so
    with the conversion-data annotation that stands for what v1beta1 cannot say) or written
    by a user in v1beta1 terms (no such annotation, any content)."""
    job = conversion.convert(draw(v1_objects()), constants.V1BETA1)
    if draw(st.booleans()):
        metadata = job.get("metadata")
        annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
        if isinstance(annotations, dict):
            annotations.pop(constants.CONVERSION_DATA_ANNOTATION, None)
        job = draw(perturbed(job))
    return _as(job, constants.API_VERSION_V1BETA1)


@st.composite
def edited_v1beta1_objects(draw: st.DrawFn) -> Job:
    """v1beta1 MXJobs read from storage and then edited anywhere, the annotation included, so
    that it may no longer match the spec (a field it mentions was removed, say)."""
    job = conversion.convert(draw(v1_objects()), constants.V1BETA1)
    return _as(draw(perturbed(job)), constants.API_VERSION_V1BETA1)


@st.composite
def admission_reviews(draw: st.DrawFn) -> dict[str, Any]:
    """AdmissionReviews as the API server sends them, about any generated MXJob."""
    job = draw(any_mxjobs())
    operation: Operation = draw(st.sampled_from(["CREATE", "CREATE", "UPDATE", "DELETE"]))
    if operation == "DELETE":
        return admission_review(None, operation="DELETE", old=job)
    old: Job | None = None
    if operation == "UPDATE":
        old = draw(st.one_of(st.just(copy.deepcopy(job)), any_mxjobs()))
    sub_resource = "status" if draw(st.integers(0, 9)) == 0 else None
    return admission_review(job, operation=operation, old=old, sub_resource=sub_resource)


@st.composite
def conversion_reviews(draw: st.DrawFn) -> dict[str, Any]:
    """ConversionReviews of one to three generated MXJobs towards either served version."""
    objects = draw(st.lists(any_mxjobs(), min_size=1, max_size=3))
    desired = draw(st.sampled_from([constants.API_VERSION_V1, constants.API_VERSION_V1BETA1]))
    return conversion_review(objects, desired_api_version=desired)


def encode(document: Any) -> bytes:
    """How the API server encodes a review (plain JSON, UTF-8)."""
    return json.dumps(document, separators=(",", ":")).encode()


@st.composite
def _byte_mangled(draw: st.DrawFn, body: bytes) -> bytes:
    """``body`` with bytes flipped, cut, duplicated or spliced in."""
    data = bytearray(body)
    for _ in range(draw(st.integers(1, 4))):
        action = draw(st.integers(0, 4))
        at = draw(st.integers(0, len(data)))
        if action == 0 and data:
            data[min(at, len(data) - 1)] ^= 1 << draw(st.integers(0, 7))
        elif action == 1:
            del data[at:]
        elif action == 2:
            end = draw(st.integers(at, len(data)))
            data[at:at] = data[at:end]
        elif action == 3:
            data[at:at] = draw(
                st.sampled_from(
                    [b"NaN", b"-Infinity", b"1e999", b"9" * 5000, b"\xff\xfe", b"\x00", b"{", b'"']
                )
            )
        else:
            end = draw(st.integers(at, min(len(data), at + 16)))
            del data[at:end]
    return bytes(data)


@st.composite
def _envelope_mangled(draw: st.DrawFn, review: dict[str, Any]) -> bytes:
    """A review whose envelope (not the MXJob) holds a random value somewhere."""
    review = copy.deepcopy(review)
    request = review["request"]
    target = draw(st.sampled_from(["review", "request", "request", "request"]))
    holder = review if target == "review" else request
    field = draw(st.sampled_from([*sorted(holder), "extra"]))
    if draw(st.integers(0, 3)) == 0:
        holder.pop(field, None)
    else:
        holder[field] = draw(json_values)
    return encode(review)


_nested = st.integers(1, 200_000).map(lambda depth: b"[" * depth + b"]" * depth)


@st.composite
def raw_bodies(draw: st.DrawFn) -> bytes:
    """Bodies a review endpoint might receive from anything that can reach it."""
    review = draw(st.one_of(admission_reviews(), conversion_reviews()))
    choice = draw(st.integers(0, 9))
    if choice == 0:
        return draw(st.binary(max_size=256))
    if choice == 1:
        return encode(draw(json_values))
    if choice == 2:
        return draw(_nested)
    if choice in (3, 4, 5):
        return draw(_byte_mangled(encode(review)))
    if choice in (6, 7):
        return draw(_envelope_mangled(review))
    return encode(review)
