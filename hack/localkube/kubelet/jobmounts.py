"""What an exec-mode job pod's process finds besides its env: the files of its volumes at their
mount paths, and the operator's progress Service on loopback.

Why: the webhook gives every replica's ``mxnet`` container a projected volume (a ServiceAccount
token for the progress endpoint and the CA verifying it) at ``/var/run/secrets/mxjob.kubeflow.org``
and env naming those files and the endpoint's URL (shared/progress_pods.py). A process that finds
neither file reports nothing, so without them ``make demo`` could not show the job's progress.

How: the pod's volumes whose files the API defines (Secrets, ConfigMaps, projected and Downward
API volumes, :data:`API_VOLUME_KINDS`) are written as the install profile writes its pods'
(:meth:`localkube.kubelet.profile.pods.ProfilePods.write_mounts`: a real token from the TokenRequest
API, bound to the pod), and the process starts in a private mount namespace where each is bound
at its ``mountPath``, read-only where the mount says so
(:func:`localkube.kubelet.profile.sandbox.in_mount_namespace`, which needs root, as the hosts file
does). So its env stays exactly as written, and so does a path a program reads without env (the
``kube-api-access`` token at ``/var/run/secrets/kubernetes.io/serviceaccount``). A pod with no
such volume starts as before, without a namespace of its own.

Not mounted, on purpose: ``emptyDir``, ``hostPath``, claims and the rest keep exec mode's old
meaning, the host's own directory at that path, which the examples and their tests rely on (the
tuner's work directory, a checkpoint directory given as a host path). The host name of the
progress URL (``mxjob-controller-progress.<namespace>.svc``) is pointed at 127.0.0.1 like the
job's own Services (:mod:`localkube.kubelet.hostsfile`): where a controller takes reports on
``127.0.0.1:8444`` (``make demo``), they reach it; elsewhere the connection is refused, and the
reporter, built for an unreachable operator, backs off and the job trains on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from localkube.base.paths import PROJECT_ROOT
from localkube.kubelet.profile.sandbox import in_mount_namespace
from localkube.kubelet.profile.volumes import Mount
from shared.progress import ENV_URL

API_VOLUME_KINDS: Final = ("secret", "configMap", "projected", "downwardAPI")
"""Volumes whose files come from the API, which the kubelet writes and binds for a job pod."""
CLUSTER_DOMAIN: Final = ".cluster.local"


def api_volume_container(pod: Mapping[str, Any], container: Mapping[str, Any]) -> dict[str, Any]:
    """``container`` with only the mounts of its pod's volumes of :data:`API_VOLUME_KINDS`."""
    volumes = {
        volume.get("name"): volume for volume in pod.get("spec", {}).get("volumes", []) or []
    }
    mounts = [
        mount
        for mount in container.get("volumeMounts", []) or []
        if any(kind in volumes.get(mount.get("name"), {}) for kind in API_VOLUME_KINDS)
    ]
    return {**container, "volumeMounts": mounts}


def progress_host_names(env: Mapping[str, str]) -> tuple[str, ...]:
    """The Service name in the container's progress URL, short and with the cluster domain;
    none when the URL names no Service (a job pointing its reporter elsewhere, or no URL)."""
    try:
        host = urlsplit(env.get(ENV_URL, "")).hostname or ""
    except ValueError:
        return ()
    short = host.removesuffix(CLUSTER_DOMAIN)
    if not short.endswith(".svc"):
        return ()
    return (short, f"{short}{CLUSTER_DOMAIN}")


def image_directories(path_prefix: Sequence[str]) -> list[str]:
    """Where the job's "image" lives on this machine: the checkout (its scripts and ``sdk/``)
    and the virtualenvs of the PATH prefix, which a volume mounted over one must not hide."""
    keep = [str(PROJECT_ROOT)]
    for directory in path_prefix:
        venv = str(Path(directory).parent)
        if venv != str(PROJECT_ROOT) and not venv.startswith(f"{PROJECT_ROOT}/") and venv != "/":
            keep.append(venv)
    return list(dict.fromkeys(keep))


def with_mounts(
    argv: Sequence[str], mounts: Sequence[Mount], *, path_prefix: Sequence[str]
) -> list[str]:
    """``argv`` started in a mount namespace with ``mounts`` in place; unchanged without any."""
    if not mounts:
        return list(argv)
    return in_mount_namespace(mounts, argv, keep_visible=image_directories(path_prefix))
