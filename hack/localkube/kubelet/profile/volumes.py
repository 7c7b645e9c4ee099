"""The files of a pod's volumes, as a kubelet would mount them into a container.

The test kubelet's install profile (see :mod:`localkube.kubelet.profile`) runs a Deployment's pod as
a local process in a mount namespace of its own, where each of the container's ``volumeMounts``
is a bind mount of a directory this module fills: Secret and ConfigMap keys, an ``emptyDir``, and
the projected ``kube-api-access-*`` volume the API server adds to every pod that mounts a service
account token (a real token from the TokenRequest API, bound to the pod; the cluster CA from the
``kube-root-ca.crt`` ConfigMap; the namespace). What each volume holds is computed by
:func:`volume_files` from lookups, without I/O, so the rules are testable on their own;
:func:`write_volumes` does the writing.

A ``subPath`` mounts one file or folder of the volume (a ConfigMap key at a file path, as
Kueue's configuration is mounted): the source of its :class:`Mount` is that file or folder.

Not done, on purpose: a token is requested once, at start (it is valid for an hour, longer than
any test), and Secret updates are not propagated into a running pod (nor does a kubelet
propagate them into a ``subPath`` mount); a pod that waits for a Secret written after it
started is restarted by whoever runs it (``localkube.thirdparty.multikueue`` does so for Kueue).
"""

from __future__ import annotations

import base64
import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localkube.kubelet.podenv import PodEnvError, field_ref

Lookup = Callable[[str], "Mapping[str, bytes] | None"]
"""A Secret's or ConfigMap's data by name, None when there is no such object."""
TokenSource = Callable[[str, "list[str]", int], str]
"""``(service account, audiences, expirationSeconds)`` → a token bound to the pod."""

DEFAULT_MODE = 0o644


class VolumeError(ValueError):
    """A volume cannot be made yet (a kubelet keeps the pod in ContainerCreating and retries)."""


@dataclass(frozen=True)
class Mount:
    """One of the container's ``volumeMounts``, backed by a directory of this kubelet."""

    source: Path
    target: str
    read_only: bool


Files = dict[str, tuple[bytes, int]]
"""Relative path → (content, mode)."""


def _keyed(
    data: Mapping[str, bytes], spec: Mapping[str, Any], *, default_mode: int, what: str
) -> Files:
    items = spec.get("items")
    if not items:
        return {key: (value, default_mode) for key, value in data.items()}
    files: Files = {}
    for item in items:
        key = str(item["key"])
        if key not in data:
            if spec.get("optional"):
                continue
            raise VolumeError(f"{what} has no key {key!r}")
        files[str(item["path"])] = (data[key], int(item.get("mode", default_mode)))
    return files


def _object_files(
    spec: Mapping[str, Any], lookup: Lookup, *, name_field: str, default_mode: int, what: str
) -> Files:
    name = str(spec.get(name_field, ""))
    data = lookup(name)
    if data is None:
        if spec.get("optional"):
            return {}
        raise VolumeError(f"{what} {name!r} not found")
    return _keyed(data, spec, default_mode=default_mode, what=f"{what} {name!r}")


def _downward_files(pod: Mapping[str, Any], spec: Mapping[str, Any], *, default_mode: int) -> Files:
    files: Files = {}
    for item in spec.get("items", []) or []:
        if "fieldRef" not in item:
            raise VolumeError("only fieldRef items of downwardAPI volumes are supported")
        try:
            value = field_ref(pod, str(item["fieldRef"].get("fieldPath", "")))
        except PodEnvError as error:
            raise VolumeError(str(error)) from error
        files[str(item["path"])] = (value.encode(), int(item.get("mode", default_mode)))
    return files


