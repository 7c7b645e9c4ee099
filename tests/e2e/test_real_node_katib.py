"""Katib v0.19 runs MXJob trials on the real node, installed from its own manifests.

The module fixture builds Katib from its release source (``localkube.thirdparty.katib``), adds
the project's ``katib`` component to the operator's install, installs Katib with the changes a
user makes (``localkube.thirdparty.katib_install``), and runs two Experiments at once in a
namespace where Katib injects its metrics collector: ``examples/katib/mxjob-cpu-train.yaml`` as
shipped (but for ``retain: true``, so its trials' MXJobs and pods stay to be looked at), and one
whose single trial's worker exits 1. The tests read what came of them; the last one deletes both.
"""

from __future__ import annotations

import datetime
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from localkube.base.api import ensure_namespace
from localkube.base.paths import PROJECT_ROOT
from localkube.realnode import containerd
from localkube.realnode.node import node_bin_dir
from localkube.thirdparty import katib, katib_install
from tests.e2e.real_node_fixtures import InstalledCluster, remove_namespace, require
from tests.helpers.pod_creations import PodCreations
from tests.helpers.waiting import wait_for

# A component built in the background by make test: first test waits for it (late_builds).
pytestmark = [
    pytest.mark.timeout(1800),
    pytest.mark.changes_install,
    pytest.mark.late_builds("third-party-katib", "late-images-katib"),
]

NAMESPACE = "katib-trials"
EXAMPLE = PROJECT_ROOT / "examples" / "katib" / "mxjob-cpu-train.yaml"
COLLECTOR = "metrics-logger-and-collector"
EXPERIMENTS = "/apis/kubeflow.org/v1beta1/namespaces/katib-trials/experiments"


@dataclass
class Tuned:
    installed: InstalledCluster
    experiments: dict[str, dict[str, Any]]
    creations: PodCreations


def experiment(name: str) -> dict[str, Any]:
    """The shipped example, its trials' MXJobs kept (``retain``) for the tests to read."""
    example: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text())
    example["metadata"] = {"name": name, "namespace": NAMESPACE}
    example["spec"]["trialTemplate"]["retain"] = True
    return example


def failing_experiment(name: str) -> dict[str, Any]:
    """One trial, whose worker exits 1 (``false``, as Katib's ``sh -c`` runs it)."""
    failing = experiment(name)
    failing["spec"].update(maxTrialCount=1, parallelTrialCount=1, maxFailedTrialCount=0)
    worker = failing["spec"]["trialTemplate"]["trialSpec"]["spec"]["mxReplicaSpecs"]["Worker"]
    container = worker["template"]["spec"]["containers"][0]
    container["command"] = ["false", "${trialParameters.learningRate}"]
    container["args"] = ["${trialParameters.batchSize}"]
    return failing


def install_katib(installed: InstalledCluster, work: Path) -> None:
    """Build (cached), import the images, add the component, install, and wait for Katib to
    admit Experiments."""
    require(katib.missing())
    home = katib.build()
    images = katib.images(home)
    for image in images.all():
        containerd.import_image(
            node_bin_dir(), installed.node.containerd_paths.socket, image.archive
        )
    installed.cluster.install_operator(work / "operator", components=("katib",))
    overlay = katib_install.write_overlay(
        home / "manifests", work, suggestion_image=images.suggestion.ref,
        collector_image=images.collector.ref,
        images={"controller": images.controller.ref, "db_manager": images.db_manager.ref,
                "postgres": images.postgres.ref},
    )  # fmt: skip
    katib_install.apply(installed.plane, overlay, volume_dir=installed.node.dir / "katib-postgres")
    katib_install.wait_ready(installed.plane, timeout=300)


def ended(found: dict[str, Any]) -> bool:
    conditions = found.get("status", {}).get("conditions", [])
    return any(c["type"] in ("Succeeded", "Failed") and c["status"] == "True" for c in conditions)


