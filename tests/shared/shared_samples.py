"""MXJob presets and hypothesis strategies for the tests of `shared/`.

The presets are named shapes over the tests' MXJob factory (tests/helpers/mxjobs.py), in the
namespace ``default``; they return fresh plain dicts (the shape the API server sends), so a test
may change one without affecting another.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import yaml
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from shared.constants import CONVERSION_DATA_ANNOTATION, TUNER_SERVER_KEY_ANNOTATION
from tests.helpers.mxjobs import IMAGE, container, mxjob, replica

Job = dict[str, Any]

# The v1beta1 listing of seed 000, verbatim.
SEED_V1BETA1_LISTING = """\
apiVersion: kubeflow.org/v1beta1
kind: MXJob
metadata:
  creationTimestamp: 2019-03-19T09:24:27Z
  generation: 1
  name: mxnet-job
  namespace: default
  resourceVersion: "3681685"
  selfLink: /apis/kubeflow.org/v1beta1/namespaces/default/mxjobs/mxnet-job
  uid: cb11013b-4a28-11e9-b7f4-704d7bb59f71
spec:
  cleanPodPolicy: All
  jobMode: MXTrain
  mxReplicaSpecs:
    Scheduler:
      replicas: 1
      restartPolicy: Never
      template:
        metadata:
          creationTimestamp: null
        spec:
          containers:
          - image: mxjob/mxnet:gpu
            name: mxnet
            ports:
            - containerPort: 9091
              name: mxjob-port
            resources: {}
    Server:
      replicas: 1
      restartPolicy: Never
      template:
        metadata:
          creationTimestamp: null
        spec:
          containers:
          - image: mxjob/mxnet:gpu
            name: mxnet
            ports:
            - containerPort: 9091
              name: mxjob-port
            resources: {}
    Worker:
      replicas: 1
      restartPolicy: Never
      template:
        metadata:
          creationTimestamp: null
        spec:
          containers:
          - args:
            - /incubator-mxnet/example/image-classification/train_mnist.py
            - --num-epochs
            - "10"
            - --num-layers
            - "2"
            - --kv-store
            - dist_device_sync
            - --gpus
            - "0"
            command:
            - python
            image: mxjob/mxnet:gpu
            name: mxnet
            ports:
            - containerPort: 9091
              name: mxjob-port
            resources:
              limits:
                nvidia.com/gpu: "1"
status:
  completionTime: 2019-03-19T09:25:11Z
  conditions:
  - lastTransitionTime: 2019-03-19T09:24:27Z
    lastUpdateTime: 2019-03-19T09:24:27Z
    message: MXJob mxnet-job is created.
    reason: MXJobCreated
    status: "True"
    type: Created
  - lastTransitionTime: 2019-03-19T09:24:27Z
    lastUpdateTime: 2019-03-19T09:24:29Z
    message: MXJob mxnet-job is running.
    reason: MXJobRunning
    status: "False"
    type: Running
  - lastTransitionTime: 2019-03-19T09:24:27Z
    lastUpdateTime: 2019-03-19T09:25:11Z
    message: MXJob mxnet-job is successfully completed.
    reason: MXJobSucceeded
    status: "True"
    type: Succeeded
  mxReplicaStatuses:
    Scheduler: {}
    Server: {}
    Worker: {}
  startTime: 2019-03-19T09:24:29Z
"""


def _json_safe(value: Any) -> Any:
    """YAML timestamps become strings, as they are on the wire."""
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    if hasattr(value, "isoformat"):
        return value.isoformat().replace("+00:00", "Z")
    return value


def seed_listing() -> Job:
    """The seed's v1beta1 object as `kubectl get -o yaml` printed it (with status)."""
    loaded: Job = _json_safe(yaml.safe_load(SEED_V1BETA1_LISTING))
    return loaded


