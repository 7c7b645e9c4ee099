"""What admission writes into an MXJob's pod templates so that its pods can report progress
(pure, idempotent).

Into every replica's template: a projected volume ``mxjob-status`` holding a ServiceAccount token
for the audience ``mxjob.kubeflow.org`` and the CA of the controller's progress endpoint (from
the ConfigMap ``<job>-status-ca`` the controller keeps, controller/integrations/statusca/), mounted
read-only in the ``mxnet`` container, and three env entries naming the endpoint's URL and the two
files (the contract of sdk/mxjob_progress). They are written into the stored job, as the DMLC
env is (shared/defaults.py), so ``kubectl get mxjob -o yaml`` shows what the pods get.

Only the webhook calls this (webhook/admission.py), not shared/defaults.py's ``apply_defaults``:
the URL names the operator's namespace, which only the webhook's settings know, and the
controller's defaulting of a job stored without admission (controller/job/memory.py) must not
invent it. Such a job's pods get no progress env, and report nothing.

A user's own wins, piece by piece, and is never refused: an env entry of one of the three names
(a URL of a proxy, a CA of one's own), a volume named ``mxjob-status``, or any mount at the
mount path is left as written, and ours is not added beside it. So a second pass adds nothing,
and a job can point its reporter elsewhere. The ConfigMap is ``optional``: a pod whose
controller serves no progress (``--no-progress-reports``) still starts, and its reporter finds
no CA and reports nothing, rather than the pod waiting for a volume that never comes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shared import progress
from shared.jsontree import copy_json
from shared.spec import job_name, mxnet_container

Obj = dict[str, Any]


def status_volume(job: str) -> Obj:
    """The projected volume of the pods of MXJob ``job``: the token, and the CA."""
    return {
        "name": progress.VOLUME,
        "projected": {
            "sources": [
                {
                    "serviceAccountToken": {
                        "audience": progress.AUDIENCE,
                        "expirationSeconds": progress.TOKEN_EXPIRATION_SECONDS,
                        "path": progress.TOKEN_FILE,
                    }
                },
                {
                    "configMap": {
                        "name": progress.ca_configmap_name(job),
                        "items": [{"key": progress.CA_FILE, "path": progress.CA_FILE}],
                        "optional": True,
                    }
                },
            ]
        },
    }


def status_mount() -> Obj:
    return {"name": progress.VOLUME, "mountPath": progress.MOUNT_PATH, "readOnly": True}


def status_env(*, operator_namespace: str, namespace: str, job: str) -> list[Obj]:
    """The three env entries, in :data:`shared.progress.ENV_NAMES`' order."""
    url = progress.status_url(operator_namespace=operator_namespace, namespace=namespace, name=job)
    return [
        {"name": progress.ENV_URL, "value": url},
        {"name": progress.ENV_CA_CERT, "value": f"{progress.MOUNT_PATH}/{progress.CA_FILE}"},
        {"name": progress.ENV_TOKEN, "value": f"{progress.MOUNT_PATH}/{progress.TOKEN_FILE}"},
    ]


def _named(items: list[Any], name: str) -> bool:
    return any(isinstance(item, Mapping) and item.get("name") == name for item in items)


def _mounted(mounts: list[Any]) -> bool:
    """Something is mounted as the volume or at its path already."""
    return _named(mounts, progress.VOLUME) or any(
        isinstance(m, Mapping) and m.get("mountPath") == progress.MOUNT_PATH for m in mounts
    )


def _list_at(owner: Mapping[str, Any], key: str) -> list[Any] | None:
    """``owner[key]`` when a list, an empty one when absent; None when it is something else
    (left for validation to report)."""
    value = owner.get(key)
    if value is None:
        return []
    return value if isinstance(value, list) else None


def inject_into_template(template: Obj, *, env: list[Obj], volume: Obj) -> None:
    """Add what is not there yet (see the module docstring) to one pod template; the entries
    given are copied, never shared between templates."""
    pod_spec = template.get("spec")
    container = mxnet_container(template)
    if not isinstance(pod_spec, dict) or not isinstance(container, dict):
        return
    volumes, mounts = _list_at(pod_spec, "volumes"), _list_at(container, "volumeMounts")
    entries = _list_at(container, "env")
    if volumes is None or mounts is None or entries is None:
        return
    if not _named(volumes, progress.VOLUME):
        pod_spec["volumes"] = [*volumes, copy_json(volume)]
    if not _mounted(mounts):
        container["volumeMounts"] = [*mounts, status_mount()]
    missing = [dict(entry) for entry in env if not _named(entries, entry["name"])]
    if missing:
        container["env"] = [*entries, *missing]


def inject_progress(job: Obj, *, operator_namespace: str, namespace: str = "") -> None:
    """Write what the pods need to report into every replica's template of ``job`` (a defaulted
    MXJob, changed in place). ``namespace`` is the job's (the admission request's, which the API
    server fills even when the object does not say it); empty: the object's own. A job whose
    namespace or name is unknown is left as it is."""
    meta = job.get("metadata")
    name = job_name(job)
    namespace = namespace or str((meta if isinstance(meta, Mapping) else {}).get("namespace") or "")
    spec = job.get("spec")
    replicas = spec.get("mxReplicaSpecs") if isinstance(spec, Mapping) else None
    if not name or not namespace or not isinstance(replicas, Mapping):
        return
    env = status_env(operator_namespace=operator_namespace, namespace=namespace, job=name)
    volume = status_volume(name)
    for rspec in replicas.values():
        template = rspec.get("template") if isinstance(rspec, Mapping) else None
        if isinstance(template, dict):
            inject_into_template(template, env=env, volume=volume)
