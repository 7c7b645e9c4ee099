"""shared/env.py: the injected env, exactly, and what a process sees after `$(VAR)` expansion."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.defaults import apply_defaults
from shared.env import (
    REPLICA_INDEX_FIELD_PATH,
    escape_vars,
    expand_vars,
    expected_owned_env,
    job_layout,
    normalize_env_entry,
    owned_entries,
    replica_env,
    resolve_env,
)
from tests.helpers.mxjobs import container, replica
from tests.shared.shared_samples import (
    env_names,
    job,
    property_settings,
    single_node_job,
    train_job,
    tune_job,
)

INDEX_ENTRY = {
    "name": "MXJOB_REPLICA_INDEX",
    "valueFrom": {
        "fieldRef": {
            "apiVersion": "v1",
            "fieldPath": "metadata.labels['training.kubeflow.org/replica-index']",
        }
    },
}


def env_of(found: dict[str, Any], replica_type: str) -> list[dict[str, Any]]:
    """`replica_env` of ``found`` as defaulting makes it (the env reads defaulted counts and
    ports: shared/spec.py)."""
    return replica_env(apply_defaults(found, env=False), replica_type)


def pod_env(found: dict[str, Any], replica_type: str, index: int) -> dict[str, str]:
    """The env a process of pod `index` of `replica_type` sees (the test kubelet's view)."""
    labels = {"training.kubeflow.org/replica-index": str(index)}
    return resolve_env(env_of(found, replica_type), pod_metadata={"labels": labels})


def test_replica_index_comes_first_from_the_replica_index_label() -> None:
    assert REPLICA_INDEX_FIELD_PATH == "metadata.labels['training.kubeflow.org/replica-index']"
    for rtype in ("Scheduler", "Server", "Worker"):
        assert env_of(train_job(), rtype)[0] == INDEX_ENTRY
    assert env_of(tune_job(), "Tuner")[0] == INDEX_ENTRY


def test_train_worker_env_is_exactly_the_dmlc_set_then_mx_config() -> None:
    env = env_of(train_job("mnist", servers=2, workers=3), "Worker")
    assert env[:-1] == [
        INDEX_ENTRY,
        {"name": "DMLC_ROLE", "value": "worker"},
        {"name": "DMLC_PS_ROOT_URI", "value": "mnist-scheduler-0"},
        {"name": "DMLC_PS_ROOT_PORT", "value": "9091"},
        {"name": "DMLC_NUM_SERVER", "value": "2"},
        {"name": "DMLC_NUM_WORKER", "value": "3"},
        {"name": "DMLC_USE_KUBERNETES", "value": "1"},
        {"name": "DMLC_WORKER_ID", "value": "$(MXJOB_REPLICA_INDEX)"},
    ]
    assert env[-1]["name"] == "MX_CONFIG"


@pytest.mark.parametrize(("rtype", "role"), [("Scheduler", "scheduler"), ("Server", "server")])
def test_scheduler_and_server_get_their_role_and_no_worker_id(rtype: str, role: str) -> None:
    env = env_of(train_job(), rtype)
    assert env_names(env) == [
        "MXJOB_REPLICA_INDEX",
        "DMLC_ROLE",
        "DMLC_PS_ROOT_URI",
        "DMLC_PS_ROOT_PORT",
        "DMLC_NUM_SERVER",
        "DMLC_NUM_WORKER",
        "DMLC_USE_KUBERNETES",
        "MX_CONFIG",
    ]
    assert env[1] == {"name": "DMLC_ROLE", "value": role}


def test_worker_mx_config_after_expansion_for_index_1_is_this_json() -> None:
    seen = pod_env(train_job("mnist", servers=1, workers=2), "Worker", 1)
    assert seen["MX_CONFIG"] == (
        '{"cluster":{"scheduler":[{"url":"mnist-scheduler-0","port":9091}],'
        '"server":[{"url":"mnist-server-0","port":9091}],'
        '"worker":[{"url":"mnist-worker-0","port":9091},{"url":"mnist-worker-1","port":9091}]},'
        '"labels":{"scheduler":"","server":"","worker":""},"task":{"type":"worker","index":1}}'
    )
    assert json.loads(seen["MX_CONFIG"])["task"] == {"type": "worker", "index": 1}
    assert seen["DMLC_WORKER_ID"] == "1"
    assert seen["MXJOB_REPLICA_INDEX"] == "1"


def test_mx_config_in_the_template_leaves_the_index_to_expansion() -> None:
    entries = {e["name"]: e for e in env_of(train_job("mnist"), "Server")}
    value = entries["MX_CONFIG"]["value"]
    assert value.endswith('"task":{"type":"server","index":$(MXJOB_REPLICA_INDEX)}}')


def test_mx_config_lists_every_replica_type_with_its_own_port() -> None:
    scheduler = container(ports=[{"name": "mxjob-port", "containerPort": 9000}])
    server = container(ports=[{"name": "mxjob-port", "containerPort": 9001}])
    found = job(
        "p",
        "MXTrain",
        {
            "Worker": replica(1),
            "Server": replica(1, containers=[server]),
            "Scheduler": replica(1, containers=[scheduler]),
        },
    )
    cluster = json.loads(pod_env(found, "Scheduler", 0)["MX_CONFIG"])["cluster"]
    assert list(cluster) == ["scheduler", "server", "worker"]  # canonical, not spec order
    assert cluster == {
        "scheduler": [{"url": "p-scheduler-0", "port": 9000}],
        "server": [{"url": "p-server-0", "port": 9001}],
        "worker": [{"url": "p-worker-0", "port": 9091}],
    }


def test_a_user_port_9999_is_used_in_root_port_and_mx_config() -> None:
    ports = [{"name": "mxjob-port", "containerPort": 9999}]
    found = job(
        "p",
        "MXTrain",
        {"Scheduler": replica(1, containers=[container(ports=ports)]), "Worker": replica(1)},
    )
    seen = pod_env(found, "Worker", 0)
    assert seen["DMLC_PS_ROOT_PORT"] == "9999"
    assert json.loads(seen["MX_CONFIG"])["cluster"]["scheduler"] == [
        {"url": "p-scheduler-0", "port": 9999}
    ]


def test_zero_replicas_give_an_empty_cluster_list_and_a_zero_count() -> None:
    found = train_job("z", servers=0, workers=0)
    seen = pod_env(found, "Scheduler", 0)
    assert seen["DMLC_NUM_SERVER"] == "0"
    assert seen["DMLC_NUM_WORKER"] == "0"
    assert json.loads(seen["MX_CONFIG"])["cluster"]["server"] == []


TRACKER_ENV = ["TVM_TRACKER_HOST", "TVM_TRACKER_PORT"]


def test_tune_env_is_the_index_the_tracker_set_and_mx_config_with_the_tuner_server_key() -> None:
    found = tune_job("tvm", tuner_servers=2, key="rpc-key")
    client_names = ["MXJOB_REPLICA_INDEX", *TRACKER_ENV, "TVM_TRACKER_KEY", "MX_CONFIG"]
    assert env_names(env_of(found, "TunerServer")) == client_names
    assert env_names(env_of(found, "Tuner")) == client_names
    # The tracker serves every key: it gets its own address only.
    assert env_names(env_of(found, "TunerTracker")) == [
        "MXJOB_REPLICA_INDEX",
        *TRACKER_ENV,
        "MX_CONFIG",
    ]
    seen = pod_env(found, "TunerServer", 1)
    assert (seen["TVM_TRACKER_HOST"], seen["TVM_TRACKER_PORT"], seen["TVM_TRACKER_KEY"]) == (
        "tvm-tunertracker-0",
        "9091",
        "rpc-key",
    )
    # MX_CONFIG is what training-operator injects, unchanged beside the new entries.
    assert json.loads(seen["MX_CONFIG"]) == {
        "cluster": {
            "tunertracker": [{"url": "tvm-tunertracker-0", "port": 9091}],
            "tunerserver": [
                {"url": "tvm-tunerserver-0", "port": 9091},
                {"url": "tvm-tunerserver-1", "port": 9091},
            ],
            "tuner": [{"url": "tvm-tuner-0", "port": 9091}],
        },
        "labels": {"tunertracker": "", "tunerserver": "rpc-key", "tuner": ""},
        "task": {"type": "tunerserver", "index": 1},
    }


def test_the_tracker_env_is_the_trackers_port_and_service_name_from_its_template() -> None:
    ports = [{"name": "mxjob-port", "containerPort": 9190}]
    found = tune_job("t")
    found["spec"]["mxReplicaSpecs"]["TunerTracker"] = replica(
        1, containers=[container(ports=ports)]
    )
    for rtype in ("TunerTracker", "TunerServer", "Tuner"):
        seen = pod_env(found, rtype, 0)
        assert (seen["TVM_TRACKER_HOST"], seen["TVM_TRACKER_PORT"]) == ("t-tunertracker-0", "9190")


def test_a_tune_job_without_a_tracker_gets_an_empty_tracker_address_and_port_0() -> None:
    found = tune_job("t")
    del found["spec"]["mxReplicaSpecs"]["TunerTracker"]
    seen = pod_env(found, "Tuner", 0)
    assert (seen["TVM_TRACKER_HOST"], seen["TVM_TRACKER_PORT"]) == ("", "0")


def test_without_a_tuner_server_key_the_tracker_key_is_empty_like_the_label() -> None:
    seen = pod_env(tune_job(key=None), "Tuner", 0)
    assert seen["TVM_TRACKER_KEY"] == ""
    assert json.loads(seen["MX_CONFIG"])["labels"]["tunerserver"] == ""


def test_train_replicas_get_no_tracker_env() -> None:
    for rtype in ("Scheduler", "Server", "Worker"):
        assert not {n for n in env_names(env_of(train_job(), rtype)) if n.startswith("TVM_")}


@property_settings()
@given(
    name=st.from_regex(r"[a-z][a-z0-9-]{0,10}[a-z0-9]", fullmatch=True),
    servers=st.integers(min_value=1, max_value=4),
    port=st.integers(min_value=1, max_value=65535),
    key=st.one_of(st.none(), st.text(min_size=1, max_size=12)),
    rtype=st.sampled_from(["TunerServer", "Tuner"]),
)
def test_the_tracker_env_says_what_mx_config_says(
    name: str, servers: int, port: int, key: str | None, rtype: str
) -> None:
    """A script that read the tracker from MX_CONFIG and one that lets TVM read the env reach
    the same tracker with the same key."""
    found = tune_job(name, tuner_servers=servers, key=key)
    ports = [{"name": "mxjob-port", "containerPort": port}]
    found["spec"]["mxReplicaSpecs"]["TunerTracker"] = replica(
        1, containers=[container(ports=ports)]
    )
    seen = pod_env(found, rtype, 0)
    config = json.loads(seen["MX_CONFIG"])
    [tracker] = config["cluster"]["tunertracker"]
    assert seen["TVM_TRACKER_HOST"] == tracker["url"]
    assert int(seen["TVM_TRACKER_PORT"]) == tracker["port"] == port
    assert seen["TVM_TRACKER_KEY"] == config["labels"]["tunerserver"] == (key or "")


def test_labels_name_every_replica_type_with_empty_keys_without_a_tuner_server_key() -> None:
    """Scripts written for training-operator read `labels["tunerserver"]` unconditionally."""
    found = tune_job(key=None)
    labels = json.loads(pod_env(found, "Tuner", 0)["MX_CONFIG"])["labels"]
    assert labels == {"tunertracker": "", "tunerserver": "", "tuner": ""}


def test_a_dollar_in_the_tuner_server_key_survives_expansion() -> None:
    found = tune_job(key="k$(HOME)$$x")
    env = env_of(found, "Tuner")
    seen = resolve_env(
        [{"name": "HOME", "value": "/root"}, *env],
        pod_metadata={"labels": {"training.kubeflow.org/replica-index": "0"}},
    )
    assert json.loads(seen["MX_CONFIG"])["labels"]["tunerserver"] == "k$(HOME)$$x"
    assert seen["TVM_TRACKER_KEY"] == "k$(HOME)$$x"


def test_single_node_worker_gets_a_cluster_of_one_worker_and_no_scheduler_address() -> None:
    seen = pod_env(single_node_job("solo"), "Worker", 0)
    # No Scheduler, so no Service "solo-scheduler-0" will exist: an empty root address and
    # port 0 make a dist_* kvstore fail at once instead of waiting for it.
    assert seen["DMLC_PS_ROOT_URI"] == ""
    assert seen["DMLC_PS_ROOT_PORT"] == "0"
    assert seen["DMLC_ROLE"] == "worker"
    assert seen["DMLC_NUM_SERVER"] == "0"
    assert seen["DMLC_NUM_WORKER"] == "1"
    assert seen["DMLC_WORKER_ID"] == "0"
    assert json.loads(seen["MX_CONFIG"]) == {
        "cluster": {"worker": [{"url": "solo-worker-0", "port": 9091}]},
        "labels": {"worker": ""},
        "task": {"type": "worker", "index": 0},
    }


def test_non_canonical_keys_give_the_same_env_as_canonical_ones() -> None:
    canonical = train_job("c")
    lower = job(
        "c", "MXTrain", {k.lower(): v for k, v in canonical["spec"]["mxReplicaSpecs"].items()}
    )
    for rtype in ("Scheduler", "Server", "Worker"):
        assert env_of(lower, rtype) == env_of(canonical, rtype)
        assert env_of(canonical, rtype.lower()) == env_of(canonical, rtype)


def test_a_job_without_a_valid_mode_gets_only_the_index_and_mx_config() -> None:
    found = train_job()
    found["spec"]["jobMode"] = "Bogus"
    assert env_names(env_of(found, "Worker")) == ["MXJOB_REPLICA_INDEX", "MX_CONFIG"]


def test_expected_owned_env_keys_the_entries_by_name() -> None:
    found = train_job()
    expected = expected_owned_env(job_layout(apply_defaults(found, env=False)), "Worker")
    assert list(expected) == env_names(env_of(found, "Worker"))
    assert expected["DMLC_ROLE"] == {"name": "DMLC_ROLE", "value": "worker"}


@property_settings()
@given(
    name=st.from_regex(r"[a-z][a-z0-9-]{0,10}[a-z0-9]", fullmatch=True),
    servers=st.integers(min_value=0, max_value=4),
    workers=st.integers(min_value=1, max_value=6),
    data=st.data(),
)
def test_mx_config_expands_to_json_with_the_pods_integer_index(
    name: str, servers: int, workers: int, data: st.DataObject
) -> None:
    found = train_job(name, servers=servers, workers=workers)
    index = data.draw(st.integers(min_value=0, max_value=workers - 1))
    config = json.loads(pod_env(found, "Worker", index)["MX_CONFIG"])
    assert config["task"] == {"type": "worker", "index": index}
    assert [w["url"] for w in config["cluster"]["worker"]] == [
        f"{name}-worker-{i}" for i in range(workers)
    ]
    assert len(config["cluster"]["server"]) == servers


# --- $(VAR) expansion, the kubelet's rules ---------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("plain", "plain"),
        ("$(A)", "1"),
        ("x$(A)y$(B)z", "x1y2z"),
        ("$(UNKNOWN)", "$(UNKNOWN)"),
        ("$$(A)", "$(A)"),
        ("$$$(A)", "$1"),
        ("$$", "$"),
        ("a$b", "a$b"),
        ("$", "$"),
        ("end$", "end$"),
        ("$(A", "$(A"),
        ("$(", "$("),
        ("$()", "$()"),
        ("$(A)$(A)", "11"),
        ("$(A$(B)", "$(A$(B)"),
        ("$(EMPTY)x", "x"),
        ("é$(A)", "é1"),
    ],
)
def test_expand_vars_follows_the_kubelet(value: str, expected: str) -> None:
    assert expand_vars(value, {"A": "1", "B": "2", "EMPTY": ""}) == expected


