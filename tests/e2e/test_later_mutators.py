"""One admission call per CREATE, and what another vendor's mutating webhook can do to a job.

By default the mutating webhook alone judges a CREATE (the validating one takes UPDATEs only;
manifests/webhook/webhook-configurations.yaml). The risk is a mutating webhook that changes the
job after ours. A real second mutating webhook (``LaterMutator``: HTTPS on loopback, registered
on the session's plane under a name that sorts after ours, matching only the jobs labelled for
it) shows what the API server does with each kind:

- one that breaks the job on its first call: ours is reinvoked (reinvocationPolicy IfNeeded) and
  refuses the job with the field path, at creation;
- one that changes a field ours defaults (so that ours patches again when reinvoked) and breaks
  the job when it is reinvoked in turn, after ours: the job is stored, and the controller fails
  it (MXJobFailedValidation) without creating a pod or a Service;
- with ``manifests/components/validate-on-create`` the validating webhook, called after every
  mutation, refuses that job at creation too.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any, Final

import pytest

from localkube.base.api import Api, ApiError
from localkube.plane.install_choices import InstallChoices
from localkube.plane.operator import LocalOperator, RunningOperator
from tests.e2e.controller_fixtures import (
    GROUP_PATH,
    StartController,
    condition,
    create_job,
    get_job,
    mxjob,
    pods,
    services,
    wait_state,
)
from tests.helpers.review_server import serving_reviews
from tests.helpers.waiting import wait_for

MODE_LABEL: Final = "later-mutator.test/mode"
PASS_ANNOTATION: Final = "later-mutator.test/pass"
CONFIGURATION: Final = "zzzz-later-mutator-test"
"""Sorts after ours (``zz-mxjob-operator-mutating``): the API server calls it later."""


def _patch_for(job: dict[str, Any]) -> list[dict[str, Any]]:
    """What the later mutator does to ``job``, by the mode its label names.

    ``at-once``: two Schedulers on the first call. ``when-reinvoked``: on the first call it
    removes ``runPolicy.cleanPodPolicy`` (ours defaults it again when reinvoked, which changes
    the job, so this one is reinvoked too); on that second call, two Schedulers.
    """
    mode = job["metadata"].get("labels", {}).get(MODE_LABEL)
    calls = int(job["metadata"].get("annotations", {}).get(PASS_ANNOTATION, "0")) + 1
    mark = [{"op": "add", "path": "/metadata/annotations", "value": {PASS_ANNOTATION: str(calls)}}]
    two_schedulers = [
        {"op": "replace", "path": "/spec/mxReplicaSpecs/Scheduler/replicas", "value": 2}
    ]
    if mode == "at-once" or calls > 1:
        return [*mark, *two_schedulers]
    return [*mark, {"op": "remove", "path": "/spec/runPolicy/cleanPodPolicy"}]


def _mutate(request: dict[str, Any]) -> dict[str, Any]:
    patch = json.dumps(_patch_for(request["object"])).encode()
    return {"allowed": True, "patchType": "JSONPatch", "patch": base64.b64encode(patch).decode()}


def _configuration(*, port: int, ca_pem: bytes) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": CONFIGURATION},
        "webhooks": [
            {
                "name": "later.mutator.test",
                "clientConfig": {
                    "url": f"https://127.0.0.1:{port}/mutate",
                    "caBundle": base64.b64encode(ca_pem).decode(),
                },
                "rules": [
                    {
                        "apiGroups": ["kubeflow.org"],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE"],
                        "resources": ["mxjobs"],
                    }
                ],
                "objectSelector": {"matchExpressions": [{"key": MODE_LABEL, "operator": "Exists"}]},
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
                "failurePolicy": "Fail",
                "reinvocationPolicy": "IfNeeded",
                "timeoutSeconds": 5,
            }
        ],
    }


def _job(name: str, mode: str) -> dict[str, Any]:
    """A single-worker job labelled with how the later mutator treats it."""
    return mxjob(name, workers=1, servers=0, labels={MODE_LABEL: mode})


def _dry_run(api: Api, namespace: str, job: dict[str, Any]) -> dict[str, Any] | str:
    """What the API server would store for ``job``, or the message it refuses it with."""
    try:
        stored: dict[str, Any] = api.request(
            "POST", f"{GROUP_PATH}/namespaces/{namespace}/mxjobs", body=job,
            query=[("dryRun", "All")],
        )  # fmt: skip
    except ApiError as error:
        return str(error)
    return stored


def _called(result: dict[str, Any] | str) -> bool:
    """Whether the later mutator took part in this admission (or refused it, then it did)."""
    return isinstance(result, str) or PASS_ANNOTATION in result["metadata"].get("annotations", {})


@pytest.fixture(scope="module")
def later_mutator(
    api: Api, local_operator: RunningOperator, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """The later mutator served and registered, until the module ends."""
    plane = local_operator.local.plane
    key_dir = tmp_path_factory.mktemp("later-mutator")
    with serving_reviews(_mutate, key_dir=key_dir) as (port, ca_pem):
        configuration = _configuration(port=port, ca_pem=ca_pem)
        try:
            plane.kubectl("apply", "-f", "-", input_text=json.dumps(configuration))
            probe = _job("probe", "at-once")
            wait_for("the later mutator registered", lambda: _dry_run(api, "default", probe),
                     _called, timeout=30)  # fmt: skip
            yield
        finally:
            plane.kubectl("delete", "mutatingwebhookconfiguration", CONFIGURATION,
                          "--ignore-not-found", check=False)  # fmt: skip


def test_a_job_a_later_mutator_breaks_is_refused_when_ours_is_reinvoked(
    api: Api, namespace: str, later_mutator: None
) -> None:
    with pytest.raises(ApiError) as refused:
        create_job(api, namespace, _job("broken-at-once", "at-once"))
    assert refused.value.status == 422
    assert "spec.mxReplicaSpecs.Scheduler.replicas" in str(refused.value)
    assert get_job(api, namespace, "broken-at-once") is None


def test_a_job_broken_after_our_reinvocation_is_stored_and_the_controller_refuses_to_run_it(
    api: Api, namespace: str, later_mutator: None, start_controller: StartController
) -> None:
    start_controller()
    created = create_job(api, namespace, _job("broken-later", "when-reinvoked"))
    # Stored as the later mutator left it after its second call: two Schedulers, and the
    # cleanPodPolicy ours put back when it was reinvoked.
    assert created["metadata"]["annotations"][PASS_ANNOTATION] == "2"
    assert created["spec"]["mxReplicaSpecs"]["Scheduler"]["replicas"] == 2
    assert created["spec"]["runPolicy"]["cleanPodPolicy"] == "Running"
    failed = wait_state(api, namespace, "broken-later", "Failed")
    reason = condition(failed, "Failed")
    assert reason is not None and reason["reason"] == "MXJobFailedValidation"
    assert "spec.mxReplicaSpecs.Scheduler.replicas" in reason["message"]
    assert pods(api, namespace, job="broken-later") == {}
    assert services(api, namespace, job="broken-later") == {}


def test_validate_on_create_refuses_that_job_at_creation(
    api: Api, namespace: str, later_mutator: None, local_operator: RunningOperator
) -> None:
    port = local_operator.webhook_port
    with_create = LocalOperator(
        local_operator.local.plane, choices=InstallChoices(validate_on_create=True)
    )
    job = _job("refused-later", "when-reinvoked")
    with_create.register_webhooks(webhook_port=port)
    try:
        refused = wait_for("CREATE sent to the validating webhook",
                           lambda: _dry_run(api, namespace, job),
                           lambda result: isinstance(result, str), timeout=30)  # fmt: skip
        assert "spec.mxReplicaSpecs.Scheduler.replicas" in str(refused)
        with pytest.raises(ApiError) as error:
            create_job(api, namespace, job)
        assert error.value.status == 422
    finally:
        local_operator.local.register_webhooks(webhook_port=port)
        wait_for("the default configuration back", lambda: _dry_run(api, namespace, job),
                 lambda result: not isinstance(result, str), timeout=30)  # fmt: skip
    assert get_job(api, namespace, "refused-later") is None
