"""The one writer of MXJobs (controller/job/job_writes.py): what it sends, what it keeps, and
that no other module of the controller writes an MXJob."""

from __future__ import annotations

import ast
import copy
from pathlib import Path

from controller.job.job_writes import MXJobWrites
from controller.runtime.client import mxjobs_path
from controller.runtime.store import Store
from tests.controller.fakes import FakeApi
from tests.controller.samples import job

CONTROLLER = Path(__file__).resolve().parents[3] / "controller"
WRITES = frozenset({"PUT", "PATCH", "POST", "DELETE"})


def stored() -> tuple[FakeApi, Store, MXJobWrites, dict[str, object]]:
    api, jobs = FakeApi(), Store()
    found = api.put_object(mxjobs_path("ns", "mnist"), job())
    jobs.apply("ADDED", copy.deepcopy(found))
    return api, jobs, MXJobWrites(api, jobs=jobs), found


def test_a_status_is_replaced_at_the_cached_version_and_written_through() -> None:
    api, jobs, writes, found = stored()
    writes.status(found, {"state": "Running"})
    [sent] = api.writes()
    assert (sent.method, sent.path) == ("PUT", mxjobs_path("ns", "mnist", subresource="status"))
    assert sent.body["metadata"]["resourceVersion"] == found["metadata"]["resourceVersion"]  # type: ignore[index]
    cached = jobs.get("ns/mnist")
    assert cached is not None and cached["status"] == {"state": "Running"}


def test_a_spec_change_leaves_the_status_subresource_out() -> None:
    api, jobs, writes, found = stored()
    changed = copy.deepcopy(found)
    changed["status"] = {"state": "Stale"}
    changed["spec"]["runPolicy"] = {"suspend": True}  # type: ignore[index]
    writes.spec(changed)
    [sent] = api.writes()
    assert (sent.method, sent.path) == ("PUT", mxjobs_path("ns", "mnist"))
    assert "status" not in sent.body and sent.body["spec"]["runPolicy"] == {"suspend": True}
    cached = jobs.get("ns/mnist")
    assert cached is not None and cached["spec"]["runPolicy"] == {"suspend": True}


def test_a_delete_names_the_uid_and_is_false_for_a_job_gone_or_replaced() -> None:
    api, _, writes, found = stored()
    uid = str(found["metadata"]["uid"])  # type: ignore[index]
    assert writes.delete(namespace="ns", name="mnist", uid=uid)
    [sent] = api.writes()
    assert sent.body == {"propagationPolicy": "Background", "preconditions": {"uid": uid}}
    assert not writes.delete(namespace="ns", name="mnist", uid=uid)


def mxjob_writes(path: Path) -> list[int]:
    """Lines of ``path`` that send a write (``request("PUT", mxjobs_path(...))``...)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "request"):
            continue
        args = node.args
        if (
            len(args) >= 2
            and isinstance(args[0], ast.Constant)
            and args[0].value in WRITES
            and isinstance(args[1], ast.Call)
            and getattr(args[1].func, "id", "") == "mxjobs_path"
        ):
            found.append(node.lineno)
    return found


def test_no_module_but_the_one_writer_writes_an_mxjob(tmp_path: Path) -> None:
    offenders = {
        str(path.relative_to(CONTROLLER)): lines
        for path in sorted(CONTROLLER.rglob("*.py"))
        if path.name != "job_writes.py" and (lines := mxjob_writes(path))
    }
    assert offenders == {}
    sample = tmp_path / "sample.py"
    sample.write_text(
        'client.request("PUT", mxjobs_path(ns, name), body=b)\n'
        'client.request("GET", mxjobs_path(ns, name))\n'
    )
    assert mxjob_writes(sample) == [1]
    assert mxjob_writes(CONTROLLER / "job" / "job_writes.py")
