"""Conversion between kubeflow.org/v1beta1 and kubeflow.org/v1 MXJobs, lossless both ways.

What differs between the versions:

* run policy: v1beta1 has `cleanPodPolicy`, `ttlSecondsAfterFinished`, `activeDeadlineSeconds`
  and `backoffLimit` directly under `spec`; v1 has them (and `suspend`, `schedulingPolicy`,
  `managedBy`) under `spec.runPolicy`;
* the TVM tuner-server key: v1beta1's replica field `label`, v1's template annotation
  `tuner-server-key` (of any replica, in practice the TunerServer);
* replica statuses: v1beta1 `status.mxReplicaStatuses`, v1 `status.replicaStatuses`.

Everything else (successPolicy, jobMode, templates, conditions, ...) is the same in both.

What one version cannot express of the other is kept in the annotation
`mxjob.kubeflow.org/conversion-data` of the converted object: a JSON object tagged with the
version it describes (`from`), holding only the *inexpressible* residue (v1's `runPolicy.suspend`,
which of the run-policy fields sat directly under a v1 `spec`, a v1beta1 template annotation
that the v1 `tuner-server-key` slot displaced, ...). Converting back consumes and removes it.
Fields both versions express are always taken from the object being converted, so an edit
made through the other version is never overwritten by stale stored data.

The annotation key is reserved: an object that already carries it with a value that is not a
stash from the other version keeps that value (it is stashed and restored like any residue).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from shared.constants import (
    API_VERSION_V1,
    API_VERSION_V1BETA1,
    CONVERSION_DATA_ANNOTATION,
    GROUP,
    TUNER_SERVER_KEY_ANNOTATION,
    V1BETA1_RUN_POLICY_FIELDS,
)
from shared.jsontree import copy_json


class ConversionError(ValueError):
    """The object or the requested version is not one this converter handles."""


class _Missing:
    """Sentinel for an absent field (None is a legitimate JSON value)."""


MISSING: Final = _Missing()

_METADATA_ANNOTATIONS = ("metadata", "annotations")
_TEMPLATE_ANNOTATIONS = ("template", "metadata", "annotations")
_V1_REPLICA_STATUSES = "replicaStatuses"
_V1BETA1_REPLICA_STATUSES = "mxReplicaStatuses"
_SERVED = (API_VERSION_V1, API_VERSION_V1BETA1)


def api_version(version: str) -> str:
    """`kubeflow.org/v1` for "v1" or "kubeflow.org/v1" (likewise v1beta1)."""
    full = version if "/" in version else f"{GROUP}/{version}"
    if full not in _SERVED:
        raise ConversionError(f"unsupported version {version!r}: served are {', '.join(_SERVED)}")
    return full


def convert(obj: Mapping[str, Any], to_version: str) -> dict[str, Any]:
    """`obj` (a v1 or v1beta1 MXJob) as `to_version`; a deep copy, the input is not modified.

    Raises ConversionError only when `to_version` or the object's `apiVersion` is not a served
    version of the MXJob (or `obj` is not an object); any content converts.
    """
    target = api_version(to_version)
    if not isinstance(obj, Mapping):
        raise ConversionError(f"an MXJob must be a JSON object, not {type(obj).__name__}")
    source = obj.get("apiVersion")
    if source not in _SERVED:
        raise ConversionError(
            f"cannot convert apiVersion {source!r}: served are {', '.join(_SERVED)}"
        )
    result: dict[str, Any] = copy_json(dict(obj))
    if source == target:
        return result
    result["apiVersion"] = target
    incoming, prior = _take_annotation(result, target=target)
    residue: dict[str, Any] = {}
    spec = result.get("spec")
    if isinstance(spec, dict):
        if target == API_VERSION_V1BETA1:
            _run_policy_to_v1beta1(spec, incoming, residue)
            _labels_to_v1beta1(spec, incoming, residue)
        else:
            _run_policy_to_v1(spec, incoming, residue)
            _labels_to_v1(spec, incoming, residue)
        for key, value in incoming.get("spec", {}).items():
            spec[key] = value
    status = result.get("status")
    if isinstance(status, dict):
        if target == API_VERSION_V1BETA1:
            _rename(status, _V1_REPLICA_STATUSES, _V1BETA1_REPLICA_STATUSES, incoming, residue)
        else:
            _rename(status, _V1BETA1_REPLICA_STATUSES, _V1_REPLICA_STATUSES, incoming, residue)
    _finish_annotation(result, residue, incoming=incoming, prior=prior, source=str(source))
    return result


# --- nested containers -------------------------------------------------------------------


def _lookup(root: Mapping[str, Any], path: Sequence[str]) -> Any:
    node: Any = root
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return MISSING
        node = node[part]
    return node


def _keep_level(root: dict[str, Any], path: Sequence[str]) -> int:
    """The level (1 = path[0]) of the deepest existing container on `path` if it is empty.

    `_remove` prunes containers emptied by the removal; a container that existed empty before
    `_place` must survive that, so its level is recorded (0: nothing to keep).
    """
    node: Any = root
    depth = 0
    for part in path:
        if not isinstance(node, dict) or part not in node:
            break
        node = node[part]
        depth += 1
    return depth if depth > 0 and node == {} else 0


def _place(root: dict[str, Any], path: Sequence[str], key: str, value: Any) -> bool:
    """Set `root[path...][key] = value`, creating missing objects; False if one is not an
    object (then nothing changes)."""
    node = root
    for part in path:
        if part not in node:
            node[part] = {}
        child = node[part]
        if not isinstance(child, dict):
            return False
        node = child
    node[key] = value
    return True


def _remove(root: dict[str, Any], path: Sequence[str], key: str, *, keep: int) -> None:
    """Delete `root[path...][key]`, which the caller found with `_lookup`, and prune the
    objects on `path` the deletion left empty, except those at level `keep` or above."""
    chain = [root]
    for part in path:
        chain.append(chain[-1][part])
    del chain[-1][key]
    for level in range(len(path), 0, -1):
        if chain[level] or level <= keep:
            break
        del chain[level - 1][path[level - 1]]


# --- the stash annotation ------------------------------------------------------------------


def _is_keep(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 3


def _parse_stash(text: object, *, expected_from: str) -> dict[str, Any] | None:
    """The stash in an annotation value if it is one written for `expected_from`, else None."""
    if not isinstance(text, str):
        return None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or data.get("from") != expected_from:
        return None
    if not _is_keep(data.get("keep", 0)):
        return None
    if not isinstance(data.get("spec", {}), dict) or not isinstance(data.get("status", {}), dict):
        return None
    top_level = data.get("topLevel", [])
    if not isinstance(top_level, list):
        return None
    if not all(field in V1BETA1_RUN_POLICY_FIELDS for field in top_level):
        return None
    replicas = data.get("replicas", {})
    if not isinstance(replicas, dict):
        return None
    for residue in replicas.values():
        if not isinstance(residue, dict) or not _is_keep(residue.get("keep", 0)):
            return None
    return data


def _take_annotation(obj: dict[str, Any], *, target: str) -> tuple[dict[str, Any], Any]:
    """Remove the conversion annotation from `obj` (being converted to `target`).

    Returns the stash the last conversion *from* `target` left ({} if none) and the source
    object's own prior value of the annotation key (MISSING if none): either a value that is
    no such stash, or one a stash carried as `peer` because the key was taken at the time.
    """
    value = _lookup(obj, [*_METADATA_ANNOTATIONS, CONVERSION_DATA_ANNOTATION])
    if value is MISSING:
        return {}, MISSING
    stash = _parse_stash(value, expected_from=target)
    if stash is None:
        _remove(obj, _METADATA_ANNOTATIONS, CONVERSION_DATA_ANNOTATION, keep=0)
        return {}, value
    _remove(obj, _METADATA_ANNOTATIONS, CONVERSION_DATA_ANNOTATION, keep=stash.get("keep", 0))
    metadata = obj.get("metadata")
    if "metadata" in stash and metadata in (None, {}):
        obj["metadata"] = stash["metadata"]
    elif (
        "annotations" in stash
        and isinstance(metadata, dict)
        and metadata.get("annotations") in (None, {})
    ):
        metadata["annotations"] = stash["annotations"]
    return stash, stash.get("peer", MISSING)


def _finish_annotation(
    obj: dict[str, Any],
    residue: dict[str, Any],
    *,
    incoming: Mapping[str, Any],
    prior: Any,
    source: str,
) -> None:
    """Leave on `obj` the stash of `source`'s residue, or the annotation value `obj`'s own
    version had (from the incoming stash), or nothing.

    When both exist the key holds the stash and the stash carries that value as `peer`; the
    next conversion treats a peer as its source's prior value and stashes it again.
    """
    restored = incoming.get("annotation", MISSING)
    if prior is not MISSING:
        residue["annotation"] = prior
    if not residue:
        if restored is not MISSING:
            _place(obj, _METADATA_ANNOTATIONS, CONVERSION_DATA_ANNOTATION, restored)
        return
    if restored is not MISSING:
        residue["peer"] = restored
    residue["from"] = source
    metadata = obj.get("metadata", MISSING)
    if metadata is not MISSING and not isinstance(metadata, dict):
        residue["metadata"] = metadata
        obj["metadata"] = {}
    elif isinstance(metadata, dict) and not isinstance(metadata.get("annotations", {}), dict):
        residue["annotations"] = metadata["annotations"]
        metadata["annotations"] = {}
    keep = _keep_level(obj, _METADATA_ANNOTATIONS)
    if keep:
        residue["keep"] = keep
    text = json.dumps(residue, sort_keys=True, separators=(",", ":"))
    _place(obj, _METADATA_ANNOTATIONS, CONVERSION_DATA_ANNOTATION, text)


# --- field mappings ------------------------------------------------------------------------


def _run_policy_to_v1beta1(
    spec: dict[str, Any], incoming: Mapping[str, Any], residue: dict[str, Any]
) -> None:
    """v1 `spec.runPolicy.<f>` -> v1beta1 `spec.<f>` for the four fields v1beta1 has.

    Residue: the rest of `runPolicy` (or all of it when it is not an object, or the fact that
    it existed, empty); the names of fields that v1 had directly under `spec` (the
    standalone shape), which then occupy the v1beta1 slot; and such a field's value when
    `runPolicy` has the same field too (the slot holds runPolicy's).
    """
    del incoming  # v1beta1 has no residue about the run policy
    present = "runPolicy" in spec
    policy = spec.pop("runPolicy", None)
    moved = False
    top_level: list[str] = []
    for field in V1BETA1_RUN_POLICY_FIELDS:
        if isinstance(policy, dict) and field in policy:
            if field in spec:
                residue.setdefault("spec", {})[field] = spec[field]
            spec[field] = policy.pop(field)
            moved = True
        elif field in spec:
            top_level.append(field)
    if present and (not isinstance(policy, dict) or policy or not moved):
        residue["runPolicy"] = policy
    if top_level:
        residue["topLevel"] = top_level


def _run_policy_to_v1(
    spec: dict[str, Any], incoming: Mapping[str, Any], residue: dict[str, Any]
) -> None:
    """v1beta1 `spec.<f>` -> v1 `spec.runPolicy.<f>`, unless the v1 residue says the field
    sat directly under the v1 `spec`. A v1beta1 `spec.runPolicy` (not a v1beta1 field) is
    residue."""
    if "runPolicy" in spec:
        residue.setdefault("spec", {})["runPolicy"] = spec.pop("runPolicy")
    base = incoming.get("runPolicy", MISSING)
    stays = set(incoming.get("topLevel", []))
    moved: dict[str, Any] = {}
    for field in V1BETA1_RUN_POLICY_FIELDS:
        if field not in spec or field in stays:
            continue
        if base is not MISSING and not isinstance(base, dict):
            continue
        moved[field] = spec.pop(field)
    if isinstance(base, dict):
        spec["runPolicy"] = {**base, **moved}
    elif base is not MISSING:
        spec["runPolicy"] = base
    elif moved:
        spec["runPolicy"] = moved


def _replicas(spec: Mapping[str, Any]) -> dict[str, Any]:
    replicas = spec.get("mxReplicaSpecs")
    return replicas if isinstance(replicas, dict) else {}


def _labels_to_v1beta1(
    spec: dict[str, Any], incoming: Mapping[str, Any], residue: dict[str, Any]
) -> None:
    """v1 template annotation `tuner-server-key` -> v1beta1 replica `label`.

    Residue: a v1 replica's own `label` field (not a v1 field, and its slot is taken).
    Restored from the v1beta1 residue: a non-string label, and the v1beta1 template's own
    `tuner-server-key` annotation.
    """
    incoming_replicas: Mapping[str, Any] = incoming.get("replicas", {})
    for key, rspec in _replicas(spec).items():
        if not isinstance(rspec, dict):
            continue
        previous: Mapping[str, Any] = incoming_replicas.get(key, {})
        mine: dict[str, Any] = {}
        if "label" in rspec:
            mine["label"] = rspec.pop("label")
        key_value = _lookup(rspec, [*_TEMPLATE_ANNOTATIONS, TUNER_SERVER_KEY_ANNOTATION])
        if isinstance(key_value, str):
            _remove(
                rspec,
                _TEMPLATE_ANNOTATIONS,
                TUNER_SERVER_KEY_ANNOTATION,
                keep=previous.get("keep", 0),
            )
            rspec["label"] = key_value
        elif "label" in previous:
            rspec["label"] = previous["label"]
        if "annotation" in previous:
            _place(
                rspec, _TEMPLATE_ANNOTATIONS, TUNER_SERVER_KEY_ANNOTATION, previous["annotation"]
            )
        if mine:
            residue.setdefault("replicas", {})[key] = mine


def _labels_to_v1(
    spec: dict[str, Any], incoming: Mapping[str, Any], residue: dict[str, Any]
) -> None:
    """v1beta1 replica `label` -> v1 template annotation `tuner-server-key`.

    Residue: the v1beta1 template's own `tuner-server-key` annotation when a label displaces
    it, or when v1 would read it as a label that v1beta1 did not have; a label that is not a
    string or cannot be placed; and the level of an empty object that placing it filled.
    Restored from the v1 residue: a v1 replica's own `label` field.
    """
    incoming_replicas: Mapping[str, Any] = incoming.get("replicas", {})
    for key, rspec in _replicas(spec).items():
        if not isinstance(rspec, dict):
            continue
        previous: Mapping[str, Any] = incoming_replicas.get(key, {})
        mine: dict[str, Any] = {}
        has_label = "label" in rspec
        label = rspec.pop("label", None)
        annotation = _lookup(rspec, [*_TEMPLATE_ANNOTATIONS, TUNER_SERVER_KEY_ANNOTATION])
        if has_label and isinstance(label, str):
            if annotation is not MISSING:
                mine["annotation"] = annotation
            keep = _keep_level(rspec, _TEMPLATE_ANNOTATIONS)
            if not _place(rspec, _TEMPLATE_ANNOTATIONS, TUNER_SERVER_KEY_ANNOTATION, label):
                mine["label"] = label
            elif keep:
                mine["keep"] = keep
        else:
            if has_label:
                mine["label"] = label
            if isinstance(annotation, str):
                mine["annotation"] = annotation
                _remove(rspec, _TEMPLATE_ANNOTATIONS, TUNER_SERVER_KEY_ANNOTATION, keep=0)
        if "label" in previous:
            rspec["label"] = previous["label"]
        if mine:
            residue.setdefault("replicas", {})[key] = mine


def _rename(
    status: dict[str, Any],
    old: str,
    new: str,
    incoming: Mapping[str, Any],
    residue: dict[str, Any],
) -> None:
    """Rename a status field; a field already holding the new name is residue."""
    if new in status:
        residue.setdefault("status", {})[new] = status.pop(new)
    if old in status:
        status[new] = status.pop(old)
    for key, value in incoming.get("status", {}).items():
        status[key] = value
