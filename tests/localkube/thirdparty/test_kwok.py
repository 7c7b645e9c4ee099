"""localkube.thirdparty.kwok: the stages kwok plays and the nodes it is given (no process
started)."""

from __future__ import annotations

import yaml

from localkube.thirdparty.kwok import (
    EXIT_CODE_ANNOTATION,
    EXIT_STAGE,
    NODE_ANNOTATION,
    NODE_ANNOTATION_VALUE,
    PODS_PER_NODE,
    READY_STAGE,
    module_source,
    node,
    nodes_for,
    stages,
)


def test_kwoks_own_fast_stages_come_from_the_pinned_module_then_ours() -> None:
    played = stages()
    assert [s["metadata"]["name"] for s in played] == [
        "node-initialize",
        "pod-delete",
        "pod-ready",
        "pod-exit",
    ]
    assert all(s["kind"] == "Stage" for s in played)
    assert played[-2:] == [READY_STAGE, EXIT_STAGE]


def test_a_ready_pod_gets_running_containers_and_no_ip() -> None:
    """kwok's own pod-ready hands out an IP per attempt: a retried patch carries two, which
    the API server refuses, and the pod would stay Pending."""
    template = READY_STAGE["spec"]["next"]["statusTemplate"]
    assert "phase: Running" in template and "running:" in template
    assert "podIP" not in template and "PodIPsWith" not in template
    kwoks = yaml.safe_load(
        (module_source() / "kustomize" / "stage" / "pod" / "fast" / "pod-ready.yaml").read_text()
    )
    assert (
        READY_STAGE["spec"]["selector"]["matchExpressions"][:2]
        == kwoks["spec"]["selector"]["matchExpressions"][:2]
    )


def test_the_exit_stage_ends_only_running_pods_the_driver_annotated() -> None:
    expressions = EXIT_STAGE["spec"]["selector"]["matchExpressions"]
    keys = {e["key"]: e["operator"] for e in expressions}
    assert keys[f'.metadata.annotations["{EXIT_CODE_ANNOTATION}"]'] == "Exists"
    assert keys[".metadata.deletionTimestamp"] == "DoesNotExist"
    template = EXIT_STAGE["spec"]["next"]["statusTemplate"]
    # The exit code the controller reads (controller/job/observed.py) and the phase it implies.
    assert "exitCode: {{ $code }}" in template
    assert 'phase: {{ if eq $code "0" }}Succeeded{{ else }}Failed{{ end }}' in template


def test_a_node_is_marked_for_kwok_and_sized_as_a_kubelet_would_be() -> None:
    created = node("kwok-node-0")
    assert created["metadata"]["annotations"] == {NODE_ANNOTATION: NODE_ANNOTATION_VALUE}
    assert created["status"]["capacity"]["pods"] == str(PODS_PER_NODE)
    assert created["status"]["allocatable"] == created["status"]["capacity"]


def test_enough_nodes_for_every_pod_and_one_to_spare() -> None:
    assert nodes_for(1) == 2
    assert nodes_for(PODS_PER_NODE) == 2
    assert nodes_for(PODS_PER_NODE + 1) == 3
    assert nodes_for(20_000) * PODS_PER_NODE >= 20_000 + PODS_PER_NODE
