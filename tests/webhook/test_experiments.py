"""Katib Experiments with MXJob trials judged at creation (webhook/experiments.py)."""

from __future__ import annotations

import copy
import json
from typing import Any

from flask.testing import FlaskClient

from tests.helpers.mxjobs import mxjob
from tests.webhook.reviews_samples import admission_review
from webhook.app import EXPERIMENT_PATH, create_app
from webhook.experiments import problems, trial_job, validate_experiment

Obj = dict[str, Any]


def experiment(**template: Any) -> Obj:
    """An Experiment tuning ``lr`` and ``epochs`` over a distributed MXJob trial."""
    command = ["python", "train.py", "--lr", "${trialParameters.learningRate}",
               "--epochs", "${trialParameters.epochs}"]  # fmt: skip
    # A trial template names no job: Katib names each trial.
    counts = {"Scheduler": 1, "Server": 1, "Worker": 1}
    trial_spec = mxjob(None, replicas=counts, image="mxjob/examples:1", command=command)
    return {
        "apiVersion": "kubeflow.org/v1beta1",
        "kind": "Experiment",
        "metadata": {"name": "tune", "namespace": "research"},
        "spec": {
            "parameters": [
                {"name": "lr", "parameterType": "double",
                 "feasibleSpace": {"min": "0.01", "max": "0.2"}},
                {"name": "epochs", "parameterType": "categorical",
                 "feasibleSpace": {"list": ["3", "5"]}},
            ],
            "trialTemplate": {
                "primaryContainerName": "mxnet",
                "trialParameters": [{"name": "learningRate", "reference": "lr"},
                                    {"name": "epochs", "reference": "epochs"}],
                "trialSpec": trial_spec,
                **template,
            },
        },
    }  # fmt: skip


def decision(obj: Obj | None, **kwargs: Any) -> Any:
    return validate_experiment(admission_review(obj, **kwargs)["request"])


def test_a_trial_gets_a_value_each_parameter_can_take_and_the_trials_name() -> None:
    job = trial_job(experiment())
    command = job["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    assert command["command"][-4:] == ["--lr", "0.01", "--epochs", "3"]
    assert job["metadata"]["name"] == "tune-abcdefgh"


def test_an_experiment_whose_trials_the_operator_runs_is_allowed() -> None:
    assert decision(experiment())["allowed"] is True


def test_a_trial_without_an_mxnet_container_refuses_the_experiment_naming_the_field() -> None:
    bad = experiment()
    replicas = bad["spec"]["trialTemplate"]["trialSpec"]["spec"]["mxReplicaSpecs"]
    replicas["Worker"]["template"]["spec"]["containers"][0]["name"] = "training"
    answer = decision(bad)
    assert answer["allowed"] is False and answer["status"]["code"] == 422
    message = answer["status"]["message"]
    assert message.startswith('Experiment "tune" is invalid: its trials would be refused: ')
    assert "spec.trialTemplate.trialSpec.spec.mxReplicaSpecs.Worker.template" in message


def test_a_primary_container_the_replicas_lack_is_refused_with_what_to_use() -> None:
    violations = problems(experiment(primaryContainerName="training"))
    assert [v.path for v in violations] == ["spec.trialTemplate.primaryContainerName"]
    assert "'training' is not in Scheduler, Server, Worker: use 'mxnet'" in violations[0].message


def test_a_placeholder_for_a_count_is_the_string_katib_would_write_and_is_refused() -> None:
    bad = experiment()
    bad["spec"]["trialTemplate"]["trialSpec"]["spec"]["mxReplicaSpecs"]["Worker"]["replicas"] = (
        "${trialParameters.epochs}"
    )
    paths = [v.path for v in problems(bad)]
    assert "spec.trialTemplate.trialSpec.spec.mxReplicaSpecs.Worker.replicas" in paths


def test_an_experiment_name_that_makes_trial_names_too_long_is_refused() -> None:
    long_name = experiment()
    long_name["metadata"]["name"] = "t" * 60
    assert [v.path for v in problems(long_name)] == ["metadata.name"]


def test_other_trial_kinds_deletes_and_configmap_templates_are_not_judged() -> None:
    job_trial = experiment()
    job_trial["spec"]["trialTemplate"]["trialSpec"] = {"apiVersion": "batch/v1", "kind": "Job"}
    assert decision(job_trial)["allowed"] is True
    assert decision(None, operation="DELETE", old=experiment())["allowed"] is True
    from_configmap = copy.deepcopy(experiment())
    del from_configmap["spec"]["trialTemplate"]["trialSpec"]
    from_configmap["spec"]["trialTemplate"]["configMap"] = {"configMapName": "templates"}
    assert decision(from_configmap)["allowed"] is True


def test_the_app_answers_experiment_reviews_on_their_path() -> None:
    client: FlaskClient = create_app().test_client()
    bad = experiment(primaryContainerName="training")
    http = client.post(
        EXPERIMENT_PATH, data=json.dumps(admission_review(bad)), content_type="application/json"
    )
    assert http.status_code == 200
    response = http.get_json()["response"]
    assert response["allowed"] is False
    assert "primaryContainerName" in response["status"]["message"]
