"""A kind of object an integration makes for each job, as data (pure).

The disruption budget, the job's NetworkPolicy, the gang's PodGroups and Workload, and the CA
ConfigMap of its pods are each one object per job, named after it (the job's name, or that with a
suffix of the kind's), in its namespace, controlled by it
(controller/job/ownership.py): one :class:`ChildKind` says where such objects live and what
follows when another object holds the name; one path reads, creates and updates them all
(:mod:`controller.integrations.children.ensure`). How a stored object is brought to the one
the job wants differs per kind and is given as a :data:`Revise`: the spec put back in place
(a budget, a policy, a Volcano PodGroup), or, for an object whose spec is immutable
(kube-scheduler's Workload and PodGroup), a :class:`Replace`.

What a child's cache keeps (:func:`child_object`): an object an MXJob controls whole, any other
only the metadata that says whose it is. A cluster has many PodDisruptionBudgets and
NetworkPolicies of its own, and the controller needs of them only whether one holds a job's name.
The integration that makes a kind declares its cache (:attr:`ChildKind.watch`) and the RBAC the
shared path needs for it (:meth:`ChildKind.rule`) in its declaration
(controller/job/declaration.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from controller.job.declaration import JobOf, Rule, Watch
from controller.job.ownership import controller_reference
from controller.job.view import MXJobView
from controller.runtime.client import resource_path
from controller.runtime.informers import cached_object, compact
from controller.runtime.store import Obj, metadata_of, object_key
from shared.constants import GROUP, KIND
from shared.spec import as_mapping


@dataclass(frozen=True, kw_only=True)
class ChildKind:
    """Where a kind of a job's objects lives, and whether the job's pods need it."""

    kind: str
    group: str
    version: str
    plural: str
    pods_need_it: bool
    """True: the job's pods wait while another object holds the name (a pod joins the PodGroup
    of its name whoever made it; a pod without its policy is open to the cluster). False: the
    job runs without one (a PodDisruptionBudget)."""
    always_served: bool = False
    """A built-in API every supported cluster serves; otherwise the controller watches the kind
    only if the API server serves it when asked (a CRD, an alpha API)."""
    suffix: str = ""
    """What an object's name adds to its job's (``-status-ca``); none: named as the job."""

    def name_for(self, job_name: str) -> str:
        """The name of the object of MXJob ``job_name``."""
        return f"{job_name}{self.suffix}"

    def key_for(self, job: MXJobView) -> str:
        """The cache key (``namespace/name``) of ``job``'s object."""
        return f"{job.namespace}/{self.name_for(job.name)}"

    @property
    def job_of(self) -> JobOf:
        """An object → the queue key of the MXJob whose object it would be, by its name."""
        return JobBySuffix(self.suffix) if self.suffix else object_key

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        """The collection (all namespaces, or one) or one object; an informer's ``path_for``."""
        return resource_path(
            group=self.group,
            version=self.version,
            plural=self.plural,
            namespace=namespace,
            name=name,
        )

    @property
    def resource(self) -> str:
        """``plural.group``, as the API server and RBAC name it: in logs and thread names."""
        return self.watch.name

    @property
    def watch(self) -> Watch:
        """The kind's cache: every object of it in the watched namespaces, kept as
        :func:`child_object`; a change queues the job of the object's name, when there is one
        (an object comes or goes, or a child drifts)."""
        return Watch(
            group=self.group,
            version=self.version,
            plural=self.plural,
            job_of=self.job_of,
            transform=child_object,
            optional=not self.always_served,
        )

    def rule(self, *writes: str) -> Rule:
        """The RBAC the shared path needs for the kind (controller/integrations/children/
        ensure.py): ``list`` and ``watch`` fill its cache, ``get`` reads an object a create met
        that the cache had not seen yet, ``create``; and the ``writes`` that bring a stored object
        to the job's (``update`` for a spec put back in place, ``delete`` for one replaced)."""
        verbs = ("get", "list", "watch", "create", *writes)
        return Rule(api_groups=(self.group,), resources=(self.plural,), verbs=verbs)


@dataclass(frozen=True)
class JobBySuffix:
    """The job of an object named ``<job><suffix>`` (None for any other name); a value, so two
    equal kinds declare equal watches."""

    suffix: str

    def __call__(self, obj: Mapping[str, Any]) -> str | None:
        namespace, _, name = object_key(obj).partition("/")
        job = name.removesuffix(self.suffix)
        return f"{namespace}/{job}" if job and job != name else None


@dataclass(frozen=True)
class Replace:
    """The stored object cannot be updated in place: delete it, and make it anew once gone."""

    differs: str
    """What no longer matches, for the log and the error that holds the pods back."""


Revision = dict[str, Any] | Replace | None
"""The object to write back (an update with the version read), a replacement, or nothing."""
Revise = Callable[[Mapping[str, Any], Mapping[str, Any]], Revision]
"""``(stored, wanted) → revision``: how a kind compares the fields the controller owns."""

STUB_METADATA: Final = (
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "ownerReferences",
    "deletionTimestamp",
)
"""What a cache keeps of an object no MXJob controls: whose it is, and whether it is going."""


def controlled_by_an_mxjob(obj: Mapping[str, Any]) -> bool:
    """Whether ``obj``'s controller owner reference names an MXJob (any: this job's or another)."""
    ref = as_mapping(controller_reference(obj))
    group = str(ref.get("apiVersion", "")).partition("/")[0]
    return ref.get("kind") == KIND and group == GROUP


def child_object(obj: Obj) -> Obj:
    """A child kind's object as cached: whole when an MXJob controls it, else a stub."""
    if controlled_by_an_mxjob(obj):
        return cached_object(obj)
    meta = metadata_of(obj)
    stub: Obj = compact({"metadata": {k: meta[k] for k in STUB_METADATA if k in meta}})
    return stub
