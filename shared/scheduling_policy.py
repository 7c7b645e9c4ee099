"""What ``runPolicy.schedulingPolicy`` may say beyond its types (pure).

Two of its fields name Kubernetes objects, so they must be names the API server accepts, or the
gang's PodGroup would be refused (or never scheduled) long after the job was admitted:

- ``topologyKey`` (this operator's, for ``--gang-scheduler=native``): a node-label key, copied
  into the PodGroup's ``schedulingConstraints.topology[].key``, which kube-apiserver validates as
  a qualified name (``k8s-label-key``: an optional DNS-subdomain prefix and ``/``, then at most
  63 characters of ``[A-Za-z0-9._-]`` starting and ending alphanumeric);
- ``priorityClass`` (training-operator v1.8's): a PriorityClass, whose name is a DNS subdomain.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from shared.naming import label_key_problem, subdomain_problem
from shared.spec import as_mapping

TOPOLOGY_KEY: Final = "topologyKey"
PRIORITY_CLASS: Final = "priorityClass"


def scheduling_policy_problems(policy: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(field, message) for each field of a schedulingPolicy that names nothing Kubernetes can
    have; fields of the wrong type are the schema's to report (shared.schema)."""
    problems: list[tuple[str, str]] = []
    policy = as_mapping(policy)
    topology = policy.get(TOPOLOGY_KEY)
    if isinstance(topology, str) and topology:
        problem = label_key_problem(topology)
        if problem is not None:
            problems.append(
                (
                    TOPOLOGY_KEY,
                    f"{problem} (got {topology!r}); it must be a node-label key such as "
                    "'topology.kubernetes.io/rack' or 'kubernetes.io/hostname'",
                )
            )
    priority = policy.get(PRIORITY_CLASS)
    if isinstance(priority, str) and priority:
        problem = subdomain_problem(priority)
        if problem is not None:
            problems.append(
                (PRIORITY_CLASS, f"{problem} (got {priority!r}): it names a PriorityClass")
            )
    return problems
