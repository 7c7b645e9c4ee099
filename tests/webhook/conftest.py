"""Fixtures of the webhook tests: the seed's jobs (tests/shared/shared_samples.py) and an
in-process app.

The jobs are fixtures (fresh copies per test) rather than module constants so a test that
mutates one cannot leak into another.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.shared import shared_samples
from webhook.app import create_app


def _v1(seed: dict[str, Any]) -> dict[str, Any]:
    # The same job written as v1 by a user: run-policy fields under spec.runPolicy.
    job = copy.deepcopy(seed)
    job["apiVersion"] = "kubeflow.org/v1"
    job["spec"]["runPolicy"] = {"cleanPodPolicy": job["spec"].pop("cleanPodPolicy")}
    return job


@pytest.fixture
def seed_v1beta1() -> dict[str, Any]:
    """The seed's v1beta1 job, as `kubectl apply -f` sends it."""
    return shared_samples.seed_applied()


@pytest.fixture
def seed_job() -> dict[str, Any]:
    """The seed's job as v1, as the mutating webhook receives it (matchPolicy Equivalent)."""
    return _v1(shared_samples.seed_applied())


@pytest.fixture
def tune_job() -> dict[str, Any]:
    """An MXTune job (TVM auto-tuning) as v1, with the tuner-server key annotation."""
    return shared_samples.tune_job("auto-tuning-job", key="2080ti", image="mxjob/auto-tuning:gpu")


@pytest.fixture
def app() -> Flask:
    """An in-process webhook app, as ``create_app()`` builds it with no arguments."""
    return create_app()


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()
