"""The node's pod packets handed to an nfqueue, where a userspace NetworkPolicy enforcer
(kube-network-policies, localkube.thirdparty.network_policies) gives each its verdict.

Why this exists: kube-network-policies diverts packets with nftables' own ``queue`` expression
(``nft_queue``), which this machine's kernel lacks: its table is refused ("Could not process
rule: No such file or directory") while ``nfnetlink_queue`` and xtables' ``NFQUEUE`` target,
which nftables reaches through ``nft_compat`` as ``iptables-nft`` writes it, are built in. So
the node writes the same diversion that table would hold, with ``iptables-nft``, in a chain of
its own jumped to from ``ip mangle`` POSTROUTING (before source NAT, like the program's chain at
``srcnat - 5``): packets of the host's root user (the kubelet's probes, kube-apiserver's calls)
and of established connections pass; every other packet from or to the pod range goes to the
queue. The program's verdict does the rest (a pod no policy selects is accepted), as in its
admin-network-policy mode, which queues every packet too. No ``--queue-bypass``: while the rules
stand and nothing reads the queue, pod traffic is dropped, so :func:`remove` runs when the
enforcer stops and whenever the node goes down.
"""

from __future__ import annotations

import subprocess
from typing import Final

CHAIN: Final = "MXJOB-NETWORK-POLICIES"
TABLE: Final = "mangle"
HOOK: Final = "POSTROUTING"


class QueueRulesError(RuntimeError):
    """``iptables-nft`` refused a rule; the message has its error."""


def chain_rules(pod_cidr: str, *, queue: int) -> list[list[str]]:
    """The chain's rules, in order (``-A`` arguments without the table)."""
    to_queue = ["-j", "NFQUEUE", "--queue-num", str(queue)]
    return [
        [CHAIN, "-m", "owner", "--uid-owner", "0", "-j", "RETURN"],
        [CHAIN, "-m", "conntrack", "--ctstate", "ESTABLISHED,RELATED", "-j", "RETURN"],
        [CHAIN, "-s", pod_cidr, *to_queue],
        [CHAIN, "-d", pod_cidr, *to_queue],
    ]


def _iptables(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        ["iptables-nft", "-w", "-t", TABLE, *args], capture_output=True, text=True, check=False
    )
    if check and result.returncode != 0:
        raise QueueRulesError(f"iptables-nft -t {TABLE} {' '.join(args)}: {result.stderr.strip()}")
    return result


def install(pod_cidr: str, *, queue: int) -> None:
    """The chain and its jump, made anew (one a killed run left goes first)."""
    remove()
    _iptables("-N", CHAIN)
    for rule in chain_rules(pod_cidr, queue=queue):
        _iptables("-A", *rule)
    _iptables("-A", HOOK, "-j", CHAIN)


def installed() -> bool:
    return _iptables("-S", CHAIN, check=False).returncode == 0


def remove() -> None:
    """The jump and the chain gone; the ``ip mangle`` table too once nothing else is in it
    (iptables-nft made it for the chain). Safe when none of it exists."""
    while _iptables("-D", HOOK, "-j", CHAIN, check=False).returncode == 0:
        pass
    _iptables("-F", CHAIN, check=False)
    _iptables("-X", CHAIN, check=False)
    listed = _iptables("-S", check=False)
    if listed.returncode == 0 and all(
        line.startswith("-P ") for line in listed.stdout.splitlines()
    ):
        subprocess.run(["nft", "delete", "table", "ip", TABLE], capture_output=True, check=False)
