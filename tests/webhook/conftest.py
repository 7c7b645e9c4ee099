"""Fixtures of the webhook tests: the seed's jobs and an in-process app.

The jobs are fixtures (fresh copies per test) rather than module constants so a test that
mutates one cannot leak into another.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from webhook.app import create_app

# The job listed in seed 000 (`kubectl get -o yaml`), with its apiVersion, kind, name and spec
# unchanged; server-set metadata and status dropped.
_SEED_V1BETA1: dict[str, Any] = {
    "apiVersion": "kubeflow.org/v1beta1",
    "kind": "MXJob",
    "metadata": {"name": "mxnet-job", "namespace": "default"},
    "spec": {
        "cleanPodPolicy": "All",
        "jobMode": "MXTrain",
        "mxReplicaSpecs": {
            "Scheduler": {
                "replicas": 1,
                "restartPolicy": "Never",
                "template": {
                    "metadata": {"creationTimestamp": None},
                    "spec": {
                        "containers": [
                            {
                                "image": "mxjob/mxnet:gpu",
                                "name": "mxnet",
                                "ports": [{"containerPort": 9091, "name": "mxjob-port"}],
                                "resources": {},
                            }
                        ]
                    },
                },
            },
            "Server": {
                "replicas": 1,
                "restartPolicy": "Never",
                "template": {
                    "metadata": {"creationTimestamp": None},
                    "spec": {
                        "containers": [
                            {
                                "image": "mxjob/mxnet:gpu",
                                "name": "mxnet",
                                "ports": [{"containerPort": 9091, "name": "mxjob-port"}],
                                "resources": {},
                            }
                        ]
                    },
                },
            },
            "Worker": {
                "replicas": 1,
                "restartPolicy": "Never",
                "template": {
                    "metadata": {"creationTimestamp": None},
                    "spec": {
                        "containers": [
                            {
                                "args": [
                                    "/incubator-mxnet/example/image-classification/train_mnist.py",
                                    "--num-epochs",
                                    "10",
                                    "--num-layers",
                                    "2",
                                    "--kv-store",
                                    "dist_device_sync",
                                    "--gpus",
                                    "0",
                                ],
                                "command": ["python"],
                                "image": "mxjob/mxnet:gpu",
                                "name": "mxnet",
                                "ports": [{"containerPort": 9091, "name": "mxjob-port"}],
                                "resources": {"limits": {"nvidia.com/gpu": "1"}},
                            }
                        ]
                    },
                },
            },
        },
    },
}


def _v1(seed: dict[str, Any]) -> dict[str, Any]:
    # The same job written as v1 by a user: run-policy fields under spec.runPolicy.
    job = copy.deepcopy(seed)
    job["apiVersion"] = "kubeflow.org/v1"
    job["spec"]["runPolicy"] = {"cleanPodPolicy": job["spec"].pop("cleanPodPolicy")}
    return job


_TUNE_V1: dict[str, Any] = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "MXJob",
    "metadata": {"name": "auto-tuning-job", "namespace": "default"},
    "spec": {
        "jobMode": "MXTune",
        "mxReplicaSpecs": {
            "TunerTracker": {
                "replicas": 1,
                "template": {
                    "spec": {"containers": [{"name": "mxnet", "image": "mxjob/auto-tuning:gpu"}]}
                },
            },
            "TunerServer": {
                "replicas": 2,
                "template": {
                    "metadata": {"annotations": {"tuner-server-key": "2080ti"}},
                    "spec": {"containers": [{"name": "mxnet", "image": "mxjob/auto-tuning:gpu"}]},
                },
            },
            "Tuner": {
                "replicas": 1,
                "template": {
                    "spec": {"containers": [{"name": "mxnet", "image": "mxjob/auto-tuning:gpu"}]}
                },
            },
        },
    },
}


@pytest.fixture
def seed_v1beta1() -> dict[str, Any]:
    """The seed's v1beta1 job, as `kubectl apply -f` sends it."""
    return copy.deepcopy(_SEED_V1BETA1)


@pytest.fixture
def seed_job() -> dict[str, Any]:
    """The seed's job as v1, as the mutating webhook receives it (matchPolicy Equivalent)."""
    return _v1(_SEED_V1BETA1)


@pytest.fixture
def tune_job() -> dict[str, Any]:
    """An MXTune job (TVM auto-tuning) as v1, with the tuner-server key annotation."""
    return copy.deepcopy(_TUNE_V1)


@pytest.fixture
def app() -> Flask:
    """An in-process webhook app, as ``create_app()`` builds it with no arguments."""
    return create_app()


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()