def seed_applied() -> Job:
    """What `kubectl apply` of the seed sends: apiVersion, kind, name and spec unchanged."""
    listing = seed_listing()
    return {
        "apiVersion": listing["apiVersion"],
        "kind": listing["kind"],
        "metadata": {"name": listing["metadata"]["name"], "namespace": "default"},
        "spec": listing["spec"],
    }


def job(name: str, mode: str, replicas: dict[str, Job], **spec: Any) -> Job:
    """A job of ``replicas`` exactly as given (the tests of ``shared/`` spell each one)."""
    return mxjob(name, namespace="default", mode=mode, replicas=replicas, spec=spec)


def train_job(name: str = "mnist", *, servers: int = 1, workers: int = 2, **spec: Any) -> Job:
    """A distributed MXTrain job: 1 scheduler, `servers` servers, `workers` workers."""
    counts = {"Scheduler": 1, "Server": servers, "Worker": workers}
    return mxjob(name, namespace="default", replicas=counts, spec=spec)


def tune_job(
    name: str = "autotvm",
    *,
    tuner_servers: int = 2,
    key: str | None = "rpc-key",
    image: str = IMAGE,
) -> Job:
    """An MXTune job whose TunerServer carries the tuner-server key annotation."""
    annotations = {TUNER_SERVER_KEY_ANNOTATION: key} if key is not None else None
    server = replica(tuner_servers, containers=[container(image=image)], annotations=annotations)
    replicas: dict[str, int | Job] = {"TunerTracker": 1, "TunerServer": server, "Tuner": 1}
    return mxjob(name, namespace="default", mode="MXTune", replicas=replicas, image=image)


def single_node_job(name: str = "solo", *, replicas: int = 1) -> Job:
    return mxjob(name, namespace="default", replicas={"Worker": replicas})


def mxnet_of(found: Job, replica_type: str) -> Job:
    """The mxnet container of a replica's template (first container named mxnet)."""
    containers = found["spec"]["mxReplicaSpecs"][replica_type]["template"]["spec"]["containers"]
    result: Job = next(c for c in containers if c.get("name") == "mxnet")
    return result


def env_names(entries: list[Job]) -> list[str]:
    return [e["name"] for e in entries]


def property_settings(max_examples: int = 100) -> settings:
    """Settings for the property tests: no per-example deadline, so a loaded CI machine
    cannot turn a slow example into a failure."""
    return settings(
        max_examples=max_examples, deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )


# --- hypothesis strategies ------------------------------------------------------------------

INTERESTING_KEYS = (
    "apiVersion",
    "kind",
    "metadata",
    "name",
    "generateName",
    "annotations",
    "labels",
    "spec",
    "jobMode",
    "mxReplicaSpecs",
    "Scheduler",
    "Server",
    "Worker",
    "worker",
    "TunerTracker",
    "TunerServer",
    "Tuner",
    "replicas",
    "restartPolicy",
    "template",
    "containers",
    "initContainers",
    "image",
    "env",
    "value",
    "valueFrom",
    "ports",
    "containerPort",
    "runPolicy",
    "cleanPodPolicy",
    "backoffLimit",
    "activeDeadlineSeconds",
    "ttlSecondsAfterFinished",
    "suspend",
    "schedulingPolicy",
    "managedBy",
    "successPolicy",
    "label",
    "status",
    "replicaStatuses",
    "mxReplicaStatuses",
    TUNER_SERVER_KEY_ANNOTATION,
    CONVERSION_DATA_ANNOTATION,
)

keys = st.sampled_from(INTERESTING_KEYS) | st.text(max_size=8)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**40), max_value=2**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(["", "mxnet", "MXTrain", "MXTune", "Worker", "All", "$(X)", "$$"])
    | st.text(max_size=10)
)


def json_values(max_leaves: int = 30) -> st.SearchStrategy[Any]:
    return st.recursive(
        scalars,
        lambda children: (
            st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=5)
        ),
        max_leaves=max_leaves,
    )


def json_objects(max_leaves: int = 30) -> st.SearchStrategy[Job]:
    return st.dictionaries(keys, json_values(max_leaves), max_size=6)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            found += _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += _paths(child, (*prefix, index))
    return found


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    result = copy.deepcopy(value)
    node = result
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = new
    return result


