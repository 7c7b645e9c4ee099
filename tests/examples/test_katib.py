"""examples/katib/mxjob-cpu-train.yaml: a Katib v0.19 Experiment whose trials are MXJobs.

Its trial template, with the trial parameters substituted the way Katib does it (text
substitution, then the trial's name and namespace), must be an MXJob the webhook admits, whose
worker 0 (the pod ``primaryPodLabels`` picks) prints the metrics, and whose command survives
Katib's metrics collector wrapping it in ``sh -c``.
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

import pytest

from controller.job.desired import build_pod, desired_slots
from controller.job.view import read_job
from shared.constants import LABEL_JOB_ROLE
from shared.defaults import apply_defaults
from shared.validation import format_violations, validate
from tests.examples.example_files import (
    CPU_TRAIN_JOB,
    KATIB_EXPERIMENT,
    load_script,
    load_yaml,
)

SUCCEEDED = 'status.conditions.#(type=="Succeeded")#|#(status=="True")#'
FAILED = 'status.conditions.#(type=="Failed")#|#(status=="True")#'
PLACEHOLDER = re.compile(r"\$\{trialParameters\.([^}]+)\}")
# Katib names a trial <experiment>-<8 random lower-case letters and digits>, and its job alike.
TRIAL = "mxjob-cpu-train-x7k2m9qp"


@pytest.fixture(scope="module")
def experiment() -> dict[str, Any]:
    loaded: dict[str, Any] = load_yaml(KATIB_EXPERIMENT)
    return loaded


def feasible_corners(experiment: dict[str, Any]) -> list[dict[str, str]]:
    """Assignments of every parameter to its min, then to its max (as Katib's strings)."""
    parameters = experiment["spec"]["parameters"]
    return [{p["name"]: p["feasibleSpace"][end] for p in parameters} for end in ("min", "max")]


def trial_job(experiment: dict[str, Any], assignment: dict[str, str]) -> dict[str, Any]:
    """The MXJob Katib creates for a trial (manifest/generator.go GetRunSpecWithHyperParameters)."""
    template = experiment["spec"]["trialTemplate"]
    values = {p["name"]: assignment[p["reference"]] for p in template["trialParameters"]}
    text = PLACEHOLDER.sub(lambda m: values[m.group(1)], json.dumps(template["trialSpec"]))
    job: dict[str, Any] = json.loads(text)
    job.setdefault("metadata", {}).update(
        {"name": TRIAL, "namespace": "tuning", "uid": "0f0e2d1c-aaaa-bbbb-cccc-000000000001"}
    )
    return job


def test_the_template_sets_what_katib_has_no_mxjob_default_for(experiment: dict[str, Any]) -> None:
    template = experiment["spec"]["trialTemplate"]
    assert template["primaryContainerName"] == "mxnet"
    assert template["successCondition"] == SUCCEEDED
    assert template["failureCondition"] == FAILED
    assert template["primaryPodLabels"] == {
        "training.kubeflow.org/replica-type": "worker",
        "training.kubeflow.org/replica-index": "0",
    }
    spec = template["trialSpec"]
    assert (spec["apiVersion"], spec["kind"]) == ("kubeflow.org/v1", "MXJob")
    assert "name" not in spec.get("metadata", {}) and "namespace" not in spec.get("metadata", {})


def test_the_search_is_the_one_asked_for(experiment: dict[str, Any]) -> None:
    spec = experiment["spec"]
    assert spec["algorithm"]["algorithmName"] == "random"
    assert (spec["maxTrialCount"], spec["parallelTrialCount"], spec["maxFailedTrialCount"]) == (
        3,
        2,
        1,
    )
    objective = spec["objective"]
    assert (objective["type"], objective["objectiveMetricName"]) == ("minimize", "loss")
    # Katib v0.19 reads each metric apart and can fail a trial whose report lands between its
    # reads: the objective alone (docs/how-to/katib.md, "Only the objective metric").
    assert "additionalMetricNames" not in objective


def test_every_trial_parameter_is_used_and_refers_to_a_parameter(
    experiment: dict[str, Any],
) -> None:
    template = experiment["spec"]["trialTemplate"]
    used = set(PLACEHOLDER.findall(json.dumps(template["trialSpec"])))
    names = {p["name"] for p in template["trialParameters"]}
    assert used == names
    assert {p["reference"] for p in template["trialParameters"]} == {
        p["name"] for p in experiment["spec"]["parameters"]
    }


@pytest.mark.parametrize("corner", ["min", "max"])
def test_a_trial_job_is_admitted(experiment: dict[str, Any], corner: str) -> None:
    assignment = feasible_corners(experiment)[0 if corner == "min" else 1]
    job = trial_job(experiment, assignment)
    assert not PLACEHOLDER.search(json.dumps(job))
    for candidate in (job, apply_defaults(job)):  # as sent, and after the mutating webhook
        violations = validate(candidate)
        assert not violations, format_violations(violations, name=TRIAL)


def test_the_primary_pod_labels_pick_worker_0_alone(experiment: dict[str, Any]) -> None:
    job = read_job(apply_defaults(trial_job(experiment, feasible_corners(experiment)[0])))
    pods = [build_pod(job, slot) for slot in desired_slots(job)]
    names = [p["metadata"]["name"] for p in pods]
    assert names == [f"{TRIAL}-scheduler-0", f"{TRIAL}-server-0", f"{TRIAL}-worker-0"]
    wanted = experiment["spec"]["trialTemplate"]["primaryPodLabels"].items()
    primary = [p["metadata"]["name"] for p in pods if wanted <= p["metadata"]["labels"].items()]
    assert primary == [f"{TRIAL}-worker-0"]
    # Katib's pre-0.18 default for Kubeflow jobs (job-role master) picks the Scheduler instead,
    # which prints no metrics.
    roles = {p["metadata"]["name"]: p["metadata"]["labels"].get(LABEL_JOB_ROLE) for p in pods}
    assert [name for name, role in roles.items() if role == "master"] == [f"{TRIAL}-scheduler-0"]
    for pod in pods:  # Katib's pod webhook refuses a trial pod without the primary container
        assert "mxnet" in [c["name"] for c in pod["spec"]["containers"]]
        owner = pod["metadata"]["ownerReferences"][0]  # the webhook walks it up to the Trial
        assert (owner["apiVersion"], owner["kind"], owner["name"]) == (
            "kubeflow.org/v1",
            "MXJob",
            TRIAL,
        )


def test_worker_0_runs_the_train_example_with_the_trial_values(experiment: dict[str, Any]) -> None:
    assignment = {"lr": "0.0371", "batch-size": "48"}
    job = trial_job(experiment, assignment)
    worker = job["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    example = load_yaml(CPU_TRAIN_JOB)["spec"]["mxReplicaSpecs"]["Worker"]
    example_container = example["template"]["spec"]["containers"][0]
    assert worker["image"] == example_container["image"]
    assert worker["command"] == example_container["command"] == ["python", "-m", "train_dist"]
    argv = worker["command"] + worker.get("args", [])
    # Katib joins the argv with spaces inside `sh -c "..."`: no argument may need quoting.
    assert all(shlex.quote(arg) == arg for arg in argv), argv
    args = load_script("train_dist").parse_args(worker["args"])
    assert (args.lr, args.batch_size, args.epochs) == (0.0371, 48, 3)
