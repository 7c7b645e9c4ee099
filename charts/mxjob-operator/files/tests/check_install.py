"""``helm test``: the install admits, defaults and runs MXJobs.

Run by the chart's test Pod (templates/tests/check-install.yaml) in the controller's image, as
the test's own ServiceAccount, whose Role allows MXJobs in the release namespace only:

1. a server-side dry run of an invalid MXJob (two Workers without a Scheduler) must be refused by
   the mutating webhook with its message, naming the field;
2. a valid, suspended MXJob (written as ``worker``, without replicas or ports) is created: the
   webhook must have defaulted it (the canonical ``Worker``, one replica, the mxjob-port), and the
   controller must write its status (the condition ``Suspended``); then it is deleted.

Any other answer fails the test with what was found: the webhook down (``failurePolicy: Fail``
refuses every MXJob), its certificate not trusted, the controller not running or not leading.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

GROUP, VERSION, PLURAL = "kubeflow.org", "v1", "mxjobs"
WEBHOOK = 'admission webhook "mutate.mxjobs.kubeflow.org" denied the request'
NAMESPACE = os.environ["MXJOB_TEST_NAMESPACE"]
NAME = os.environ.get("MXJOB_TEST_JOB", "mxjob-operator-test")
IMAGE = os.environ["MXJOB_TEST_IMAGE"]
TIMEOUT = float(os.environ.get("MXJOB_TEST_TIMEOUT", "60"))
T = TypeVar("T")


class CheckError(Exception):
    """What the install did wrong, said in the test's log."""


def mxjob(replica_key: str, replica: dict[str, Any]) -> dict[str, Any]:
    container = {"name": "mxnet", "image": IMAGE, "command": ["true"]}
    replica = {**replica, "template": {"spec": {"containers": [container]}}}
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "MXJob",
        "metadata": {"name": NAME, "namespace": NAMESPACE},
        "spec": {"runPolicy": {"suspend": True}, "mxReplicaSpecs": {replica_key: replica}},
    }


def said(error: ApiException) -> str:
    """The API server's message (a Status), or the whole body when it is not one."""
    try:
        return str(json.loads(error.body)["message"])
    except (TypeError, ValueError, KeyError):
        return f"{error.status} {error.reason}: {error.body}"


def check_an_invalid_job_is_refused(api: client.CustomObjectsApi) -> None:
    invalid = mxjob("Worker", {"replicas": 2})
    try:
        api.create_namespaced_custom_object(
            GROUP, VERSION, NAMESPACE, PLURAL, invalid, dry_run="All"
        )
    except ApiException as error:
        message = said(error)
    else:
        raise CheckError("an invalid MXJob (two Workers without a Scheduler) was admitted")
    if WEBHOOK not in message or "spec.mxReplicaSpecs.Worker.replicas" not in message:
        raise CheckError(f"the invalid MXJob was refused, not by the webhook: {message}")
    print(f"ok: the webhook refuses an invalid MXJob: {message}")


def wait_for(what: str, read: Callable[[], T], done: Callable[[T], bool]) -> T:
    deadline = time.monotonic() + TIMEOUT
    while True:
        found = read()
        if done(found):
            return found
        if time.monotonic() > deadline:
            raise CheckError(f"no {what} within {TIMEOUT:g} s; last seen: {found}")
        time.sleep(1)


def check_a_valid_job_is_defaulted_and_run(api: client.CustomObjectsApi) -> None:
    created: Any = api.create_namespaced_custom_object(
        GROUP, VERSION, NAMESPACE, PLURAL, mxjob("worker", {})
    )
    replicas = created["spec"]["mxReplicaSpecs"]
    worker = replicas.get("Worker", {})
    ports = worker.get("template", {}).get("spec", {}).get("containers", [{}])[0].get("ports", [])
    if list(replicas) != ["Worker"] or worker.get("replicas") != 1:
        raise CheckError(f"the webhook did not default the replicas: {replicas}")
    if "mxjob-port" not in [port.get("name") for port in ports]:
        raise CheckError(f"the webhook did not default the mxnet container's port: {ports}")
    print("ok: the webhook defaulted a valid MXJob (Worker, 1 replica, mxjob-port)")

    def conditions() -> dict[str, str]:
        job: Any = api.get_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, NAME)
        found = job.get("status", {}).get("conditions", [])
        return {c["type"]: c["status"] for c in found}

    wait_for("Suspended condition from the controller", conditions,
             lambda found: found.get("Suspended") == "True")  # fmt: skip
    print("ok: the controller wrote the suspended MXJob's status")


def delete_the_job(api: client.CustomObjectsApi) -> None:
    try:
        api.delete_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, NAME)
    except ApiException as error:
        if error.status != 404:
            raise

    def present() -> bool:
        try:
            api.get_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, NAME)
        except ApiException as error:
            if error.status == 404:
                return False
            raise
        return True

    wait_for(f"deletion of MXJob {NAME}", present, lambda found: not found)


def main() -> int:
    config.load_incluster_config()
    api = client.CustomObjectsApi()
    delete_the_job(api)  # one a failed run left
    try:
        check_an_invalid_job_is_refused(api)
        check_a_valid_job_is_defaulted_and_run(api)
    except CheckError as error:
        print(f"FAILED: {error}", file=sys.stderr)
        return 1
    except ApiException as error:
        print(f"FAILED: {said(error)}", file=sys.stderr)
        return 1
    finally:
        delete_the_job(api)
    print(f"ok: mxjob-operator in {NAMESPACE} admits, defaults and runs MXJobs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
