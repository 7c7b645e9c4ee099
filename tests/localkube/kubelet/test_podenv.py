"""The env and command line exec mode gives a container, as a kubelet computes them."""

from __future__ import annotations

from typing import Any

import pytest

from localkube.kubelet.podenv import PodEnvError, field_ref, resolve_command, resolve_env

POD: dict[str, Any] = {
    "metadata": {
        "name": "job-worker-1",
        "namespace": "team",
        "uid": "1234",
        "labels": {"training.kubeflow.org/replica-index": "1", "app": "mx"},
        "annotations": {"tuner-server-key": "gpu"},
    },
    "spec": {"nodeName": "node-a"},
}


def _none(name: str, key: str) -> str | None:
    return None


def test_field_ref_reads_metadata_labels_annotations_and_node() -> None:
    assert field_ref(POD, "metadata.name") == "job-worker-1"
    assert field_ref(POD, "metadata.namespace") == "team"
    assert field_ref(POD, "metadata.uid") == "1234"
    assert field_ref(POD, "metadata.labels['training.kubeflow.org/replica-index']") == "1"
    assert field_ref(POD, "metadata.annotations['tuner-server-key']") == "gpu"
    assert field_ref(POD, "metadata.labels['missing']") == ""
    assert field_ref(POD, "spec.nodeName") == "node-a"
    assert field_ref(POD, "status.podIP") == "127.0.0.1"
    assert field_ref(POD, "metadata.labels") == 'app="mx"\ntraining.kubeflow.org/replica-index="1"'


def test_unsupported_field_path_is_a_config_error() -> None:
    with pytest.raises(PodEnvError, match=r"metadata\.generation"):
        field_ref(POD, "metadata.generation")


def test_env_is_resolved_in_order_with_expansion_of_earlier_names_only() -> None:
    container = {
        "env": [
            {"name": "LATER_REF", "value": "$(INDEX)"},
            {
                "name": "INDEX",
                "valueFrom": {
                    "fieldRef": {
                        "fieldPath": "metadata.labels['training.kubeflow.org/replica-index']"
                    }
                },
            },
            {"name": "ID", "value": "$(INDEX)"},
            {"name": "ESCAPED", "value": "$$(INDEX)"},
            {"name": "FROM_MAP", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "k"}}},
            {"name": "EMPTY"},
        ]
    }

    def config_map(name: str, key: str) -> str | None:
        return "v" if (name, key) == ("cfg", "k") else None

    env = resolve_env(POD, container, config_map=config_map, secret=_none)
    assert env == {
        "LATER_REF": "$(INDEX)",
        "INDEX": "1",
        "ID": "1",
        "ESCAPED": "$(INDEX)",
        "FROM_MAP": "v",
        "EMPTY": "",
    }


def test_missing_config_map_key_fails_unless_optional() -> None:
    required = {"env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]}
    with pytest.raises(PodEnvError, match="secret 's' has no key 'k'"):
        resolve_env(POD, required, config_map=_none, secret=_none)
    optional = {
        "env": [
            {
                "name": "X",
                "valueFrom": {"secretKeyRef": {"name": "s", "key": "k", "optional": True}},
            }
        ]
    }
    assert resolve_env(POD, optional, config_map=_none, secret=_none) == {}


def test_command_and_args_are_expanded_with_the_container_env() -> None:
    container = {"command": ["python", "$(SCRIPT)"], "args": ["--id=$(ID)", "$$(ID)", "$(NOPE)"]}
    argv = resolve_command(container, {"SCRIPT": "train.py", "ID": "3"})
    assert argv == ["python", "train.py", "--id=3", "$(ID)", "$(NOPE)"]


def test_a_container_without_command_cannot_run_locally() -> None:
    with pytest.raises(PodEnvError, match="no command"):
        resolve_command({"image": "x"}, {})


def test_the_pod_ip_is_the_pods_own_address_where_it_has_one() -> None:
    """The install profile gives each of its pods an address: the Downward API reads it."""
    pod = {**POD, "status": {"podIP": "198.18.40.7"}}
    assert field_ref(pod, "status.podIP") == "198.18.40.7"
    assert field_ref(pod, "status.podIPs") == "198.18.40.7"
