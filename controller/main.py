"""``mxjob-controller``: the console script (flags in :mod:`controller.runtime.settings`).

SIGTERM and SIGINT stop gracefully: in-flight reconciles finish and the Lease is released, so a
rolling update hands over at once. A controller started while the API server is away
waits for it (controller/runtime/startup.py) instead of exiting. The exit code is 0 after a
requested stop and 1 when the Lease was lost (the process must not go on acting while another leader
may); 2 when ``--kueue-workloads`` is asked of a cluster whose Kueue cannot take it
(controller/integrations/kueue/workload_sync.py).
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType

from controller.integrations.kueue.workload_sync import KueueRouteError, verify_kueue_route
from controller.manager import Controller
from controller.runtime.client import KubeClient
from controller.runtime.logconfig import configure
from controller.runtime.settings import from_args
from controller.runtime.startup import await_api_server

log = logging.getLogger("controller")


def main(argv: Sequence[str] | None = None) -> int:
    settings = from_args(argv)
    configure(log_format=settings.log_format, level=settings.log_level)
    client = KubeClient.load(settings.kubeconfig, pool_size=settings.pool_size)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        log.info("received %s: stopping", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if not await_api_server(client, stop=stop):
        return 0
    if settings.kueue_workloads:
        try:
            verify_kueue_route(client)
        except KueueRouteError as error:
            log.error("%s", error)
            return 2
    log.info(
        "starting mxjob-controller as %s (namespaces: %s, workers: %d, leader election: %s)",
        settings.identity,
        ", ".join(settings.namespaces) or "all",
        settings.workers,
        "on" if settings.leader_elect else "off",
    )
    # Built once the API server answers: it is asked what the integrations need (the gang
    # scheduler ``auto`` picks, which optional resources are served) before they are built.
    controller = Controller(settings, client=client, stop_event=stop)
    return controller.run()


if __name__ == "__main__":
    sys.exit(main())