@pytest.fixture(scope="module")
def tuned(
    real_cluster: InstalledCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Tuned]:
    work = tmp_path_factory.mktemp("katib")
    install_katib(real_cluster, work)
    api = real_cluster.api
    ensure_namespace(api, NAMESPACE)
    real_cluster.plane.kubectl(
        "label", "namespace", NAMESPACE, "katib.kubeflow.org/metrics-collector-injection=enabled",
        "--overwrite",
    )  # fmt: skip
    creations = PodCreations(api, NAMESPACE)
    for body in (experiment("tune"), failing_experiment("fails")):
        api.request("POST", EXPERIMENTS, body=body)

    def both_ended() -> dict[str, dict[str, Any]]:
        return {name: api.request("GET", f"{EXPERIMENTS}/{name}") for name in ("tune", "fails")}

    try:
        experiments = wait_for(
            "both Experiments to end", both_ended,
            lambda found: all(ended(e) for e in found.values()), timeout=900,
        )  # fmt: skip
        yield Tuned(real_cluster, experiments, creations)
    finally:
        creations.stop()
        overlay = work / "katib-manifests" / "installs" / katib_install.OVERLAY
        katib_install.uninstall(real_cluster.plane, overlay)
        remove_namespace(real_cluster, NAMESPACE, until_gone=True)
        real_cluster.put_back_later()


def condition(obj: dict[str, Any], ctype: str) -> dict[str, Any]:
    return next((c for c in obj.get("status", {}).get("conditions", []) if c["type"] == ctype), {})


def trials_of(tuned: Tuned, experiment_name: str) -> list[dict[str, Any]]:
    listed = tuned.installed.api.request(
        "GET", f"/apis/kubeflow.org/v1beta1/namespaces/{NAMESPACE}/trials",
        query=[("labelSelector", f"katib.kubeflow.org/experiment={experiment_name}")],
    )["items"]  # fmt: skip
    return list(listed)


def pod(tuned: Tuned, name: str) -> dict[str, Any]:
    found: dict[str, Any] = tuned.installed.api.request(
        "GET", f"/api/v1/namespaces/{NAMESPACE}/pods/{name}"
    )
    return found


