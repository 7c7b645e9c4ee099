"""The environment and command line a kubelet gives a container, computed from the pod.

Exec mode must start the process with exactly what a real node would: literal values with
``$(VAR)`` expansion against the variables defined before them, Downward API ``fieldRef``
values, ConfigMap and Secret keys, and ``$(VAR)`` expansion of ``command`` and ``args``.
Expansion itself is :func:`shared.env.expand_vars`, the same rule the operator relies on.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from shared.env import expand_vars

KeyLookup = Callable[[str, str], "str | None"]

_SUBSCRIPT = re.compile(r"^metadata\.(labels|annotations)\['(.+)'\]$")


class PodEnvError(ValueError):
    """The container's env cannot be resolved (a kubelet reports CreateContainerConfigError)."""


def field_ref(pod: Mapping[str, Any], path: str) -> str:
    """The value of a Downward API ``fieldRef.fieldPath`` for this pod."""
    meta = pod.get("metadata", {})
    spec = pod.get("spec", {})
    match = _SUBSCRIPT.match(path)
    if match:
        return str(meta.get(match.group(1), {}).get(match.group(2), ""))
    simple = {
        "metadata.name": meta.get("name", ""),
        "metadata.namespace": meta.get("namespace", ""),
        "metadata.uid": meta.get("uid", ""),
        "spec.nodeName": spec.get("nodeName", ""),
        "spec.serviceAccountName": spec.get("serviceAccountName", "default"),
        "status.hostIP": "127.0.0.1",
        "status.hostIPs": "127.0.0.1",
        # The pod's own address where it has one (the install profile's pods), else loopback.
        "status.podIP": pod.get("status", {}).get("podIP") or "127.0.0.1",
        "status.podIPs": pod.get("status", {}).get("podIP") or "127.0.0.1",
    }
    if path in simple:
        return str(simple[path])
    if path in ("metadata.labels", "metadata.annotations"):
        values = meta.get(path.split(".")[1], {})
        return "\n".join(f'{k}="{v}"' for k, v in sorted(values.items()))
    raise PodEnvError(f"unsupported fieldRef.fieldPath {path!r}")


def _resource_ref(container: Mapping[str, Any], ref: Mapping[str, Any]) -> str:
    resource = str(ref.get("resource", ""))
    kind, _, name = resource.partition(".")
    value = container.get("resources", {}).get(kind, {}).get(name)
    if value is None:
        raise PodEnvError(f"resourceFieldRef {resource!r} is not set on the container")
    return str(value)


def resolve_env(
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    *,
    config_map: KeyLookup,
    secret: KeyLookup,
) -> dict[str, str]:
    """The container's env, in definition order, each value resolved and expanded."""
    env: dict[str, str] = {}
    for source in container.get("envFrom", []) or []:
        prefix = str(source.get("prefix", ""))
        if "configMapRef" in source or "secretRef" in source:
            raise PodEnvError("envFrom is not supported by the test kubelet")
        del prefix
    for entry in container.get("env", []) or []:
        name = str(entry.get("name", ""))
        if "value" in entry:
            env[name] = expand_vars(str(entry["value"]), env)
            continue
        value_from = entry.get("valueFrom")
        if not value_from:
            env[name] = ""
            continue
        if "fieldRef" in value_from:
            env[name] = field_ref(pod, str(value_from["fieldRef"].get("fieldPath", "")))
        elif "resourceFieldRef" in value_from:
            env[name] = _resource_ref(container, value_from["resourceFieldRef"])
        elif "configMapKeyRef" in value_from or "secretKeyRef" in value_from:
            is_secret = "secretKeyRef" in value_from
            ref = value_from["secretKeyRef" if is_secret else "configMapKeyRef"]
            found = (secret if is_secret else config_map)(str(ref.get("name")), str(ref.get("key")))
            if found is None:
                if ref.get("optional"):
                    continue
                kind = "secret" if is_secret else "configmap"
                raise PodEnvError(f"{kind} {ref.get('name')!r} has no key {ref.get('key')!r}")
            env[name] = found
        else:
            raise PodEnvError(f"unsupported valueFrom in env {name!r}")
    return env


def resolve_command(container: Mapping[str, Any], env: Mapping[str, str]) -> list[str]:
    """``command`` + ``args`` with ``$(VAR)`` expanded, as the kubelet hands them to the runtime."""
    command = [expand_vars(str(part), env) for part in container.get("command", []) or []]
    args = [expand_vars(str(part), env) for part in container.get("args", []) or []]
    argv = command + args
    if not argv:
        raise PodEnvError(
            "the container has no command: exec mode cannot run an image's entrypoint"
        )
    return argv
