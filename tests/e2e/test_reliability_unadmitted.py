"""Defence in depth: MXJobs stored while the admission webhooks were not registered.

A cluster can hold such jobs (the operator installed after them, the webhook configurations
deleted by mistake, a failurePolicy changed to Ignore during an outage). The controller must not
run them blindly: it re-checks each with the same ``shared/`` rules, fails an invalid one with a
clear reason and creates nothing for it, applies the defaults itself to a valid one that never
got them, and keeps running either way.

The webhook configurations of the session's operator are deleted for the creations only and
registered again in a ``finally``; both changes are awaited (the API server picks them up
asynchronously) so no other test ever sees admission off.
"""

from __future__ import annotations

import copy
import functools
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from localkube.base.api import Api, ApiError
from localkube.kubelet.core import TestKubelet
from localkube.plane.operator import RunningOperator
from tests.e2e.controller_fixtures import (
    GROUP_PATH,
    StartController,
    condition,
    create_job,
    get_job,
    mxjob,
    names,
    pods,
    services,
    status,
    wait_pods_running,
    wait_state,
)
from tests.helpers import mxjobs
from tests.helpers.waiting import wait_for


def _invalid_job(name: str) -> dict[str, Any]:
    """Two Schedulers and a Worker without an ``mxnet`` container: the webhook refuses both."""
    job = mxjob(name, workers=1, servers=0)
    specs = job["spec"]["mxReplicaSpecs"]
    specs["Scheduler"]["replicas"] = 2
    specs["Worker"]["template"]["spec"]["containers"][0]["name"] = "main"
    return job


def _undefaulted_job(name: str) -> dict[str, Any]:
    """A valid job exactly as a user wrote it: no restartPolicy, no restartScope, no runPolicy,
    containers without ports or env. Only the mutating webhook would have filled these in. (A
    container needs a name even then: the CRD's pod-template schema requires one.)"""
    return mxjobs.mxjob(name, replicas={"Scheduler": 1, "Worker": 1}, command=["python", "t.py"])


def _admitted(api: Api, namespace: str, job: dict[str, Any]) -> bool:
    """Whether the API server would store ``job`` now (a dry run: nothing is stored)."""
    try:
        api.request(
            "POST",
            f"{GROUP_PATH}/namespaces/{namespace}/mxjobs",
            body=copy.deepcopy(job),
            query=[("dryRun", "All")],
        )
    except ApiError:
        return False
    return True


@contextmanager
def admission_off(api: Api, operator: RunningOperator, namespace: str) -> Iterator[None]:
    probe = _invalid_job("admission-probe")
    operator.local.unregister_webhooks()
    try:
        wait_for(
            "admission webhooks gone",
            functools.partial(_admitted, api, namespace, probe),
            lambda admitted: admitted,
            timeout=30,
        )
        yield
    finally:
        operator.local.register_webhooks(webhook_port=operator.webhook_port)
        wait_for(
            "admission webhooks back in force",
            functools.partial(_admitted, api, namespace, probe),
            lambda admitted: not admitted,
            timeout=30,
        )


def _container(pod: dict[str, Any]) -> dict[str, Any]:
    containers = pod["spec"]["containers"]
    assert len(containers) == 1
    return dict(containers[0])


