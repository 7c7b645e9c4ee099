"""Host entries for exec mode: added per owner, removed per owner, other lines untouched."""

from __future__ import annotations

from pathlib import Path

from localkube.kubelet import hostsfile


def test_entries_are_added_and_removed_per_owner_without_touching_other_lines(
    tmp_path: Path,
) -> None:
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1 localhost\n::1 localhost ip6-localhost\n")
    hostsfile.add(hosts, ["job-scheduler-0", "job-scheduler-0.ns.svc"], owner="ns/job-scheduler-0")
    hostsfile.add(hosts, ["job-worker-0"], owner="ns/job-worker-0")
    lines = hosts.read_text().splitlines()
    assert lines[:2] == ["127.0.0.1 localhost", "::1 localhost ip6-localhost"]
    assert lines[2].startswith("127.0.0.1 job-scheduler-0 job-scheduler-0.ns.svc # localkube")
    assert lines[3].startswith("127.0.0.1 job-worker-0 # localkube")

    hostsfile.add(hosts, ["job-scheduler-0"], owner="ns/job-scheduler-0")
    scheduler_lines = [
        line for line in hosts.read_text().splitlines() if "owner=ns/job-scheduler-0" in line
    ]
    assert scheduler_lines == [scheduler_lines[0]], "re-adding replaces the owner's line"
    assert scheduler_lines[0].startswith("127.0.0.1 job-scheduler-0 # localkube")

    hostsfile.remove(hosts, owner="ns/job-scheduler-0")
    assert "job-scheduler-0" not in hosts.read_text()
    assert "job-worker-0" in hosts.read_text()

    hostsfile.remove_all(hosts)
    assert hosts.read_text() == "127.0.0.1 localhost\n::1 localhost ip6-localhost\n"