def test_expanded_values_are_not_expanded_again() -> None:
    assert expand_vars("$(A)", {"A": "$(B)", "B": "no"}) == "$(B)"


@property_settings()
@given(st.text(), st.dictionaries(st.text(max_size=3), st.text(max_size=3)))
def test_escaped_text_expands_to_itself(text: str, env: dict[str, str]) -> None:
    assert expand_vars(escape_vars(text), env) == text


def test_resolve_env_expands_over_earlier_entries_only() -> None:
    entries = [
        {"name": "A", "value": "a"},
        {"name": "B", "value": "$(A)-$(C)"},
        {"name": "C", "value": "c"},
    ]
    assert resolve_env(entries, pod_metadata={}) == {"A": "a", "B": "a-$(C)", "C": "c"}


def test_resolve_env_reads_the_downward_api_from_pod_metadata() -> None:
    def ref(path: str) -> dict[str, Any]:
        return {"valueFrom": {"fieldRef": {"fieldPath": path}}}

    entries = [
        {"name": "L", **ref("metadata.labels['k']")},
        {"name": "A", **ref("metadata.annotations['a/b']")},
        {"name": "N", **ref("metadata.name")},
        {"name": "NS", **ref("metadata.namespace")},
        {"name": "MISSING", **ref("metadata.labels['nope']")},
        {"name": "NODE", **ref("spec.nodeName")},
        {"name": "S", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
        {"name": "USE", "value": "$(L)/$(N)"},
    ]
    metadata = {"name": "p", "namespace": "ns", "labels": {"k": "v"}, "annotations": {"a/b": "x"}}
    assert resolve_env(entries, pod_metadata=metadata) == {
        "L": "v",
        "A": "x",
        "N": "p",
        "NS": "ns",
        "MISSING": "",
        "USE": "v/p",
    }


def test_resolve_env_lets_a_later_entry_override_an_earlier_one() -> None:
    entries = [{"name": "A", "value": "1"}, {"name": "A", "value": "$(A)2"}]
    assert resolve_env(entries, pod_metadata={}) == {"A": "12"}


def test_resolve_env_skips_malformed_entries() -> None:
    entries = ["x", {"value": "v"}, {"name": 3}, {"name": "OK", "value": 5}, {"name": "Y"}]
    assert resolve_env(entries, pod_metadata={}) == {"OK": "", "Y": ""}


# --- comparing entries ----------------------------------------------------------------------


def test_normalize_env_entry_defaults_field_ref_api_version_and_drops_empty_value() -> None:
    bare = {"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}
    assert normalize_env_entry(bare) == {
        "name": "X",
        "valueFrom": {"fieldRef": {"fieldPath": "metadata.name", "apiVersion": "v1"}},
    }
    assert normalize_env_entry({"name": "X", "value": ""}) == {"name": "X"}
    assert bare == {"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}


def test_owned_entries_finds_positions_of_named_entries_only() -> None:
    env = [{"name": "A"}, "junk", {"name": ["DMLC_ROLE"]}, {"name": "DMLC_ROLE", "value": "x"}]
    assert owned_entries(env, {"DMLC_ROLE"}) == [(3, {"name": "DMLC_ROLE", "value": "x"})]
