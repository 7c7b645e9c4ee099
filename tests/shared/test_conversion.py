"""shared/conversion.py: v1beta1 <-> v1, field by field, and lossless both ways for any object."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.constants import CONVERSION_DATA_ANNOTATION as STASH
from shared.conversion import ConversionError, api_version, convert
from shared.defaults import apply_defaults
from tests.helpers.mxjobs import mxjob, replica
from tests.shared.shared_samples import (
    conversion_objects,
    json_objects,
    mutated_jobs,
    property_settings,
    seed_applied,
    seed_listing,
    train_job,
    tune_job,
    valid_jobs,
)

Job = dict[str, Any]
V1 = "kubeflow.org/v1"
V1BETA1 = "kubeflow.org/v1beta1"
OTHER = {V1: V1BETA1, V1BETA1: V1}


def stash_of(found: Job) -> dict[str, Any] | None:
    text = found.get("metadata", {}).get("annotations", {}).get(STASH)
    return None if text is None else dict(json.loads(text))


def beta(spec: Job, **top: Any) -> Job:
    """A v1beta1 job ``j`` of exactly ``spec`` (and the fields ``top``)."""
    return mxjob("j", api_version=V1BETA1, mode=None, replicas=None, spec={**spec, **top})


def v1(spec: Job) -> Job:
    """A v1 job ``j`` of exactly ``spec``."""
    return mxjob("j", mode=None, replicas=None, spec=spec)


# --- the seed ----------------------------------------------------------------------------------


def test_the_seed_listing_converts_to_this_v1_object() -> None:
    listing = seed_listing()
    expected = copy.deepcopy(listing)
    expected["apiVersion"] = V1
    del expected["spec"]["cleanPodPolicy"]
    expected["spec"]["runPolicy"] = {"cleanPodPolicy": "All"}
    expected["status"]["replicaStatuses"] = expected["status"].pop("mxReplicaStatuses")
    assert convert(listing, V1) == expected
    assert stash_of(expected) is None


def test_the_seed_listing_reads_back_identically_through_v1beta1() -> None:
    listing = seed_listing()
    assert convert(convert(listing, V1), V1BETA1) == listing


def test_the_applied_seed_stored_as_defaulted_v1_reads_back_through_v1beta1() -> None:
    stored = apply_defaults(convert(seed_applied(), V1))
    read = convert(stored, V1BETA1)
    assert read["spec"]["cleanPodPolicy"] == "All"
    assert read["spec"]["backoffLimit"] == 6
    assert "runPolicy" not in read["spec"]
    assert {r["restartScope"] for r in read["spec"]["mxReplicaSpecs"].values()} == {"Job"}
    # The defaulted disruptionPolicy has no place in v1beta1: it waits in the stash.
    assert stash_of(read) == {"from": V1, "runPolicy": {"disruptionPolicy": "Ignore"}}
    assert convert(read, V1) == stored


# --- versions ----------------------------------------------------------------------------------


def test_the_same_version_is_a_deep_copy_unchanged() -> None:
    found = train_job(runPolicy={"suspend": True})
    converted = convert(found, V1)
    assert converted == found
    assert converted is not found
    converted["spec"]["runPolicy"]["suspend"] = False
    assert found["spec"]["runPolicy"]["suspend"] is True


def test_bare_and_full_version_names_are_accepted() -> None:
    assert api_version("v1") == V1
    assert api_version(V1BETA1) == V1BETA1
    assert convert(train_job(), "v1beta1") == convert(train_job(), V1BETA1)


@pytest.mark.parametrize("target", ["v2", "kubeflow.org/v2", "batch/v1", "", "kubeflow.org"])
def test_an_unserved_target_version_is_a_conversion_error(target: str) -> None:
    with pytest.raises(ConversionError, match="unsupported version"):
        convert(train_job(), target)


@pytest.mark.parametrize("source", [None, "v1", "kubeflow.org/v1alpha1", "batch/v1", 3])
def test_an_unserved_source_version_is_a_conversion_error(source: Any) -> None:
    found = train_job()
    found["apiVersion"] = source
    with pytest.raises(ConversionError, match="cannot convert apiVersion"):
        convert(found, V1BETA1)


def test_a_conversion_error_is_a_value_error_and_non_objects_are_refused() -> None:
    assert issubclass(ConversionError, ValueError)
    with pytest.raises(ConversionError, match="JSON object"):
        convert([], V1)  # type: ignore[arg-type]


def test_convert_does_not_modify_its_input() -> None:
    found = train_job(runPolicy={"suspend": True, "backoffLimit": 1}, cleanPodPolicy="All")
    before = copy.deepcopy(found)
    convert(found, V1BETA1)
    assert found == before


# --- run policy --------------------------------------------------------------------------------


def test_v1beta1_run_policy_fields_move_under_run_policy() -> None:
    spec = {"jobMode": "MXTrain", "mxReplicaSpecs": {}, "successPolicy": "AllWorkers"}
    top = {
        "cleanPodPolicy": "None",
        "ttlSecondsAfterFinished": 60,
        "activeDeadlineSeconds": 600,
        "backoffLimit": 3,
    }
    converted = convert(beta(spec, **top), V1)
    assert converted["spec"] == {**spec, "runPolicy": top}
    assert stash_of(converted) is None


def test_a_v1beta1_job_without_run_policy_fields_gets_no_run_policy() -> None:
    converted = convert(beta({"jobMode": "MXTrain"}), V1)
    assert converted["spec"] == {"jobMode": "MXTrain"}


def test_v1_only_run_policy_fields_are_stashed_and_restored() -> None:
    policy = {
        "backoffLimit": 2,
        "suspend": True,
        "schedulingPolicy": {"minAvailable": 2},
        "managedBy": "kueue.x-k8s.io/multikueue",
    }
    found = v1({"jobMode": "MXTrain", "runPolicy": policy})
    converted = convert(found, V1BETA1)
    assert converted["spec"] == {"jobMode": "MXTrain", "backoffLimit": 2}
    assert stash_of(converted) == {
        "from": V1,
        "runPolicy": {
            "suspend": True,
            "schedulingPolicy": {"minAvailable": 2},
            "managedBy": "kueue.x-k8s.io/multikueue",
        },
    }
    back = convert(converted, V1)
    assert back == found
    assert "annotations" not in back["metadata"]


def test_the_gang_topology_and_priority_survive_a_v1beta1_round_trip() -> None:
    """v1beta1 has no schedulingPolicy: topologyKey and priorityClass ride in the stash."""
    scheduling = {"topologyKey": "topology.kubernetes.io/rack", "priorityClass": "high"}
    found = v1({"jobMode": "MXTrain", "runPolicy": {"schedulingPolicy": scheduling}})
    converted = convert(found, V1BETA1)
    assert "schedulingPolicy" not in json.dumps(converted["spec"])
    assert convert(converted, V1) == found


def test_an_edit_through_v1beta1_wins_over_the_stash() -> None:
    found = v1({"jobMode": "MXTrain", "runPolicy": {"backoffLimit": 2, "suspend": True}})
    read = convert(found, V1BETA1)
    read["spec"]["backoffLimit"] = 5
    read["spec"]["cleanPodPolicy"] = "All"
    assert convert(read, V1)["spec"]["runPolicy"] == {
        "backoffLimit": 5,
        "cleanPodPolicy": "All",
        "suspend": True,
    }


def test_an_empty_v1_run_policy_survives_the_round_trip() -> None:
    found = v1({"jobMode": "MXTrain", "runPolicy": {}})
    converted = convert(found, V1BETA1)
    assert stash_of(converted) == {"from": V1, "runPolicy": {}}
    assert convert(converted, V1) == found


def test_v1_fields_written_under_spec_stay_under_spec_through_the_round_trip() -> None:
    found = v1({"jobMode": "MXTrain", "backoffLimit": 1, "runPolicy": {"cleanPodPolicy": "All"}})
    converted = convert(found, V1BETA1)
    assert converted["spec"] == {"jobMode": "MXTrain", "backoffLimit": 1, "cleanPodPolicy": "All"}
    assert stash_of(converted) == {"from": V1, "topLevel": ["backoffLimit"]}
    assert convert(converted, V1) == found


def test_a_v1_field_set_in_both_places_keeps_both_values() -> None:
    found = v1({"jobMode": "MXTrain", "backoffLimit": 1, "runPolicy": {"backoffLimit": 4}})
    converted = convert(found, V1BETA1)
    assert converted["spec"]["backoffLimit"] == 4
    assert stash_of(converted) == {"from": V1, "spec": {"backoffLimit": 1}}
    assert convert(converted, V1) == found


def test_fields_added_through_v1beta1_stay_under_spec_when_run_policy_is_not_an_object() -> None:
    found = v1({"jobMode": "MXTrain", "runPolicy": "broken"})
    read = convert(found, V1BETA1)
    assert stash_of(read) == {"from": V1, "runPolicy": "broken"}
    read["spec"]["backoffLimit"] = 3
    stored = convert(read, V1)
    assert stored["spec"] == {"jobMode": "MXTrain", "runPolicy": "broken", "backoffLimit": 3}


def test_a_run_policy_key_in_a_v1beta1_object_is_stashed() -> None:
    found = beta({"jobMode": "MXTrain", "runPolicy": {"backoffLimit": 9}}, backoffLimit=1)
    converted = convert(found, V1)
    assert converted["spec"]["runPolicy"] == {"backoffLimit": 1}
    assert stash_of(converted) == {"from": V1BETA1, "spec": {"runPolicy": {"backoffLimit": 9}}}
    assert convert(converted, V1BETA1) == found


# --- tuner-server key ----------------------------------------------------------------------------


def test_the_v1beta1_label_becomes_the_tuner_server_key_annotation() -> None:
    spec = {"jobMode": "MXTune", "mxReplicaSpecs": {"TunerServer": {"label": "k", "replicas": 2}}}
    converted = convert(beta(spec), V1)
    assert converted["spec"]["mxReplicaSpecs"]["TunerServer"] == {
        "replicas": 2,
        "template": {"metadata": {"annotations": {"tuner-server-key": "k"}}},
    }
    assert stash_of(converted) is None
    assert convert(converted, V1BETA1) == beta(spec)


def test_the_tuner_server_key_annotation_becomes_the_label() -> None:
    found = tune_job(key="rpc")
    converted = convert(found, V1BETA1)
    server = converted["spec"]["mxReplicaSpecs"]["TunerServer"]
    assert server["label"] == "rpc"
    assert "metadata" not in server["template"]
    assert stash_of(converted) is None
    assert convert(converted, V1) == found


def test_a_label_on_any_replica_maps_to_its_template_annotation() -> None:
    spec = {
        "mxReplicaSpecs": {
            "Worker": {"label": "w", "template": {"metadata": {"labels": {"a": "b"}}}}
        }
    }
    converted = convert(beta(spec), V1)
    assert converted["spec"]["mxReplicaSpecs"]["Worker"]["template"]["metadata"] == {
        "labels": {"a": "b"},
        "annotations": {"tuner-server-key": "w"},
    }


def test_a_v1beta1_replica_with_label_and_annotation_keeps_both() -> None:
    template = {"metadata": {"annotations": {"tuner-server-key": "old", "x": "y"}}}
    spec = {"mxReplicaSpecs": {"TunerServer": {"label": "new", "template": template}}}
    found = beta(spec)
    converted = convert(found, V1)
    annotations = converted["spec"]["mxReplicaSpecs"]["TunerServer"]["template"]["metadata"][
        "annotations"
    ]
    assert annotations == {"tuner-server-key": "new", "x": "y"}
    assert stash_of(converted) == {
        "from": V1BETA1,
        "replicas": {"TunerServer": {"annotation": "old"}},
    }
    assert convert(converted, V1BETA1) == found


def test_a_v1beta1_annotation_without_label_is_not_read_as_a_label() -> None:
    template = {"metadata": {"annotations": {"tuner-server-key": "ann"}}, "spec": {}}
    found = beta({"mxReplicaSpecs": {"TunerServer": {"template": template}}})
    converted = convert(found, V1)
    assert converted["spec"]["mxReplicaSpecs"]["TunerServer"]["template"] == {"spec": {}}
    assert convert(converted, V1BETA1) == found


def test_a_v1_replica_label_field_clashing_with_the_v1beta1_label_is_stashed() -> None:
    found = tune_job(key="rpc")
    found["spec"]["mxReplicaSpecs"]["TunerServer"]["label"] = "stray"
    converted = convert(found, V1BETA1)
    assert converted["spec"]["mxReplicaSpecs"]["TunerServer"]["label"] == "rpc"
    assert stash_of(converted) == {"from": V1, "replicas": {"TunerServer": {"label": "stray"}}}
    assert convert(converted, V1) == found


def test_a_non_string_v1beta1_label_is_stashed() -> None:
    found = beta({"mxReplicaSpecs": {"Tuner": {"label": 7, "template": {}}}})
    converted = convert(found, V1)
    assert converted["spec"]["mxReplicaSpecs"]["Tuner"] == {"template": {}}
    assert convert(converted, V1BETA1) == found


@pytest.mark.parametrize("template", ["pod", {"metadata": []}, {"metadata": {"annotations": "x"}}])
def test_a_label_that_cannot_be_placed_in_the_template_is_stashed(template: Any) -> None:
    found = beta({"mxReplicaSpecs": {"TunerServer": {"label": "k", "template": template}}})
    converted = convert(found, V1)
    assert converted["spec"]["mxReplicaSpecs"]["TunerServer"] == {"template": template}
    assert stash_of(converted) == {
        "from": V1BETA1,
        "replicas": {"TunerServer": {"label": "k"}},
    }
    assert convert(converted, V1BETA1) == found


@pytest.mark.parametrize("version", [V1, V1BETA1])
def test_replica_specs_that_are_not_objects_pass_through(version: str) -> None:
    found = {"apiVersion": version, "spec": {"mxReplicaSpecs": {"Worker": [1], "Server": None}}}
    converted = convert(found, OTHER[version])
    assert converted["spec"] == found["spec"]
    assert stash_of(converted) is None


@pytest.mark.parametrize(
    "template",
    [
        {},
        {"metadata": {}},
        {"metadata": {"annotations": {}}},
        {"metadata": {"creationTimestamp": None}},
    ],
)
def test_empty_objects_around_the_label_survive_the_round_trip(template: Job) -> None:
    found = beta({"mxReplicaSpecs": {"TunerServer": {"label": "k", "template": template}}})
    assert convert(convert(found, V1), V1BETA1) == found


def test_an_edited_tuner_server_key_reads_back_as_the_new_label() -> None:
    stored = convert(beta({"mxReplicaSpecs": {"TunerServer": {"label": "a", "template": {}}}}), V1)
    stored["spec"]["mxReplicaSpecs"]["TunerServer"]["template"]["metadata"]["annotations"][
        "tuner-server-key"
    ] = "b"
    assert convert(stored, V1BETA1)["spec"]["mxReplicaSpecs"]["TunerServer"] == {
        "label": "b",
        "template": {},
    }


# --- status --------------------------------------------------------------------------------------


def test_replica_statuses_are_renamed_both_ways() -> None:
    statuses = {"Worker": {"active": 2, "succeeded": 1, "failed": 0}}
    found = train_job()
    found["status"] = {"replicaStatuses": statuses, "state": "Running"}
    converted = convert(found, V1BETA1)
    assert converted["status"] == {"mxReplicaStatuses": statuses, "state": "Running"}
    assert convert(converted, V1) == found


def test_a_status_field_clashing_with_the_other_versions_name_is_stashed() -> None:
    found = train_job()
    found["status"] = {"replicaStatuses": {"Worker": {}}, "mxReplicaStatuses": "stray"}
    converted = convert(found, V1BETA1)
    assert converted["status"] == {"mxReplicaStatuses": {"Worker": {}}}
    assert stash_of(converted) == {"from": V1, "status": {"mxReplicaStatuses": "stray"}}
    assert convert(converted, V1) == found


# --- the stash annotation ------------------------------------------------------------------------


def test_other_annotations_are_kept_beside_the_stash() -> None:
    found = v1({"runPolicy": {"suspend": True}})
    found["metadata"]["annotations"] = {"team": "ml"}
    converted = convert(found, V1BETA1)
    assert converted["metadata"]["annotations"]["team"] == "ml"
    assert convert(converted, V1) == found


def test_an_existing_empty_annotations_object_survives() -> None:
    found = v1({"runPolicy": {"suspend": True}})
    found["metadata"]["annotations"] = {}
    assert convert(convert(found, V1BETA1), V1) == found


def test_an_object_without_metadata_gets_the_stash_and_loses_it_again() -> None:
    found = {"apiVersion": V1, "spec": {"runPolicy": {"suspend": True}}}
    converted = convert(found, V1BETA1)
    assert stash_of(converted) == {"from": V1, "runPolicy": {"suspend": True}}
    assert convert(converted, V1) == found


def test_a_foreign_value_of_the_reserved_annotation_is_preserved() -> None:
    found = train_job()
    found["metadata"]["annotations"] = {STASH: "not json"}
    converted = convert(found, V1BETA1)
    assert stash_of(converted) == {"from": V1, "annotation": "not json"}
    assert convert(converted, V1) == found


def test_a_stash_describing_the_objects_own_version_is_treated_as_foreign() -> None:
    found = train_job()  # v1, so only a stash "from" v1beta1 is one to consume
    found["metadata"]["annotations"] = {STASH: json.dumps({"from": V1, "runPolicy": 1})}
    assert convert(convert(found, V1BETA1), V1) == found


def test_a_malformed_stash_is_treated_as_foreign() -> None:
    found = train_job()
    found["metadata"]["annotations"] = {STASH: json.dumps({"from": V1BETA1, "keep": "x"})}
    assert convert(convert(found, V1BETA1), V1) == found


@pytest.mark.parametrize(
    "stash",
    [
        {"from": V1BETA1, "keep": True},
        {"from": V1BETA1, "keep": 9},
        {"from": V1BETA1, "spec": []},
        {"from": V1BETA1, "status": "x"},
        {"from": V1BETA1, "topLevel": "backoffLimit"},
        {"from": V1BETA1, "topLevel": ["suspend"]},
        {"from": V1BETA1, "replicas": []},
        {"from": V1BETA1, "replicas": {"Worker": "x"}},
        {"from": V1BETA1, "replicas": {"Worker": {"keep": -1}}},
        ["from", V1BETA1],
    ],
)
def test_a_stash_of_the_wrong_shape_is_kept_as_a_foreign_value(stash: Any) -> None:
    found = train_job()
    found["metadata"]["annotations"] = {STASH: json.dumps(stash)}
    converted = convert(found, V1BETA1)
    assert stash_of(converted) == {"from": V1, "annotation": json.dumps(stash)}
    assert convert(converted, V1) == found


def test_a_non_string_annotation_value_is_kept_as_a_foreign_value() -> None:
    found = train_job()
    found["metadata"]["annotations"] = {STASH: 5}
    converted = convert(found, V1BETA1)
    assert stash_of(converted) == {"from": V1, "annotation": 5}
    assert convert(converted, V1) == found


def test_a_deeply_nested_annotation_value_is_kept_as_a_foreign_value() -> None:
    found = train_job()
    found["metadata"]["annotations"] = {STASH: "[" * 100_000}
    assert convert(convert(found, V1BETA1), V1) == found


def test_a_foreign_value_and_new_residue_share_the_key_through_peer() -> None:
    original = train_job()
    original["metadata"]["annotations"] = {STASH: "mine"}
    read = convert(original, V1BETA1)  # stash from v1 carrying "mine"
    read["spec"]["runPolicy"] = {"stray": 1}  # v1beta1 residue added by an edit
    stored = convert(read, V1)
    stash = stash_of(stored)
    assert stash == {"from": V1BETA1, "peer": "mine", "spec": {"runPolicy": {"stray": 1}}}
    again = convert(stored, V1BETA1)
    assert again == read
    assert convert(again, V1) == stored


def test_non_object_metadata_survives_the_round_trip() -> None:
    found = {"apiVersion": V1, "metadata": "weird", "spec": {"runPolicy": {"suspend": True}}}
    assert convert(convert(found, V1BETA1), V1) == found


# --- lossless, for any object ---------------------------------------------------------------


def _round_trips(found: Job) -> None:
    source = found["apiVersion"]
    there = convert(found, OTHER[source])
    assert there["apiVersion"] == OTHER[source]
    back = convert(there, source)
    assert back == found
    assert convert(back, OTHER[source]) == there


@property_settings(400)
@given(st.sampled_from([V1, V1BETA1]).flatmap(conversion_objects))
def test_objects_with_every_awkward_shape_round_trip(found: Job) -> None:
    _round_trips(found)


@property_settings(200)
@given(valid_jobs(), st.sampled_from([V1, V1BETA1]))
def test_generated_jobs_round_trip_raw_and_defaulted(found: Job, version: str) -> None:
    for candidate in (found, apply_defaults(found)):
        _round_trips({**candidate, "apiVersion": version})


@property_settings(200)
@given(valid_jobs())
def test_stored_jobs_read_through_v1beta1_stash_only_their_v1_only_fields(found: Job) -> None:
    """Every stored job has one (defaulting writes disruptionPolicy); nothing else is stashed
    but what v1beta1 cannot express, and the job comes back whole."""
    stored = apply_defaults(found)
    read = convert(stored, V1BETA1)
    policy = stored["spec"]["runPolicy"]
    v1_only = {"suspend", "schedulingPolicy", "managedBy", "disruptionPolicy"} & set(policy)
    stash = stash_of(read)
    assert stash is not None and set(stash["runPolicy"]) == v1_only
    assert {k: v for k, v in stash.items() if k != "runPolicy"} == {"from": V1}
    assert convert(read, V1) == stored


@property_settings(300)
@given(st.one_of(json_objects(), mutated_jobs()), st.sampled_from([V1, V1BETA1]))
def test_arbitrary_json_objects_round_trip(found: Job, version: str) -> None:
    _round_trips({**found, "apiVersion": version})


@property_settings(300)
@given(json_objects(), st.sampled_from(["v1", "v1beta1", V1, V1BETA1, "v2", "x/y"]))
def test_convert_raises_nothing_but_conversion_error_on_arbitrary_json(
    found: Job, target: str
) -> None:
    try:
        converted = convert(found, target)
    except ConversionError:
        return
    assert converted["apiVersion"] in (V1, V1BETA1)


def test_a_train_job_with_every_difference_round_trips_and_shows_them_in_v1beta1() -> None:
    found = train_job(
        runPolicy={"cleanPodPolicy": "None", "backoffLimit": 2, "suspend": False},
        successPolicy="AllWorkers",
    )
    found["spec"]["mxReplicaSpecs"]["Worker"] = replica(3, annotations={"tuner-server-key": "w"})
    found["status"] = {"replicaStatuses": {"Worker": {"active": 3}}}
    read = convert(found, V1BETA1)
    assert read["spec"]["cleanPodPolicy"] == "None"
    assert read["spec"]["backoffLimit"] == 2
    assert read["spec"]["successPolicy"] == "AllWorkers"
    assert read["spec"]["mxReplicaSpecs"]["Worker"]["label"] == "w"
    assert read["status"] == {"mxReplicaStatuses": {"Worker": {"active": 3}}}
    assert stash_of(read) == {"from": V1, "runPolicy": {"suspend": False}}
    assert convert(read, V1) == found


def test_restart_scopes_and_the_disruption_policy_survive_v1beta1_both_ways() -> None:
    original = train_job(runPolicy={"backoffLimit": 2, "disruptionPolicy": "Count"})
    original["spec"]["mxReplicaSpecs"]["Worker"]["restartScope"] = "Replica"
    older = convert(original, "v1beta1")
    assert older["spec"]["mxReplicaSpecs"]["Worker"]["restartScope"] == "Replica"
    assert older["spec"]["backoffLimit"] == 2 and "runPolicy" not in older["spec"]
    assert convert(older, "v1") == original


def test_progress_and_its_deadline_survive_a_v1beta1_round_trip() -> None:
    """``runPolicy.progressDeadlineSeconds`` is v1's own, stashed; ``status.trainerStatus`` is
    status, which v1beta1 reads as it is."""
    found = v1({"jobMode": "MXTrain", "runPolicy": {"progressDeadlineSeconds": 600}})
    found["status"] = {
        "state": "Running",
        "trainerStatus": {
            "progressPercentage": 42,
            "estimatedRemainingSeconds": 1800,
            "metrics": [{"name": "loss", "value": "0.2347"}],
            "lastUpdatedTime": "2026-12-02T06:00:00Z",
        },
    }
    converted = convert(found, V1BETA1)
    assert stash_of(converted) == {"from": V1, "runPolicy": {"progressDeadlineSeconds": 600}}
    assert converted["status"]["trainerStatus"] == found["status"]["trainerStatus"]
    assert convert(converted, V1) == found
