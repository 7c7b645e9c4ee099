"""docs/reference/job-contract.md: what a replica's pod gets and what the operator reads back.

A training script depends on the env the webhook injects, its peers' names and the labels the
controller puts on its pods; an operator of the cluster depends on the exit-code rules. Those
facts live in ``shared/`` (constants, defaulting, env, naming, exit codes) and in the
controller's builders (``controller/job/desired.py``); the page runs them on two example jobs
(docgen/samples.py) and keeps only the words that explain each name.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import yaml

from controller.job import observed
from controller.job.desired import pod_restart_policy
from docgen import contract_exits, samples
from docgen.markdown import block, code, codes, header, page, table
from docgen.sources import constant_docs, first_sentence
from shared import constants as c
from shared.env import resolve_env
from shared.naming import job_role
from shared.queueing import QUEUE_NAME_LABEL

MODULE = "hack/docgen/contract_page.py"

ENV_TEXT = {  # in the order of the page
    c.REPLICA_INDEX_ENV: "The pod's replica index, read from its `replica-index` label through "
    "the Downward API. The entries below refer to it as `$(MXJOB_REPLICA_INDEX)`, so one "
    "template serves every index.",
    c.ENV_DMLC_ROLE: "`scheduler`, `server` or `worker`: the replica type in lower case.",
    c.ENV_DMLC_PS_ROOT_URI: 'The Scheduler\'s name, `<job>-scheduler-0`; `""` in a '
    "single-node job (no Scheduler).",
    c.ENV_DMLC_PS_ROOT_PORT: "The Scheduler's `mxjob-port`; `0` in a single-node job.",
    c.ENV_DMLC_NUM_SERVER: "The number of Servers.",
    c.ENV_DMLC_NUM_WORKER: "The number of Workers.",
    c.ENV_DMLC_USE_KUBERNETES: "`1`.",
    c.ENV_DMLC_WORKER_ID: "The worker's index.",
    c.ENV_TVM_TRACKER_HOST: "The TunerTracker's name, `<job>-tunertracker-0`: where TVM's "
    "`RPCConfig()` and `python -m tvm.exec.query_rpc_tracker` look for the tracker.",
    c.ENV_TVM_TRACKER_PORT: "The TunerTracker's `mxjob-port`.",
    c.ENV_TVM_TRACKER_KEY: 'The TunerServer template\'s `tuner-server-key` annotation (`""` '
    "without one): the key the servers register under and the Tuner asks for.",
    c.ENV_MX_CONFIG: "JSON: `cluster` (each replica type → its replicas' `url` and `port`), "
    '`labels` (each replica type of the job → its tuner-server key or `""`) and `task` '
    "(this pod's `type` and `index`).",
}

LABEL_TEXT = {
    c.LABEL_OPERATOR_NAME: "The operator that made the object. The controller also adopts the "
    f"pods and Services training-operator v1.8.1 labelled `{c.TRAINING_OPERATOR_NAME}`.",
    c.LABEL_JOB_NAME: "The MXJob's name.",
    c.LABEL_REPLICA_TYPE: "The replica type in lower case.",
    c.LABEL_REPLICA_INDEX: "The replica's index (`MXJOB_REPLICA_INDEX` is read from it).",
    c.LABEL_JOB_ROLE: "`master` on the replica whose exit decides success, `worker` on the others.",
}


def _yaml(value: object) -> str:
    return block(yaml.safe_dump(value, sort_keys=False, width=100), language="yaml")


def names_section(train: samples.Made, tune: samples.Made) -> str:
    rows = []
    for made in (train, tune):
        for replica in made.view.replicas:
            slots = [s for s in made.pods if s.replica_type is replica.type]
            role = made.pods[slots[0]]["metadata"]["labels"][c.LABEL_JOB_ROLE]
            rows.append([f"{made.view.name} ({made.view.mode})", replica.type.value,
                         codes(s.name for s in slots), code(role)])  # fmt: skip
    single = job_role(c.JobMode.MXTRAIN.value, c.ReplicaType.WORKER.value, True)
    slot = train.slot(c.ReplicaType.WORKER, 1)
    pod_meta = {k: v for k, v in train.pods[slot]["metadata"].items() if k != "ownerReferences"}
    service = {k: v for k, v in train.services[slot].items() if k != "metadata"}
    return page(
        "## Pods and Services",
        "Each replica index gets a pod and a headless Service of the same name, "
        "`<job>-<type>-<index>` with the type in lower case, so the names in the env resolve "
        "to the pod. A Service name is a DNS-1035 label of at most "
        f"{c.DNS1035_LABEL_MAX_LENGTH} characters, so a job's name may be only as long as "
        "leaves room for its longest `-<type>-<index>`. For the two example jobs:",
        table(["Job", "Replica type", "Pods and Services", "job-role"], rows),
        f"In a single-node MXTrain job (one Worker, nothing else) the Worker is {code(single)}.",
        f"The metadata the controller gives the pod `{slot.name}`, besides the template's own "
        "labels and annotations and the MXJob as its owner:",
        _yaml({"metadata": pod_meta}),
        "Its Service: it publishes the pod's address before the pod is ready, because MXNet's "
        "scheduler and servers must find each other while they start.",
        _yaml(service),
        "The pod's `restartPolicy` follows the replica's:",
        table(
            ["Replica restartPolicy", "Pod restartPolicy"],
            [[code(p.value), code(pod_restart_policy(p))] for p in c.RestartPolicy],
        ),
    )


def labels_section(train: samples.Made) -> str:
    built = train.pods[train.slot(c.ReplicaType.SCHEDULER, 0)]["metadata"]["labels"]
    if set(built) != set(LABEL_TEXT):
        raise ValueError(f"describe exactly the labels the controller sets: {sorted(built)}")
    rows = [[code(k), code(v), LABEL_TEXT[k]] for k, v in built.items()]
    return page(
        "## Labels",
        "On every pod and Service of a replica (the example: `mnist-scheduler-0`):",
        table(["Label", "Example", "Meaning"], rows),
    )


def annotations_section() -> str:
    pod_docs = constant_docs(observed)
    shared_docs = constant_docs(c)
    you = "you"
    rows = [
        [code(c.TUNER_SERVER_KEY_ANNOTATION), "a TunerServer's pod template", you,
         "The TVM key the TunerServers register under (`TVM_TRACKER_KEY`, `labels` of "
         "`MX_CONFIG`)."],
        [code(c.POD_START_TIMEOUT_ANNOTATION), "the MXJob", you,
         "Seconds a pod of the job may be unable to start (an image that does not pull, a "
         "missing Secret) before the job fails; `0` never. Overrides the controller's "
         "`--pod-start-timeout`."],
        [code(QUEUE_NAME_LABEL) + " (label)", "the MXJob", you,
         "Queue the job with Kueue, in this LocalQueue."],
        [code(c.CONVERSION_DATA_ANNOTATION), "the MXJob", "the webhook",
         "What one API version cannot express, kept for the conversion back."],
        [code(observed.ATTEMPT_ANNOTATION), "pods", "the controller",
         first_sentence(pod_docs["ATTEMPT_ANNOTATION"])],
        [code(c.TRACKING_FINALIZER) + " (finalizer)", "pods", "the controller",
         shared_docs["TRACKING_FINALIZER"]],
    ]  # fmt: skip
    return page(
        "## Annotations and finalizers",
        table(["Name", "On", "Set by", "Meaning"], rows),
    )


def _env(pod: Mapping[str, Any]) -> dict[str, str]:
    return resolve_env(samples.container_env(pod), pod_metadata=pod["metadata"])


def env_section(train: samples.Made, tune: samples.Made) -> str:
    given: dict[str, list[str]] = {}
    for made in (train, tune):
        for slot, pod in made.pods.items():
            for name in _env(pod):
                types = given.setdefault(name, [])
                if slot.replica_type.value not in types:
                    types.append(slot.replica_type.value)
    if set(given) != set(ENV_TEXT) or set(ENV_TEXT) != c.OWNED_ENV_NAMES:
        raise ValueError(f"describe exactly the env the webhook injects: {sorted(given)}")
    rows = [[code(name), text, ", ".join(given[name])] for name, text in ENV_TEXT.items()]
    worker = _env(train.pods[train.slot(c.ReplicaType.WORKER, 1)])
    server = _env(tune.pods[tune.slot(c.ReplicaType.TUNER_SERVER, 0)])
    return page(
        "## The env contract",
        f"The mutating webhook injects this env first into the `{c.CONTAINER_NAME}` container "
        "of every replica template (`kubectl get mxjob -o yaml` shows it); your own entries "
        "may refer to it as `$(NAME)`. The names belong to the operator: a job that sets one "
        "is refused.",
        table(["Name", "Value", "Replica types"], rows),
        "What the process of `mnist-worker-1` sees:",
        block("\n".join(f"{k}={v}" for k, v in worker.items())),
        "Its `MX_CONFIG`, indented:",
        block(json.dumps(json.loads(worker[c.ENV_MX_CONFIG]), indent=2), language="json"),
        "What the process of `tune-tunerserver-0` sees:",
        block("\n".join(f"{k}={v}" for k, v in server.items())),
    )


def render() -> str:
    train = samples.made(samples.train_job())
    tune = samples.made(samples.tune_job())
    return page(
        header(MODULE),
        "# The job contract",
        "What the operator gives the pods of an MXJob, and what it reads back from them. The "
        "examples are what the operator's own code makes of two jobs: `mnist` (MXTrain: 1 "
        "Scheduler, 2 Servers, 2 Workers) and `tune` (MXTune: 1 TunerTracker, 2 TunerServers "
        "with the key `cpu-local`, 1 Tuner). The fields themselves are in the "
        "[API reference](api.md).",
        env_section(train, tune),
        names_section(train, tune),
        labels_section(train),
        annotations_section(),
        contract_exits.render(),
    )