def volume_files(
    pod: Mapping[str, Any],
    volume: Mapping[str, Any],
    *,
    secret: Lookup,
    config_map: Lookup,
    token: TokenSource,
) -> Files | None:
    """What one volume holds; None for an ``emptyDir`` (an empty, writable directory)."""
    name = volume.get("name")
    if "emptyDir" in volume:
        return None
    if "secret" in volume:
        spec = volume["secret"]
        mode = int(spec.get("defaultMode", DEFAULT_MODE))
        return _object_files(
            spec, secret, name_field="secretName", default_mode=mode, what="secret"
        )
    if "configMap" in volume:
        spec = volume["configMap"]
        mode = int(spec.get("defaultMode", DEFAULT_MODE))
        return _object_files(
            spec, config_map, name_field="name", default_mode=mode, what="configmap"
        )
    if "downwardAPI" in volume:
        spec = volume["downwardAPI"]
        return _downward_files(pod, spec, default_mode=int(spec.get("defaultMode", DEFAULT_MODE)))
    if "projected" in volume:
        spec = volume["projected"]
        mode = int(spec.get("defaultMode", DEFAULT_MODE))
        files: Files = {}
        for source in spec.get("sources", []) or []:
            if "serviceAccountToken" in source:
                sat = source["serviceAccountToken"]
                audience = sat.get("audience")
                account = str(pod.get("spec", {}).get("serviceAccountName") or "default")
                value = token(
                    account, [audience] if audience else [], int(sat.get("expirationSeconds", 3600))
                )
                files[str(sat["path"])] = (value.encode(), mode)
            elif "secret" in source:
                files |= _object_files(
                    source["secret"], secret, name_field="name", default_mode=mode, what="secret"
                )
            elif "configMap" in source:
                files |= _object_files(
                    source["configMap"],
                    config_map,
                    name_field="name",
                    default_mode=mode,
                    what="configmap",
                )
            elif "downwardAPI" in source:
                files |= _downward_files(pod, source["downwardAPI"], default_mode=mode)
            else:
                raise VolumeError(f"projected volume {name!r}: unsupported source {sorted(source)}")
        return files
    raise VolumeError(f"volume {name!r}: unsupported type {sorted(set(volume) - {'name'})}")


def write_volumes(
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    *,
    root: Path,
    secret: Lookup,
    config_map: Lookup,
    token: TokenSource,
) -> list[Mount]:
    """Fill ``root/<volume>`` for every volume the container mounts; return its mounts."""
    volumes = {v["name"]: v for v in pod.get("spec", {}).get("volumes", []) or []}
    mounts: list[Mount] = []
    made: set[str] = set()
    for mount in container.get("volumeMounts", []) or []:
        name = str(mount["name"])
        if mount.get("subPathExpr"):
            raise VolumeError(f"volumeMount {name!r}: subPathExpr is not supported")
        sub_path = _sub_path(name, str(mount.get("subPath") or ""))
        if name not in volumes:
            raise VolumeError(f"volumeMount {name!r} names no volume of the pod")
        directory = root / name
        if name not in made:
            files = volume_files(
                pod, volumes[name], secret=secret, config_map=config_map, token=token
            )
            shutil.rmtree(directory, ignore_errors=True)
            directory.mkdir(parents=True)
            for relative, (content, mode) in (files or {}).items():
                path = directory / relative
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(content)
                os.chmod(path, mode)
            made.add(name)
        source = directory / sub_path if sub_path else directory
        if not source.exists():
            source.mkdir(parents=True)  # a kubelet makes a missing subPath a directory
        mounts.append(
            Mount(
                source=source,
                target=str(mount["mountPath"]),
                read_only=bool(mount.get("readOnly")),
            )
        )
    return mounts


def _sub_path(name: str, sub_path: str) -> str:
    """A ``subPath``: a relative path inside the volume (a kubelet refuses ``..`` and ``/``)."""
    if sub_path.startswith("/") or ".." in sub_path.split("/"):
        raise VolumeError(f"volumeMount {name!r}: subPath {sub_path!r} must stay in the volume")
    return sub_path


def decode_data(obj: Mapping[str, Any], *, binary: bool) -> dict[str, bytes]:
    """A Secret's ``data`` (base64) or a ConfigMap's ``data``/``binaryData`` as bytes."""
    if binary:
        return {k: base64.b64decode(v) for k, v in (obj.get("data") or {}).items()}
    data = {k: str(v).encode() for k, v in (obj.get("data") or {}).items()}
    data |= {k: base64.b64decode(v) for k, v in (obj.get("binaryData") or {}).items()}
    return data
