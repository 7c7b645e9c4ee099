"""Listening ports for the programs localkube starts, taken outside the kernel's ephemeral range.

Why: a port from ``bind(("127.0.0.1", 0))`` comes from the ephemeral range
(``net.ipv4.ip_local_port_range``), the same pool the kernel draws every outgoing connection's
source port from. A program that is stopped and started again on its old port (``ControlPlane.
restart_component``) then races every client on the machine: if kubectl, a kubelet or the API
server opens a connection in between and is given that port as its source, the restarted program
fails with "bind: address already in use". Ports below the ephemeral range are never handed out
that way, so a port stays ours between a stop and the next start.
"""

from __future__ import annotations

import os
import random
import socket
import time
from collections.abc import Iterable
from pathlib import Path

EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
# The lowest port handed out: above the registered services most hosts run (1024-10000 holds
# databases, proxies and dev servers), below Linux's default ephemeral range (32768-60999).
LOWEST_PORT = 10000
_ATTEMPTS = 200
# Ports given out by this process, not handed out again: a program may not have bound its port
# yet when the next one is asked for.
_given: set[int] = set()


def ephemeral_range(path: Path = EPHEMERAL_RANGE_FILE) -> tuple[int, int]:
    """The kernel's range of source ports for outgoing connections (Linux's default if unknown)."""
    try:
        low, high = (int(part) for part in path.read_text().split())
    except (OSError, ValueError):
        return 32768, 60999
    return low, high


def listening_range(ephemeral: tuple[int, int]) -> range:
    """The ports to choose from: below the ephemeral range, or above it when below is too small."""
    low, high = ephemeral
    if low - LOWEST_PORT >= 1000:
        return range(LOWEST_PORT, low)
    return range(min(high + 1, 65535), 65536)


def is_free(port: int) -> bool:
    """True when nothing holds ``port`` on any IPv4 address, listening or in TIME_WAIT."""
    # The wildcard address: taken if anything listens on this port on any IPv4 address. Without
    # SO_REUSEADDR, so a port still in TIME_WAIT from an earlier program counts as taken too.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A port nothing listens on now, outside the ephemeral range, not given out before here."""
    candidates = listening_range(ephemeral_range())
    for _ in range(_ATTEMPTS):
        port = random.choice(candidates)
        if port not in _given and is_free(port):
            _given.add(port)
            return port
    raise OSError(f"no free port found in {candidates.start}-{candidates.stop - 1}")


def is_listened_on(port: int, *, host: str = "0.0.0.0") -> bool:
    """True when a socket listens on ``port`` on some IPv4 address (TIME_WAIT does not count);
    with ``host``, only a listener in the way of binding that address counts (one on it, or on
    every address)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        # SO_REUSEADDR, as the Go and Python servers set it: only a listener is in the way.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return True
    return False


_LISTEN = "0A"
_LOOPBACK_OR_ANY = {"00000000", "0100007F", "0" * 32, "0000000000000000FFFF00000100007F"}
"""``/proc/net/tcp{,6}`` addresses (hex, host order) of 0.0.0.0, 127.0.0.1, :: and the
v4-mapped 127.0.0.1: the listeners that keep a program from binding ``127.0.0.1:port``."""


def _listening_inodes(port: int) -> set[str]:
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            address, _, hex_port = fields[1].partition(":")
            if fields[3] == _LISTEN and int(hex_port, 16) == port and address in _LOOPBACK_OR_ANY:
                inodes.add(fields[9])
    return inodes


def loopback_listeners(port: int) -> list[str]:
    """Who listens on ``127.0.0.1:port`` (or on every address at it): ``pid N: command line``
    for each process holding such a socket that this user may see, so an error can say whom to
    stop."""
    sockets = {f"socket:[{inode}]" for inode in _listening_inodes(port)}
    found: list[str] = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or not sockets:
            continue
        try:
            held = any(os.readlink(fd) in sockets for fd in (proc / "fd").iterdir())
            argv = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if held:
            found.append(f"pid {proc.name}: {argv.strip()}")
    return found


def wait_released(ports: Iterable[int], *, timeout: float = 10.0) -> None:
    """Return once nothing listens on any of ``ports``: a stopped program has let them go."""
    waiting = set(ports)
    deadline = time.monotonic() + timeout
    while True:
        waiting = {port for port in waiting if is_listened_on(port)}
        if not waiting:
            return
        if time.monotonic() > deadline:
            raise OSError(f"ports {sorted(waiting)} are still listened on after {timeout:g} s")
        time.sleep(0.05)
