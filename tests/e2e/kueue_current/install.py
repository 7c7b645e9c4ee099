"""Kueue v0.19.2 on the real node with the operator's Workload route, for this package's tests.

Installing Kueue and the operator's component, and putting the session's install back after,
takes a minute or two on the real node: the package's modules share one install
(:func:`kueue_current_installed`, a package fixture in ``conftest.py``), and each queues its
jobs in a namespace of its own (:func:`queued_in`). They share one ``waitForPodsReady`` too:
:data:`PODS_READY`.
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
PODS_READY = kueue.PodsReady(timeout="20s", backoff_base_seconds=1, backoff_limit_count=1)
"""Short, so that the timeout path ends in seconds (one requeue): a job admitted here has its pods
ready well within 20 s (kwok's at once, the real node's from cached images), and a job Kueue
never admits (no quota, no topology placement, an inactive queue) is not timed."""


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
def kueue_current_installed(real_cluster: InstalledCluster) -> Iterator[float]:
    """Kueue installed with :data:`PODS_READY` and the operator with
    ``manifests/components/kueue-workloads``; the seconds Kueue took to be ready. On the way out
    both undone: the session's install back."""
    require(kueue.CURRENT.missing())
    cluster = real_cluster.cluster
    work = cluster.plane.dir / "kueue-current"
    operator_work = cluster.plane.dir / "kueue-current-operator"
    try:
        seconds = kueue.CURRENT.install(cluster, work, pods_ready=PODS_READY)
        # The controller refuses the route without Kueue's v1beta2 API: Kueue goes first.
        cluster.install_operator(operator_work, components=(COMPONENT,))
        yield seconds
    finally:
        # The component's roles gone; the session's install (the flag off) is put back later.
        real_cluster.plane.kubectl(
            "delete", "clusterrole,clusterrolebinding", "mxjob-controller-kueue",
            "mxjob-kueue-manager", "--ignore-not-found", check=False,
        )  # fmt: skip
        kueue.CURRENT.uninstall(cluster.plane, work)
        real_cluster.put_back_later()


@contextlib.contextmanager
def queued_in(real_cluster: InstalledCluster, seconds: float, namespace: str) -> Iterator[Queued]:
    """``namespace`` for queued jobs, once the webhook creates them suspended; removed on the
    way out. ``seconds``: what :func:`kueue_current_installed` gave."""
    try:
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
        remove_namespace(real_cluster, namespace, until_gone=True)
