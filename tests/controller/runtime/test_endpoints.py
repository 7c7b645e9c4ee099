"""controller/runtime/endpoints.py: which servers the settings make, and how they speak."""

from __future__ import annotations

from controller.runtime.client import KubeClient
from controller.runtime.endpoints import http_endpoints
from controller.runtime.health import probe_route
from controller.runtime.settings import ControllerSettings

PROBES = {"/healthz": probe_route(lambda: (True, ""))}


def exposition() -> bytes:
    return b""


def test_without_metrics_secure_one_address_may_serve_probes_and_metrics_over_http() -> None:
    settings = ControllerSettings(
        metrics_secure=False, metrics_bind_address="127.0.0.1:0",
        health_probe_bind_address="127.0.0.1:0",
    )  # fmt: skip
    servers = http_endpoints(
        settings, client=KubeClient.__new__(KubeClient), probes=PROBES, exposition=exposition
    )
    for server in servers:
        server.start()
    try:
        assert [server.scheme for server in servers] == ["http"]
    finally:
        for server in servers:
            server.stop()


def test_with_metrics_secure_metrics_get_an_https_server_of_their_own() -> None:
    settings = ControllerSettings(
        metrics_bind_address="127.0.0.1:0", health_probe_bind_address="127.0.0.1:0"
    )
    servers = http_endpoints(
        settings, client=KubeClient.__new__(KubeClient), probes=PROBES, exposition=exposition
    )
    for server in servers:
        server.start()
    try:
        assert [server.scheme for server in servers] == ["http", "https"]
    finally:
        for server in servers:
            server.stop()
