"""shared/jsontree.py: `copy_json` is a deep copy of decoded JSON, and of anything else."""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any

from hypothesis import given

from shared.defaults import apply_defaults
from shared.jsontree import copy_json
from tests.fuzz.strategies import json_values
from tests.shared.shared_samples import property_settings, train_job


def _containers_of_every_kind(value: Any) -> list[int]:
    """ids of every dict and list inside `value`, itself included."""
    found: list[int] = []
    if isinstance(value, dict):
        found.append(id(value))
        for item in value.values():
            found += _containers_of_every_kind(item)
    elif isinstance(value, list):
        found.append(id(value))
        for item in value:
            found += _containers_of_every_kind(item)
    return found


@property_settings()
@given(value=json_values)
def test_a_copy_is_equal_and_shares_no_dict_or_list(value: Any) -> None:
    copied = copy_json(value)
    assert json.dumps(copied, sort_keys=True) == json.dumps(value, sort_keys=True)
    assert not set(_containers_of_every_kind(copied)) & set(_containers_of_every_kind(value))


def test_changing_the_copy_of_a_defaulted_job_leaves_the_original_alone() -> None:
    job = apply_defaults(train_job())
    copied = copy_json(job)
    copied["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["env"].clear()
    assert job["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["env"]


def test_values_that_are_not_json_are_still_copied_deeply() -> None:
    inner = [1, 2]
    value: dict[str, Any] = {"tuple": (inner,), "ordered": OrderedDict(a=[3])}
    copied = copy_json(value)
    assert copied == value
    assert copied["tuple"][0] is not inner
    assert copied["ordered"]["a"] is not value["ordered"]["a"]
