"""Names of the objects an MXJob owns, and the limits those names put on the job's name.

Every replica gets a Pod and a headless Service named `<job>-<lower type>-<index>`. A Service
name must be a DNS-1035 label (at most 63 characters), so the job name has to leave room for
the longest suffix its spec produces; validation uses `max_job_name_length` to say exactly how
much. The names other objects are known by (node-label keys, PriorityClasses) are checked
here too, by the API server's rules.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from shared.constants import (
    DNS1035_LABEL_MAX_LENGTH,
    ROLE_MASTER,
    ROLE_WORKER,
    JobMode,
    ReplicaType,
)
from shared.spec import canonical_replica_type, spec_replica_count, spec_replica_specs

_DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")


def replica_name(job_name: str, replica_type: str, index: int) -> str:
    """`<job>-<lower type>-<index>`: the name of a replica's Pod and of its Service."""
    return f"{job_name}-{replica_type.lower()}-{index}"


def longest_replica_suffix(spec: object) -> str:
    """The longest `-<type>-<index>` suffix any replica of this spec gets ("" if none)."""
    longest = ""
    for rtype, rspec in spec_replica_specs(spec).items():
        count = spec_replica_count(rspec)
        if count == 0:
            continue
        suffix = f"-{rtype.lower()}-{count - 1}"
        if len(suffix) > len(longest):
            longest = suffix
    return longest


def max_job_name_length(spec: object) -> int:
    """The longest job name for which every replica name of `spec` is still a DNS-1035 label.

    `spec` is the `spec` of a defaulted job: validation passes the job read with
    ``invalid_as_unset`` (shared/validation.py), so a count it reports reads as the default.
    """
    return DNS1035_LABEL_MAX_LENGTH - len(longest_replica_suffix(spec))


def job_role(mode: str, replica_type: str, single_node: bool) -> str:
    """The `job-role` label value: "master" for the replica whose exit decides success.

    That is the Scheduler in MXTrain, the Tuner in MXTune and the Worker in the single-node
    form; every other replica is a "worker". Replica types are matched case-insensitively.
    """
    rtype = canonical_replica_type(replica_type)
    if mode == JobMode.MXTRAIN:
        master = ReplicaType.WORKER if single_node else ReplicaType.SCHEDULER
    elif mode == JobMode.MXTUNE:
        master = ReplicaType.TUNER
    else:
        return ROLE_WORKER
    return ROLE_MASTER if rtype is master else ROLE_WORKER


def job_name_problem(name: object, spec: Mapping[str, Any] | object) -> str | None:
    """Why `name` cannot name an MXJob with this spec, or None when it can."""
    if not isinstance(name, str) or not name:
        return "is required"
    if _DNS1035_LABEL.fullmatch(name) is None:
        return (
            "must be a DNS-1035 label: lower-case letters, digits and '-', starting with a "
            f"letter and ending with a letter or digit (got {name!r})"
        )
    limit = max_job_name_length(spec)
    if len(name) > limit:
        return (
            f"must be at most {limit} characters so that every replica name "
            f"'<name>-<type>-<index>' stays a DNS-1035 label of at most "
            f"{DNS1035_LABEL_MAX_LENGTH} characters (got {len(name)} characters; the longest "
            f"replica name would be {name + longest_replica_suffix(spec)!r})"
        )
    return None


_LABEL_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_LABEL_NAME_MAX = 63
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_SUBDOMAIN_MAX = 253


def subdomain_problem(value: str) -> str | None:
    """Why ``value`` is not a DNS-1123 subdomain, or None."""
    if len(value) > _SUBDOMAIN_MAX:
        return f"must be at most {_SUBDOMAIN_MAX} characters (got {len(value)})"
    if not _SUBDOMAIN.fullmatch(value):
        return (
            "must be a DNS subdomain: lower-case letters, digits, '-' and '.', starting and "
            "ending with a letter or digit"
        )
    return None


def label_key_problem(value: str) -> str | None:
    """Why ``value`` is not a node-label key (a qualified name), or None."""
    prefix, slash, name = value.rpartition("/")
    if slash and not prefix:
        return "must not start with '/': a prefix is a DNS subdomain before the '/'"
    if prefix:
        problem = subdomain_problem(prefix)
        if problem is not None:
            return f"has a prefix ({prefix!r}) that {problem}"
    if not name:
        return "must have a name (after the '/' of a prefix)"
    if len(name) > _LABEL_NAME_MAX:
        return f"must have a name of at most {_LABEL_NAME_MAX} characters (got {len(name)})"
    if not _LABEL_NAME.fullmatch(name):
        return (
            f"must have a name ({name!r}) of letters, digits, '-', '_' and '.', starting and "
            "ending with a letter or digit"
        )
    return None
