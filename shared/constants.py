"""Names and fixed values of the MXJob API, shared by the webhook and the controller.

Everything another module would otherwise spell as a string literal lives here, so that a typo
in a label key or an env name is a NameError instead of a silent mismatch between the pods the
controller builds and the env the webhook injects.
"""

from __future__ import annotations

from enum import StrEnum

GROUP = "kubeflow.org"
V1 = "v1"
V1BETA1 = "v1beta1"
API_VERSION_V1 = f"{GROUP}/{V1}"
API_VERSION_V1BETA1 = f"{GROUP}/{V1BETA1}"
KIND = "MXJob"
PLURAL = "mxjobs"
SINGULAR = "mxjob"
SHORT_NAME = "mxj"


class JobMode(StrEnum):
    """`spec.jobMode`: distributed MXNet training or TVM auto-tuning."""

    MXTRAIN = "MXTrain"
    MXTUNE = "MXTune"


class ReplicaType(StrEnum):
    """Keys of `spec.mxReplicaSpecs`; declaration order is the canonical order of MX_CONFIG."""

    SCHEDULER = "Scheduler"
    SERVER = "Server"
    WORKER = "Worker"
    TUNER_TRACKER = "TunerTracker"
    TUNER_SERVER = "TunerServer"
    TUNER = "Tuner"


MODE_REPLICA_TYPES: dict[JobMode, tuple[ReplicaType, ...]] = {
    JobMode.MXTRAIN: (ReplicaType.SCHEDULER, ReplicaType.SERVER, ReplicaType.WORKER),
    JobMode.MXTUNE: (ReplicaType.TUNER_TRACKER, ReplicaType.TUNER_SERVER, ReplicaType.TUNER),
}


class RestartPolicy(StrEnum):
    """Per-replica restart policy; `ExitCode` lets the controller decide from the exit code."""

    ALWAYS = "Always"
    ON_FAILURE = "OnFailure"
    NEVER = "Never"
    EXIT_CODE = "ExitCode"


class RestartScope(StrEnum):
    """What a retryable end of a replica restarts (`mxReplicaSpecs.<type>.restartScope`).

    `Job`: every pod of the job ends and all are created again as one new attempt; `Replica`:
    the one pod is recreated and joins the running ones. The default is what the real program
    survives (shared.defaults.DEFAULT_RESTART_SCOPES, docs/explanation/recovery.md).
    """

    JOB = "Job"
    REPLICA = "Replica"


class DisruptionPolicy(StrEnum):
    """`runPolicy.disruptionPolicy`: whether a restart caused by a disruption (a pod ended with
    the `DisruptionTarget` condition: drain, preemption, taint eviction) counts against
    `backoffLimit`. `Ignore` (default) does not count it, as a batch Job's podFailurePolicy
    rule `Ignore` for `DisruptionTarget`; `Count` does."""

    IGNORE = "Ignore"
    COUNT = "Count"


class CleanPodPolicy(StrEnum):
    """Which pods are deleted when the job finishes."""

    ALL = "All"
    RUNNING = "Running"
    NONE = "None"


class SuccessPolicy(StrEnum):
    """`spec.successPolicy`: empty means the Scheduler (or Tuner) decides success."""

    DEFAULT = ""
    ALL_WORKERS = "AllWorkers"


# The container whose exit code, port and env the operator owns.
CONTAINER_NAME = "mxnet"
PORT_NAME = "mxjob-port"
DEFAULT_TERMINATION_GRACE_SECONDS = 30
"""A pod's `terminationGracePeriodSeconds` when its spec sets none (the API server's default)."""
MAX_TOTAL_REPLICAS = 1000
"""Most replicas one MXJob may have, all types together. Defaulting writes every replica's
address into each template's `MX_CONFIG`, so a job's size grows with its replica count (about
240 bytes per replica: 240 KB at this limit, well under etcd's 1.5 MiB per object); an unbounded
count (`replicas: 2147483647`) would make the webhook and the controller build that env until
they run out of memory."""

# v1: the TVM tuner-server key lives in this annotation of a replica's pod template
# (v1beta1 spelled it as the replica's `label` field).
TUNER_SERVER_KEY_ANNOTATION = "tuner-server-key"

