"""localkube.realnode.nfqueue: the diversion of the node's pod packets to kube-network-policies'
nfqueue, as rules (applying them needs root and the real node: tests/e2e)."""

from __future__ import annotations

from localkube.realnode.nfqueue import CHAIN, chain_rules


def test_node_root_and_established_traffic_pass_before_pod_packets_are_queued() -> None:
    rules = chain_rules("198.18.1.0/24", queue=100)
    assert all(rule[0] == CHAIN for rule in rules)
    assert rules[0][1:] == ["-m", "owner", "--uid-owner", "0", "-j", "RETURN"]
    assert rules[1][1:] == ["-m", "conntrack", "--ctstate", "ESTABLISHED,RELATED", "-j", "RETURN"]
    queued = [rule[1:] for rule in rules[2:]]
    assert queued == [
        ["-s", "198.18.1.0/24", "-j", "NFQUEUE", "--queue-num", "100"],
        ["-d", "198.18.1.0/24", "-j", "NFQUEUE", "--queue-num", "100"],
    ]


def test_no_rule_lets_packets_bypass_a_queue_nobody_reads() -> None:
    assert not any("--queue-bypass" in rule for rule in chain_rules("198.18.1.0/24", queue=7))
