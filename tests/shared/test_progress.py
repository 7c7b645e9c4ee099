"""shared/progress.py: the names every part of progress reporting spells the same way."""

from __future__ import annotations

import pytest

from shared import progress


def test_the_url_names_the_progress_service_port_and_the_jobs_status_path() -> None:
    url = progress.status_url(operator_namespace="ops", namespace="team-a", name="mnist")
    assert url == (
        "https://mxjob-controller-progress.ops.svc:8444"
        "/apis/kubeflow.org/v1/namespaces/team-a/mxjobs/mnist/status"
    )


def test_the_certificate_names_of_the_service_short_name_first() -> None:
    assert progress.service_hosts("ops") == (
        "mxjob-controller-progress.ops.svc",
        "mxjob-controller-progress.ops.svc.cluster.local",
    )


def test_the_ca_configmap_is_named_after_its_job_and_maps_back_to_it() -> None:
    assert progress.ca_configmap_name("mnist") == "mnist-status-ca"
    assert progress.job_of_ca_configmap("mnist-status-ca") == "mnist"
    assert progress.job_of_ca_configmap("mnist-status-ca-status-ca") == "mnist-status-ca"


@pytest.mark.parametrize("name", ["mnist", "-status-ca", "status-ca", "kube-root-ca.crt", ""])
def test_a_configmap_not_named_so_is_no_jobs(name: str) -> None:
    assert progress.job_of_ca_configmap(name) is None


def test_the_env_points_at_the_files_of_the_mount() -> None:
    assert progress.ENV_NAMES == ("MXJOB_STATUS_URL", "MXJOB_STATUS_CA_CERT", "MXJOB_STATUS_TOKEN")
    assert progress.MOUNT_PATH == "/var/run/secrets/mxjob.kubeflow.org"
