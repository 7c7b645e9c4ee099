"""shared/constants.py: the API's names, pinned so a rename is a deliberate, visible change."""

from __future__ import annotations

from shared import constants as c


def test_api_identity_is_kubeflow_mxjob() -> None:
    assert (c.GROUP, c.V1, c.V1BETA1, c.KIND, c.PLURAL) == (
        "kubeflow.org",
        "v1",
        "v1beta1",
        "MXJob",
        "mxjobs",
    )
    assert c.API_VERSION_V1 == "kubeflow.org/v1"
    assert c.API_VERSION_V1BETA1 == "kubeflow.org/v1beta1"


def test_job_modes_are_spelled_as_in_the_api() -> None:
    assert [m.value for m in c.JobMode] == ["MXTrain", "MXTune"]
    assert c.JobMode("MXTrain") is c.JobMode.MXTRAIN
    assert isinstance(c.JobMode.MXTRAIN, str)  # usable wherever the API wants a string


def test_replica_types_are_spelled_as_in_the_api_in_canonical_order() -> None:
    assert [t.value for t in c.ReplicaType] == [
        "Scheduler",
        "Server",
        "Worker",
        "TunerTracker",
        "TunerServer",
        "Tuner",
    ]


def test_each_mode_owns_three_replica_types_and_no_type_is_shared() -> None:
    train = c.MODE_REPLICA_TYPES[c.JobMode.MXTRAIN]
    tune = c.MODE_REPLICA_TYPES[c.JobMode.MXTUNE]
    assert train == (c.ReplicaType.SCHEDULER, c.ReplicaType.SERVER, c.ReplicaType.WORKER)
    assert tune == (c.ReplicaType.TUNER_TRACKER, c.ReplicaType.TUNER_SERVER, c.ReplicaType.TUNER)
    assert set(train) | set(tune) == set(c.ReplicaType)
    assert not set(train) & set(tune)


def test_policies_are_spelled_as_in_the_api() -> None:
    assert [p.value for p in c.RestartPolicy] == ["Always", "OnFailure", "Never", "ExitCode"]
    assert [p.value for p in c.CleanPodPolicy] == ["All", "Running", "None"]
    assert [p.value for p in c.SuccessPolicy] == ["", "AllWorkers"]


def test_the_container_and_port_names_match_the_design() -> None:
    assert c.CONTAINER_NAME == "mxnet"
    assert c.PORT_NAME == "mxjob-port"


def test_labels_use_the_training_operator_keys() -> None:
    assert c.LABEL_OPERATOR_NAME == "training.kubeflow.org/operator-name"
    assert c.OPERATOR_NAME == "mxjob-operator"
    assert c.LABEL_JOB_NAME == "training.kubeflow.org/job-name"
    assert c.LABEL_REPLICA_TYPE == "training.kubeflow.org/replica-type"
    assert c.LABEL_REPLICA_INDEX == "training.kubeflow.org/replica-index"
    assert c.LABEL_JOB_ROLE == "training.kubeflow.org/job-role"


def test_owned_env_names_are_the_dmlc_set_the_tvm_tracker_set_mx_config_and_the_index() -> None:
    assert c.REPLICA_INDEX_ENV == "MXJOB_REPLICA_INDEX"
    assert (
        frozenset(
            {
                "DMLC_ROLE",
                "DMLC_PS_ROOT_URI",
                "DMLC_PS_ROOT_PORT",
                "DMLC_NUM_SERVER",
                "DMLC_NUM_WORKER",
                "DMLC_USE_KUBERNETES",
                "DMLC_WORKER_ID",
                "TVM_TRACKER_HOST",
                "TVM_TRACKER_PORT",
                "TVM_TRACKER_KEY",
                "MX_CONFIG",
                "MXJOB_REPLICA_INDEX",
            }
        )
        == c.OWNED_ENV_NAMES
    )


def test_run_policy_fields_are_v1s_and_v1beta1_has_the_first_four() -> None:
    assert c.RUN_POLICY_FIELDS == (
        "cleanPodPolicy",
        "ttlSecondsAfterFinished",
        "activeDeadlineSeconds",
        "backoffLimit",
        "suspend",
        "schedulingPolicy",
        "managedBy",
    )
    assert c.RUN_POLICY_FIELDS[:4] == c.V1BETA1_RUN_POLICY_FIELDS


def test_annotations_are_the_tuner_key_and_the_conversion_stash() -> None:
    assert c.TUNER_SERVER_KEY_ANNOTATION == "tuner-server-key"
    assert c.CONVERSION_DATA_ANNOTATION == "mxjob.kubeflow.org/conversion-data"