@st.composite
def valid_jobs(draw: Callable[[st.SearchStrategy[Any]], Any]) -> Job:
    """Valid MXJobs of every form, with the optional fields users write."""
    name = draw(st.from_regex(r"[a-z][a-z0-9-]{0,20}[a-z0-9]", fullmatch=True))
    form = draw(st.sampled_from(["train", "single", "tune"]))
    port = draw(st.none() | st.integers(min_value=1, max_value=65535))

    def mxnet() -> Job:
        extra: Job = {}
        if port is not None:
            extra["ports"] = [{"name": "mxjob-port", "containerPort": port}]
        if draw(st.booleans()):
            extra["env"] = [{"name": "USER_VAR", "value": "$(DMLC_ROLE)"}]
        unnamed = draw(st.booleans())
        return container(None if unnamed else "mxnet", **extra)

    def one(
        count: int | None,
        annotations: dict[str, str] | None = None,
        *,
        scopes: tuple[str, ...] = ("Job", "Replica"),
    ) -> Job:
        main = mxnet()
        containers = [main]
        if draw(st.booleans()):
            main["name"] = "mxnet"
            containers.append(container("sidecar", image="busybox"))
        policy = draw(st.none() | st.sampled_from(["Always", "OnFailure", "Never", "ExitCode"]))
        scope = draw(st.none() | st.sampled_from(scopes))
        return replica(
            count,
            containers=containers,
            restart_policy=policy,
            restart_scope=scope,
            annotations=annotations,
        )

    counts = st.none() | st.integers(min_value=0, max_value=12)
    if form == "train":
        replicas = {
            # ps-lite never readmits a scheduler: Replica is refused on it.
            "Scheduler": one(draw(st.sampled_from([None, 1])), scopes=("Job",)),
            "Server": one(draw(counts)),
            "Worker": one(draw(counts)),
        }
        mode = "MXTrain"
    elif form == "single":
        replicas = {"Worker": one(draw(st.sampled_from([None, 1])))}
        mode = "MXTrain"
    else:
        key = draw(st.none() | st.text(min_size=1, max_size=8))
        replicas = {
            "TunerTracker": one(draw(st.sampled_from([None, 1]))),
            "TunerServer": one(
                draw(st.none() | st.integers(min_value=1, max_value=5)),
                {TUNER_SERVER_KEY_ANNOTATION: key} if key is not None else None,
            ),
            "Tuner": one(draw(st.sampled_from([None, 1]))),
        }
        mode = "MXTune"
    if draw(st.booleans()):
        replicas = {k.lower() if draw(st.booleans()) else k: v for k, v in replicas.items()}
    spec: Job = {}
    policy_values = {
        "cleanPodPolicy": st.sampled_from(["All", "Running", "None"]),
        "backoffLimit": st.integers(min_value=0, max_value=10),
        "activeDeadlineSeconds": st.integers(min_value=0, max_value=10**6),
        "ttlSecondsAfterFinished": st.integers(min_value=0, max_value=10**6),
        "suspend": st.booleans(),
        "managedBy": st.just("kueue.x-k8s.io/multikueue"),
        "schedulingPolicy": st.just({"minAvailable": 1}),
    }
    run_policy: Job = {}
    for field, values in policy_values.items():
        where = draw(st.sampled_from(["absent", "runPolicy", "spec"]))
        if where == "runPolicy":
            run_policy[field] = draw(values)
        elif where == "spec":
            spec[field] = draw(values)
    if draw(st.booleans()):  # v1's runPolicy only: the standalone shape never had it
        run_policy["disruptionPolicy"] = draw(st.sampled_from(["Ignore", "Count"]))
    if run_policy or draw(st.booleans()):
        spec["runPolicy"] = run_policy
    if mode == "MXTrain" and draw(st.booleans()):
        spec["successPolicy"] = draw(st.sampled_from(["", "AllWorkers"]))
    return job(name, mode, replicas, **spec)


