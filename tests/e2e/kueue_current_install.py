"""Kueue v0.19.2 on the real node with the operator's Workload route, for a test module's time.

Two modules queue jobs through it (tests/e2e/test_real_node_with_kueue_current.py and
tests/e2e/test_real_node_kueue_topology.py); each installs it for its own tests and puts the
session's install back after, so what they share is this one sequence.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator

from localkube.thirdparty import kueue
from tests.e2e.kueue_queues import Queued, queued_job
from tests.e2e.real_node_fixtures import InstalledCluster, namespace_for, remove_namespace, require
from tests.helpers.waiting import wait_for

VERSION = "v1beta2"
COMPONENT = "kueue-workloads"


def suspended_on_create(queued: Queued) -> list[bool]:
    """Five server-side dry runs of a queued job: whether each came back suspended."""
    job = json.dumps(queued_job("probe", "probe"))
    answers = []
    for _ in range(5):
        created = queued.kubectl(
            "create", "--dry-run=server", "-o", "json", "-n", queued.namespace, "-f", "-",
            input_text=job,
        )  # fmt: skip
        answers.append(json.loads(created.stdout)["spec"]["runPolicy"].get("suspend") is True)
    return answers


@contextlib.contextmanager
def kueue_current(
    real_cluster: InstalledCluster, namespace: str, *, pods_ready: kueue.PodsReady
) -> Iterator[Queued]:
    """Kueue installed, the operator with ``manifests/components/kueue-workloads``, and
    ``namespace``; on the way out all three undone, the session's install back."""
    require(kueue.CURRENT.missing())
    cluster = real_cluster.cluster
    work = cluster.plane.dir / "kueue-current"
    operator_work = cluster.plane.dir / "kueue-current-operator"
    try:
        seconds = kueue.CURRENT.install(cluster, work, pods_ready=pods_ready)
        # The controller refuses the route without Kueue's v1beta2 API: Kueue goes first.
        cluster.install_operator(operator_work, components=(COMPONENT,))
        namespace_for(real_cluster, namespace)
        context = Queued(real_cluster, seconds, namespace, VERSION)
        # Rolled out is not yet all answers from the new pods: the API server's kept-alive
        # connections may still reach a terminating old webhook for a while.
        wait_for(
            "every webhook answer to create queued jobs suspended",
            lambda: suspended_on_create(context),
            lambda answers: answers == [True] * 5,
            timeout=120,
        )
        yield context
    finally:
        remove_namespace(real_cluster, namespace)
        # Back to the session's install: the flag off, the component's roles gone.
        cluster.install_operator(operator_work)
        real_cluster.plane.kubectl(
            "delete", "clusterrole,clusterrolebinding", "mxjob-controller-kueue",
            "mxjob-kueue-manager", "--ignore-not-found", check=False,
        )  # fmt: skip
        kueue.CURRENT.uninstall(cluster.plane, work)