# Where conversion keeps what the target API version cannot express (see shared/conversion.py).
CONVERSION_DATA_ANNOTATION = "mxjob.kubeflow.org/conversion-data"
# How long a job's pod may be unable to start (image pull, missing ConfigMap or Secret) before
# the job fails, in seconds; 0 never. Overrides the controller's --pod-start-timeout for one job.
POD_START_TIMEOUT_ANNOTATION = "mxjob-operator.kubeflow.org/pod-start-timeout-seconds"

LABEL_OPERATOR_NAME = "training.kubeflow.org/operator-name"
OPERATOR_NAME = "mxjob-operator"
TRAINING_OPERATOR_NAME = "mxjob-controller"
"""The operator-name of kubeflow training-operator v1.8.1's MXJob controller (its
``controllerName``): the controller watches and adopts the pods and Services it left behind, so
that switching from it does not restart running jobs (docs/migrating.md)."""
WATCHED_OPERATOR_NAMES: tuple[str, ...] = (OPERATOR_NAME, TRAINING_OPERATOR_NAME)
LABEL_JOB_NAME = "training.kubeflow.org/job-name"
LABEL_REPLICA_TYPE = "training.kubeflow.org/replica-type"
LABEL_REPLICA_INDEX = "training.kubeflow.org/replica-index"
LABEL_JOB_ROLE = "training.kubeflow.org/job-role"
TRACKING_FINALIZER = "training.kubeflow.org/mxjob-tracking"
"""On every pod the controller creates, as ``batch.kubernetes.io/job-tracking`` on a Job's: the
API server keeps a deleted pod (terminating, with its final phase) until the controller has
written the status that counts how it ended and removes this entry (controller/job/tracking.py)."""

ROLE_MASTER = "master"
ROLE_WORKER = "worker"

# Env names the operator owns in the mxnet container. The per-pod replica index reaches the
# container through the Downward API (from the replica-index label) and `$(VAR)` expansion.
REPLICA_INDEX_ENV = "MXJOB_REPLICA_INDEX"
ENV_DMLC_ROLE = "DMLC_ROLE"
ENV_DMLC_PS_ROOT_URI = "DMLC_PS_ROOT_URI"
ENV_DMLC_PS_ROOT_PORT = "DMLC_PS_ROOT_PORT"
ENV_DMLC_NUM_SERVER = "DMLC_NUM_SERVER"
ENV_DMLC_NUM_WORKER = "DMLC_NUM_WORKER"
ENV_DMLC_USE_KUBERNETES = "DMLC_USE_KUBERNETES"
ENV_DMLC_WORKER_ID = "DMLC_WORKER_ID"
ENV_MX_CONFIG = "MX_CONFIG"
# Where TVM's RPC clients look for the tracker when not told (MetaSchedule's RPCConfig,
# ``python -m tvm.exec.query_rpc_tracker``); MXTune replicas get them (shared/env.py).
ENV_TVM_TRACKER_HOST = "TVM_TRACKER_HOST"
ENV_TVM_TRACKER_PORT = "TVM_TRACKER_PORT"
ENV_TVM_TRACKER_KEY = "TVM_TRACKER_KEY"

OWNED_ENV_NAMES: frozenset[str] = frozenset(
    {
        ENV_DMLC_ROLE,
        ENV_DMLC_PS_ROOT_URI,
        ENV_DMLC_PS_ROOT_PORT,
        ENV_DMLC_NUM_SERVER,
        ENV_DMLC_NUM_WORKER,
        ENV_DMLC_USE_KUBERNETES,
        ENV_DMLC_WORKER_ID,
        ENV_MX_CONFIG,
        ENV_TVM_TRACKER_HOST,
        ENV_TVM_TRACKER_PORT,
        ENV_TVM_TRACKER_KEY,
        REPLICA_INDEX_ENV,
    }
)

# Fields of `spec.runPolicy` (v1). The standalone mxnet-operator v1 shape wrote them directly
# under `spec`; defaulting moves them.
RUN_POLICY_FIELDS: tuple[str, ...] = (
    "cleanPodPolicy",
    "ttlSecondsAfterFinished",
    "activeDeadlineSeconds",
    "backoffLimit",
    "suspend",
    "schedulingPolicy",
    "managedBy",
)

# The run-policy fields v1beta1 has, directly under `spec`.
V1BETA1_RUN_POLICY_FIELDS: tuple[str, ...] = (
    "cleanPodPolicy",
    "ttlSecondsAfterFinished",
    "activeDeadlineSeconds",
    "backoffLimit",
)

# Kubernetes limit for a DNS-1035 label (Service names) and for label values.
DNS1035_LABEL_MAX_LENGTH = 63
