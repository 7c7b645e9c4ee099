"""The addresses of the install profile's pods, each up on the loopback interface while it runs.

See :class:`PodIpPool` for why these addresses, and :mod:`localkube.kubelet.profile`.
"""

from __future__ import annotations

import ipaddress
import secrets
import subprocess
import threading

from localkube.plane.settings import EXEC_POD_BLOCKS


class PodIpPool:
    """Pod addresses: ``198.18.x.2`` … ``198.18.x.254``, a random block of ``EXEC_POD_BLOCKS``.

    Each address is added to the loopback interface (``ip addr add A/32 dev lo``) while its pod
    runs, so it is reachable from this machine only, like an address on a pod network. Why not
    ``127.0.0.x``: the API server refuses loopback addresses in an EndpointSlice ("may not be in
    the loopback range"), so such a pod could never back a Service. 198.18.0.0/15 is reserved
    for network benchmarks (RFC 2544) and appears on no real network. A random block per
    kubelet keeps test runs on one machine apart; the blocks stay clear of a real node's bridges
    and of the Service range (see ``EXEC_POD_BLOCKS`` in :mod:`localkube.plane.settings`), so a
    real node running beside the test kubelets routes none of their pods' addresses.
    """

    def __init__(self, block: str | None = None) -> None:
        if block is None:
            block = secrets.choice(EXEC_POD_BLOCKS)
        self.network = ipaddress.IPv4Network(block)
        self._lock = threading.Lock()
        self._taken: dict[str, str] = {}

    def allocate(self, uid: str) -> str:
        """The pod's address (the same one again for the same pod uid), up on ``lo``."""
        with self._lock:
            for address, owner in self._taken.items():
                if owner == uid:
                    return address
            for host in list(self.network.hosts())[1:]:
                address = str(host)
                if address not in self._taken:
                    self._taken[address] = uid
                    break
            else:
                raise RuntimeError(f"no free pod address in {self.network}")
        _ip("add", address)
        return address

    def get(self, uid: str) -> str | None:
        """The pod's address if it has one."""
        with self._lock:
            return next((a for a, owner in self._taken.items() if owner == uid), None)

    def release(self, uid: str) -> None:
        with self._lock:
            gone = [a for a, owner in self._taken.items() if owner == uid]
            for address in gone:
                del self._taken[address]
        for address in gone:
            _ip("del", address)

    def release_all(self) -> None:
        with self._lock:
            gone, self._taken = list(self._taken), {}
        for address in gone:
            _ip("del", address)


def _ip(verb: str, address: str) -> None:
    """``ip addr add|del address/32 dev lo``; an address already there (or gone) is fine."""
    result = subprocess.run(
        ["ip", "addr", verb, f"{address}/32", "dev", "lo"],
        capture_output=True,
        text=True,
        check=False,
    )
    benign = ("File exists", "Cannot assign requested address")
    if result.returncode != 0 and not any(text in result.stderr for text in benign):
        raise RuntimeError(f"ip addr {verb} {address}/32 dev lo: {result.stderr.strip()}")