@st.composite
def mutated_jobs(draw: Callable[[st.SearchStrategy[Any]], Any]) -> Job:
    """A valid job with one field anywhere replaced by arbitrary JSON."""
    found = draw(valid_jobs())
    paths = [p for p in _paths(found) if p]
    path = draw(st.sampled_from(paths))
    mutated: Job = _replace(found, path, draw(json_values(10)))
    return mutated


def _maybe(draw: Callable[[st.SearchStrategy[Any]], Any], strategy: st.SearchStrategy[Any]) -> Any:
    """A drawn value, or the marker ABSENT."""
    return draw(st.just(ABSENT) | strategy)


ABSENT = object()


def _put(target: Job, key: str, value: Any) -> None:
    if value is not ABSENT:
        target[key] = value


@st.composite
def _annotations(draw: Callable[[st.SearchStrategy[Any]], Any], key: str) -> Any:
    """An annotations value: an object with or without `key` (string or not), or junk."""
    found: Job = draw(st.dictionaries(st.sampled_from(["a", "b/c"]), st.text(max_size=4)))
    _put(found, key, _maybe(draw, st.text(max_size=6) | json_values(4)))
    return draw(st.just(found) | json_values(3))


@st.composite
def _metadata_with(draw: Callable[[st.SearchStrategy[Any]], Any], key: str) -> Any:
    metadata: Job = draw(st.dictionaries(st.sampled_from(["name", "labels"]), json_values(3)))
    _put(metadata, "annotations", _maybe(draw, _annotations(key)))
    return draw(st.just(metadata) | json_values(3))


@st.composite
def _replica_spec(draw: Callable[[st.SearchStrategy[Any]], Any]) -> Any:
    rspec: Job = draw(st.dictionaries(st.sampled_from(["replicas", "restartPolicy"]), scalars))
    _put(rspec, "label", _maybe(draw, st.text(max_size=6) | json_values(3)))
    template: Job = draw(st.dictionaries(st.just("spec"), json_values(4)))
    _put(template, "metadata", _maybe(draw, _metadata_with(TUNER_SERVER_KEY_ANNOTATION)))
    _put(rspec, "template", _maybe(draw, st.just(template) | json_values(3)))
    return draw(st.just(rspec) | json_values(3))


@st.composite
def conversion_objects(draw: Callable[[st.SearchStrategy[Any]], Any], api_version: str) -> Job:
    """MXJobs of `api_version` whose every part the two versions spell differently is drawn
    from the awkward cases: absent, empty, not an object, clashing with the other version."""
    policy_fields = st.sampled_from(
        [
            "cleanPodPolicy",
            "ttlSecondsAfterFinished",
            "activeDeadlineSeconds",
            "backoffLimit",
            "suspend",
            "schedulingPolicy",
            "managedBy",
            "other",
        ]
    )
    spec: Job = draw(st.dictionaries(policy_fields | st.just("successPolicy"), scalars))
    spec["jobMode"] = draw(st.sampled_from(["MXTrain", "MXTune"]))
    _put(spec, "runPolicy", _maybe(draw, st.dictionaries(policy_fields, scalars) | scalars))
    replicas = draw(
        st.dictionaries(st.sampled_from(["Scheduler", "Worker", "TunerServer"]), _replica_spec())
    )
    spec["mxReplicaSpecs"] = draw(st.just(replicas) | json_values(3))
    found: Job = {"apiVersion": api_version, "kind": "MXJob"}
    _put(found, "metadata", _maybe(draw, _metadata_with(CONVERSION_DATA_ANNOTATION)))
    found["spec"] = draw(st.just(spec) | json_values(3))
    status: Job = draw(
        st.dictionaries(
            st.sampled_from(["replicaStatuses", "mxReplicaStatuses", "conditions", "state"]),
            json_values(4),
        )
    )
    _put(found, "status", _maybe(draw, st.just(status) | json_values(3)))
    return found
