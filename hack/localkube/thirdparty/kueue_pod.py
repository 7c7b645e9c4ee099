"""Kueue's manager as a pod of the test kubelet's install profile: ``bin/kueue`` with its listen
addresses on the pod's own address.

The install profile binds a program's "every interface" listen addresses to its pod's address by
rewriting its arguments (:func:`localkube.kubelet.profile.sandbox.bind_to_pod_ip`), as a pod's
network namespace would. Kueue takes its addresses from its configuration file instead
(``health.healthProbeBindAddress: :8081``, ``metrics.bindAddress: :8443``, ``webhook.port:
9443`` on every interface), and on the profile's shared loopback those would collide with the
operator's pods beside it (its webhook on ``<pod IP>:9443``, its controller's health on
``<pod IP>:8081``) and with other runs on this machine. So the profile's program for Kueue's
image is this module (:func:`entrypoint_script` writes the script): it reads the configuration
Kueue is given (``--config=``), puts every listen address on ``$POD_IP`` (the Downward API's
``status.podIP``, which the manager cluster's overlay adds), and execs the binary with the result
in an in-memory file, so nothing is left on disk. The configuration is otherwise Kueue's.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

CONFIG_FLAG = "--config="


def listen_on(address: str, pod_ip: str) -> str:
    """``:P``, ``0.0.0.0:P`` or ``[::]:P`` → ``<pod_ip>:P``; anything else (``0``: off, a
    given host) unchanged."""
    host, sep, port = address.rpartition(":")
    if sep and host in ("", "0.0.0.0", "[::]"):
        return f"{pod_ip}:{port}"
    return address


def pod_configuration(config: Mapping[str, Any], pod_ip: str) -> dict[str, Any]:
    """Kueue's configuration with its health, metrics and pprof listeners and its webhook server
    on ``pod_ip``."""
    changed = dict(config)
    for section, key in (("health", "healthProbeBindAddress"), ("metrics", "bindAddress")):
        values = dict(changed.get(section) or {})
        if values.get(key):
            values[key] = listen_on(str(values[key]), pod_ip)
        changed[section] = values
    if changed.get("pprofBindAddress"):
        changed["pprofBindAddress"] = listen_on(str(changed["pprofBindAddress"]), pod_ip)
    changed["webhook"] = {**dict(changed.get("webhook") or {}), "host": pod_ip}
    return changed


def pod_argv(kueue: str, args: Sequence[str], config_path: str) -> list[str]:
    """``kueue`` with ``args``, its ``--config=`` replaced by ``config_path``."""
    rest = [arg for arg in args if not arg.startswith(CONFIG_FLAG)]
    return [kueue, f"{CONFIG_FLAG}{config_path}", *rest]


def entrypoint_script(path: Path, *, kueue: Path) -> Path:
    """An executable at ``path`` that runs this module for ``kueue`` with the pod's arguments:
    the program the install profile maps Kueue's image to."""
    module = ["-m", "localkube.thirdparty.kueue_pod", str(kueue)]
    command = shlex.join([sys.executable, *module])
    hack = shlex.quote(str(Path(__file__).resolve().parents[2]))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/bin/sh\nPYTHONPATH={hack} exec {command} "$@"\n')
    path.chmod(0o755)
    return path


def main(argv: Sequence[str]) -> None:
    """``python -m localkube.thirdparty.kueue_pod <kueue binary> <Kueue's args>...``."""
    kueue, *args = argv
    pod_ip = os.environ["POD_IP"]
    given = next(arg for arg in args if arg.startswith(CONFIG_FLAG))[len(CONFIG_FLAG) :]
    config = yaml.safe_load(Path(given).read_text())
    fd = os.memfd_create("kueue-config", 0)  # inherited through exec: no CLOEXEC
    os.write(fd, yaml.safe_dump(pod_configuration(config, pod_ip)).encode())
    os.execv(kueue, pod_argv(kueue, args, f"/proc/self/fd/{fd}"))


if __name__ == "__main__":
    main(sys.argv[1:])
