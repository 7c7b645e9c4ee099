"""Kueue's topology annotations: the podSet's request built as Kueue builds it, and Kueue's
rules for them, each refusal naming the annotation."""

from __future__ import annotations

import json
from typing import Any

import pytest

from shared import kueue_topology as tas
from shared.constants import LABEL_REPLICA_INDEX
from tests.helpers.mxjobs import mxjob, replica

RACK = "cloud.example.com/rack"
BLOCK = "cloud.example.com/block"


def job_with(**annotations_by_type: dict[str, str]) -> dict[str, Any]:
    """A job of the replica types named, each pod template carrying its annotations."""
    counts = {"Scheduler": 1, "Server": 2, "Worker": 4}
    replicas = {
        rtype: replica(counts[rtype], annotations=annotations)
        for rtype, annotations in annotations_by_type.items()
    }
    return mxjob(replicas=replicas)


def problems(**annotations_by_type: dict[str, str]) -> list[tuple[str, str]]:
    return tas.topology_problems(job_with(**annotations_by_type))


def test_no_annotation_asks_only_for_the_pod_index_which_kueue_does_not_count_as_tas() -> None:
    assert tas.topology_request({}) == {"podIndexLabel": LABEL_REPLICA_INDEX}


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        ({tas.REQUIRED: RACK}, {"required": RACK}),
        ({tas.PREFERRED: BLOCK}, {"preferred": BLOCK}),
        ({tas.UNCONSTRAINED: "true"}, {"unconstrained": True}),
        ({tas.UNCONSTRAINED: "F"}, {"unconstrained": False}),
        (
            {tas.REQUIRED: BLOCK, tas.SLICE_REQUIRED: RACK, tas.SLICE_SIZE: "2"},
            {"required": BLOCK, "podSetSliceRequiredTopology": RACK, "podSetSliceSize": 2},
        ),
        (
            {tas.PREFERRED: BLOCK, tas.GROUP_NAME: "ps"},
            {"preferred": BLOCK, "podSetGroupName": "ps"},
        ),
        ({tas.UNCONSTRAINED: "true", tas.GROUP_NAME: "ps"}, {"unconstrained": True}),
        (
            {tas.SLICE_CONSTRAINTS: json.dumps([{"topology": BLOCK, "size": 4}])},
            {"podsetSliceRequiredTopologyConstraints": [{"topology": BLOCK, "size": 4}]},
        ),
    ],
)
def test_the_request_is_what_kueues_kubeflow_integration_builds(
    annotations: dict[str, str], expected: dict[str, Any]
) -> None:
    assert tas.topology_request(annotations) == {**expected, "podIndexLabel": LABEL_REPLICA_INDEX}


def test_valid_annotations_on_every_type_pass() -> None:
    assert (
        problems(
            Scheduler={tas.REQUIRED: RACK, tas.GROUP_NAME: "ps"},
            Server={tas.PREFERRED: BLOCK},
            Worker={tas.REQUIRED: RACK, tas.GROUP_NAME: "ps"},
        )
        == []
    )


@pytest.mark.parametrize(
    ("annotations", "key", "words"),
    [
        ({tas.REQUIRED: RACK, tas.PREFERRED: RACK}, "", "more than one topology annotation"),
        ({tas.REQUIRED: "-rack-"}, tas.REQUIRED, "starting and ending with a letter or digit"),
        ({tas.PREFERRED: "Bad_Prefix/rack"}, tas.PREFERRED, "DNS subdomain"),
        ({tas.UNCONSTRAINED: "yes"}, tas.UNCONSTRAINED, "must be a boolean value (got 'yes')"),
        ({tas.GROUP_NAME: "7", tas.REQUIRED: RACK}, tas.GROUP_NAME, "must not be a number"),
        ({tas.GROUP_NAME: "ps"}, tas.GROUP_NAME, "neither"),
        ({tas.SLICE_REQUIRED: RACK}, tas.SLICE_SIZE, "must be set when"),
        ({tas.SLICE_SIZE: "2"}, tas.SLICE_SIZE, "may not be set when"),
        ({tas.SLICE_REQUIRED: RACK, tas.SLICE_SIZE: "x"}, tas.SLICE_SIZE, "numeric"),
        ({tas.SLICE_REQUIRED: RACK, tas.SLICE_SIZE: "0"}, tas.SLICE_SIZE, "greater than or"),
        ({tas.SLICE_REQUIRED: RACK, tas.SLICE_SIZE: "5"}, tas.SLICE_SIZE, "pod set count 4"),
        ({tas.SLICE_CONSTRAINTS: "[{"}, tas.SLICE_CONSTRAINTS, "valid JSON array"),
        ({tas.SLICE_CONSTRAINTS: "[]"}, tas.SLICE_CONSTRAINTS, "between 1 and 3"),
        (
            {tas.SLICE_CONSTRAINTS: json.dumps([{"topology": BLOCK, "size": 4},
                                                {"topology": RACK, "size": 3}])},
            tas.SLICE_CONSTRAINTS, "evenly divide the parent layer size 4",
        ),
        (
            {tas.SLICE_CONSTRAINTS: json.dumps([{"topology": RACK, "size": 2},
                                                {"topology": RACK, "size": 1}])},
            tas.SLICE_CONSTRAINTS, "duplicate",
        ),
    ],
)  # fmt: skip
def test_each_rule_names_the_annotation_and_what_is_allowed(
    annotations: dict[str, str], key: str, words: str
) -> None:
    found = problems(Worker=annotations)
    assert found, "expected a refusal"
    paths = [path for path, _ in found]
    base = "spec.mxReplicaSpecs.Worker.template.metadata.annotations"
    assert all(path.startswith(base) for path in paths)
    assert any(key in path and words in message for path, message in found), found


def test_a_group_is_two_podsets_one_of_them_a_single_replica_at_the_same_level() -> None:
    three = problems(
        Scheduler={tas.REQUIRED: RACK, tas.GROUP_NAME: "g"},
        Server={tas.REQUIRED: RACK, tas.GROUP_NAME: "g"},
        Worker={tas.REQUIRED: RACK, tas.GROUP_NAME: "g"},
    )
    assert len(three) == 3 and all("exactly 2 pod sets, got: 3" in m for _, m in three)
    no_single = problems(
        Server={tas.REQUIRED: RACK, tas.GROUP_NAME: "g"},
        Worker={tas.REQUIRED: RACK, tas.GROUP_NAME: "g"},
    )
    assert any("2 replica(s) and 4 replica(s)" in m for _, m in no_single)
    mismatched = problems(
        Scheduler={tas.REQUIRED: RACK, tas.GROUP_NAME: "g"},
        Worker={tas.PREFERRED: RACK, tas.GROUP_NAME: "g"},
    )
    assert {p for p, _ in mismatched} == {
        "spec.mxReplicaSpecs.Scheduler.template.metadata.annotations",
        "spec.mxReplicaSpecs.Worker.template.metadata.annotations",
    }