def sidecar_log(
    tuned: Tuned, pod_name: str, *options: str, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """``kubectl logs`` of a trial pod's metrics collector sidecar."""
    return tuned.installed.plane.kubectl(
        "logs", "-n", NAMESPACE, pod_name, "-c", COLLECTOR, *options, timeout=30, check=check
    )


def trials_told(tuned: Tuned, experiment_name: str) -> str:
    """What each trial of an experiment ended with, and the last of what its worker 0's sidecar
    printed (the training output, then what it reported): a failed assertion's message."""
    lines = []
    for trial in trials_of(tuned, experiment_name):
        name = trial["metadata"]["name"]
        status = trial.get("status", {})
        last = (status.get("conditions") or [{}])[-1]
        lines.append(
            f"trial {name}: {last.get('type')} {last.get('reason')}: {last.get('message')}; "
            f"observation {status.get('observation')}"
        )
        log = sidecar_log(tuned, f"{name}-worker-0", "--tail=20", check=False)
        lines.append(f"  {COLLECTOR}: {(log.stdout or log.stderr).strip()}")
    return "\n".join(lines)


def printed(tuned: Tuned, pod_name: str, metric: str) -> list[float]:
    """Every value of ``metric`` the collector sidecar relayed from the worker's output."""
    log = sidecar_log(tuned, pod_name).stdout
    return [float(v) for v in re.findall(rf"\b{metric}=([-+.\deE]+)", log)]


def test_the_experiment_succeeds_and_its_optimum_is_a_value_a_worker_printed(
    tuned: Tuned,
) -> None:
    tune = tuned.experiments["tune"]
    assert condition(tune, "Succeeded").get("status") == "True", trials_told(tuned, "tune")
    assert tune["status"]["trialsSucceeded"] == 3, tune["status"]
    optimal = tune["status"]["currentOptimalTrial"]
    metric = next(m for m in optimal["observation"]["metrics"] if m["name"] == "loss")
    best = optimal["bestTrialName"]
    values = printed(tuned, f"{best}-worker-0", "loss")
    assert values and float(metric["min"]) == pytest.approx(min(values), abs=1e-6), (metric, values)


def test_every_trial_ran_as_the_operator_runs_it_with_the_collector_and_ended_with_mxnet(
    tuned: Tuned,
) -> None:
    lags = []
    for trial in trials_of(tuned, "tune"):
        name = trial["metadata"]["name"]
        job = tuned.installed.api.request(
            "GET", f"/apis/kubeflow.org/v1/namespaces/{NAMESPACE}/mxjobs/{name}"
        )
        assert job["status"]["state"] == "Succeeded", (job["status"], trials_told(tuned, "tune"))
        worker = pod(tuned, f"{name}-worker-0")
        containers = {c["name"]: c for c in worker["spec"]["containers"]}
        assert set(containers) == {"mxnet", COLLECTOR}
        assert containers["mxnet"]["command"] == ["sh", "-c"]
        assert "1>/var/log/katib/metrics.log" in containers["mxnet"]["args"][0]
        mxnet = next(s for s in worker["status"]["containerStatuses"] if s["name"] == "mxnet")
        finished = _time(mxnet["state"]["terminated"]["finishedAt"])
        lags.append((_time(job["status"]["completionTime"]) - finished).total_seconds())
        # Only worker 0 is the primary pod: the others run without the sidecar.
        server = pod(tuned, f"{name}-server-0")
        assert [c["name"] for c in server["spec"]["containers"]] == ["mxnet"]
    assert len(lags) == 3 and all(-1 <= lag <= 3 for lag in lags), lags
    made = sorted(n for n, _ in tuned.creations.seen)
    assert len(made) == len(set(made)), made  # no pod made twice


def _time(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_a_trial_whose_worker_exits_1_is_failed_in_katib_with_the_operators_reason(
    tuned: Tuned,
) -> None:
    fails = tuned.experiments["fails"]
    assert condition(fails, "Failed").get("status") == "True", fails["status"]
    (trial,) = trials_of(tuned, "fails")
    failed = condition(trial, "Failed")
    assert failed.get("status") == "True", trial["status"]
    assert "exited with code 1" in failed["message"], failed


def test_an_experiment_whose_trials_the_operator_would_refuse_is_refused_at_once(
    tuned: Tuned,
) -> None:
    bad = experiment("bad")
    bad["spec"]["trialTemplate"]["primaryContainerName"] = "training"
    refused = tuned.installed.plane.kubectl(
        "create", "-f", "-", input_text=yaml.safe_dump(bad), check=False
    )
    assert refused.returncode != 0
    assert "spec.trialTemplate.primaryContainerName" in refused.stderr, refused.stderr
    assert "use 'mxnet'" in refused.stderr


def test_deleting_the_experiments_leaves_no_mxjob_pod_or_service(tuned: Tuned) -> None:
    api = tuned.installed.api
    for name in ("tune", "fails"):
        api.request("DELETE", f"{EXPERIMENTS}/{name}")

    def left() -> dict[str, int]:
        return {
            kind: len(api.request("GET", path)["items"])
            for kind, path in (
                ("mxjobs", f"/apis/kubeflow.org/v1/namespaces/{NAMESPACE}/mxjobs"),
                ("pods", f"/api/v1/namespaces/{NAMESPACE}/pods"),
                ("services", f"/api/v1/namespaces/{NAMESPACE}/services"),
            )
        }

    wait_for("every MXJob, pod and Service to go", left,
             lambda counts: not any(counts.values()), timeout=180)  # fmt: skip