def test_unadmitted_jobs_are_failed_when_invalid_and_defaulted_when_valid(
    api: Api,
    namespace: str,
    local_operator: RunningOperator,
    start_controller: StartController,
    kubelet: TestKubelet,
) -> None:
    controller = start_controller()
    with admission_off(api, local_operator, namespace):
        create_job(api, namespace, _invalid_job("bad"))
        create_job(api, namespace, _undefaulted_job("raw"))
    stored_raw = get_job(api, namespace, "raw")
    assert stored_raw is not None
    stored_worker = stored_raw["spec"]["mxReplicaSpecs"]["Worker"]
    stored_container = stored_worker["template"]["spec"]["containers"][0]
    assert "env" not in stored_container, "the job was stored without the mutating webhook"
    assert "ports" not in stored_container
    assert "restartPolicy" not in stored_worker
    assert "restartScope" not in stored_worker and "runPolicy" not in stored_raw["spec"]

    # The invalid job fails at once, naming every violation, and gets no pod or Service.
    failed = wait_state(api, namespace, "bad", "Failed")
    reason = condition(failed, "Failed")
    assert reason is not None and reason["reason"] == "MXJobFailedValidation"
    assert "spec.mxReplicaSpecs.Scheduler.replicas" in reason["message"]
    assert "spec.mxReplicaSpecs.Worker.template.spec.containers" in reason["message"]
    assert pods(api, namespace, job="bad") == {}
    assert services(api, namespace, job="bad") == {}

    # The valid one runs with the defaults the webhook would have applied, computed in memory.
    running = wait_pods_running(api, namespace, "raw", names("raw", "scheduler-0", "worker-0"))
    worker = _container(running["raw-worker-0"])
    assert {"name": "mxjob-port", "containerPort": 9091, "protocol": "TCP"} in worker["ports"]
    env = {e["name"]: e.get("value") for e in worker["env"]}
    assert env["DMLC_ROLE"] == "worker"
    assert env["DMLC_PS_ROOT_URI"] == "raw-scheduler-0"
    assert env["DMLC_NUM_WORKER"] == "1"
    # restartPolicy defaulted to ExitCode: a SIGKILLed worker is recreated, not the job failed.
    old_uid = running["raw-worker-0"]["metadata"]["uid"]
    kubelet.terminate(namespace, "raw-worker-0", exit_code=137)
    wait_for(
        "1 restart",
        lambda: status(api, namespace, "raw").get("restartCount"),
        lambda count: count == 1,
        timeout=30,
    )
    again = wait_pods_running(api, namespace, "raw", names("raw", "scheduler-0", "worker-0"))
    assert again["raw-worker-0"]["metadata"]["uid"] != old_uid
    # restartScope defaulted to Job (an MXTrain replica's): the whole job restarted, read from
    # the job defaulted in memory, as every job is (controller/job/memory.py).
    [restart] = status(api, namespace, "raw")["restarts"]
    assert restart["scope"] == "Job" and restart["countedAgainstBackoff"] is True
    kubelet.terminate(namespace, "raw-scheduler-0", exit_code=0)
    wait_state(api, namespace, "raw", "Succeeded")
    # Defaults stay the controller's business: the stored spec is still the user's.
    final = get_job(api, namespace, "raw")
    assert final is not None and final["spec"] == stored_raw["spec"]

    # One process did all of this: neither job crashed it.
    assert controller.process.poll() is None
    with urllib.request.urlopen(
        f"http://127.0.0.1:{controller.health_port}/healthz", timeout=5
    ) as response:
        assert response.status == 200
    log = (local_operator.local.logs / controller.log_name).read_text()
    assert "Traceback" not in log


def _merge_patch(api: Api, namespace: str, name: str, spec: dict[str, Any]) -> None:
    api.request(
        "PATCH",
        f"{GROUP_PATH}/namespaces/{namespace}/mxjobs/{name}",
        body={"spec": spec},
        content_type="application/merge-patch+json",
    )


def test_the_crds_own_rules_keep_job_mode_and_replica_types_without_admission(
    api: Api, namespace: str, local_operator: RunningOperator
) -> None:
    """The CRD's CEL rules (`hack/gen_crd_rules.py` `spec_rules`) hold with no webhook."""
    foreign = _undefaulted_job("foreign-type")
    foreign["spec"]["mxReplicaSpecs"]["tuner"] = foreign["spec"]["mxReplicaSpecs"].pop("Worker")
    with admission_off(api, local_operator, namespace):
        create_job(api, namespace, _undefaulted_job("cel"))
        with pytest.raises(ApiError) as refused_type:
            create_job(api, namespace, foreign)
        with pytest.raises(ApiError) as refused_mode:
            _merge_patch(api, namespace, "cel", {"jobMode": "MXTune"})
        # "" means MXTrain too: writing it is no change of mode.
        _merge_patch(api, namespace, "cel", {"jobMode": ""})
    assert refused_type.value.status == 422
    assert "spec.mxReplicaSpecs: Invalid value" in str(refused_type.value)
    assert "keys must be replica types of the job's mode" in str(refused_type.value)
    assert refused_mode.value.status == 422
    assert "spec.jobMode: Forbidden: jobMode is immutable" in str(refused_mode.value)
    assert get_job(api, namespace, "foreign-type") is None
